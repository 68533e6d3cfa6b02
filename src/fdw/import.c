/*-------------------------------------------------------------------------
 *
 * import.c
 *	  IMPORT FOREIGN SCHEMA "<index or pattern>" FROM SERVER s INTO schema.
 *
 * The "remote schema" is an ES index expression: a name, a comma list or
 * a wildcard pattern ("logs-*").  Each matching index becomes one foreign
 * table named after it, with
 *
 *     _id text, <one column per mapped field>, _score real, _source jsonb
 *
 * Fields get the type IMPORT chooses for them (text for text/keyword,
 * bigint/integer/smallint, double precision/real, boolean, timestamptz for
 * date, jsonb for objects with "enabled": false); multi-fields
 * (name.keyword) are left out as they are not in _source.  A mapping does
 * not say whether a field holds arrays, so the first sample_size documents
 * (default 1000) are looked at, and a field seen with several values
 * becomes an array column; array_fields 'a,b' forces it.  Column names are
 * the field paths (OPTIONS (field ...) when the name had to be shortened).
 * LIMIT TO / EXCEPT filter by index name.  Options: sample_size, source
 * (false: no _source column), array_fields.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "nodes/parsenodes.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "api/api.h"
#include "fdw/fdw.h"

typedef struct ImportOpts
{
	int			sample_size;
	bool		source;
	List	   *array_fields;	/* String nodes */
} ImportOpts;

static void
parse_options(List *options, ImportOpts *o)
{
	ListCell   *lc;

	o->sample_size = 1000;
	o->source = true;
	o->array_fields = NIL;
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "sample_size") == 0)
		{
			if (!parse_int(defGetString(def), &o->sample_size, 0, NULL) || o->sample_size < 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"sample_size\": \"%s\"", defGetString(def)),
						 errhint("sample_size is the number of documents examined for array fields (0: none).")));
		}
		else if (strcmp(def->defname, "source") == 0)
			o->source = defGetBoolean(def);
		else if (strcmp(def->defname, "array_fields") == 0)
		{
			char	   *s = pstrdup(defGetString(def));
			char	   *tok;

			for (tok = strtok(s, ","); tok; tok = strtok(NULL, ","))
			{
				while (*tok == ' ')
					tok++;
				o->array_fields = lappend(o->array_fields, makeString(pstrdup(tok)));
			}
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\"", def->defname),
					 errhint("Valid options of IMPORT FOREIGN SCHEMA are: sample_size, source, array_fields.")));
	}
}

/* Leaf fields that are columns: not objects (unless disabled), not multi-fields. */
static bool
importable(const SeMappedField *f)
{
	if (f->is_multi_field)
		return false;
	if (f->type == SE_FT_OBJECT)
		return !f->enabled;
	return true;
}

/* Is f inside a disabled object (its values are in that object's column)? */
static bool
under_disabled(const SeMapping *m, const SeMappedField *f)
{
	int			i;

	for (i = 0; i < m->nfields; i++)
	{
		const SeMappedField *o = m->fields[i];
		int			len = strlen(o->path);

		if (o != f && o->type == SE_FT_OBJECT && !o->enabled &&
			strncmp(f->path, o->path, len) == 0 && f->path[len] == '.')
			return true;
	}
	return false;
}

typedef struct ArraySample
{
	const SeMapping *m;
	bool	   *is_array;
	int			left;
	StringInfoData buf;
	MemoryContext cxt;
} ArraySample;

static bool
sample_doc(SeDocRef *d, void *arg)
{
	ArraySample *as = arg;
	SeError		err;
	SeJsonParseOptions po = {0};
	SeJson	   *dom;
	int			i;
	MemoryContext old;

	if (as->left-- <= 0)
		return false;
	MemoryContextReset(as->cxt);
	old = MemoryContextSwitchTo(as->cxt);
	initStringInfo(&as->buf);
	se_engine_source(d, &as->buf);
	se_error_init(&err);
	dom = se_json_parse(as->buf.data, as->buf.len, &po, &err);
	if (dom != NULL)
		for (i = 0; i < as->m->nfields; i++)
		{
			SeFieldValues fv;

			if (as->is_array[i] || !importable(as->m->fields[i]) ||
				as->m->fields[i]->type == SE_FT_OBJECT)
				continue;
			se_fdw_lookup_path(dom, as->m->fields[i]->path, &fv);
			if (fv.n > 1 || (fv.single && fv.single->type == SE_JSON_ARRAY))
				as->is_array[i] = true;
		}
	MemoryContextSwitchTo(old);
	return true;
}

static bool
wanted(ImportForeignSchemaStmt *stmt, const char *name)
{
	ListCell   *lc;
	bool		listed = false;

	if (stmt->list_type == FDW_IMPORT_SCHEMA_ALL)
		return true;
	foreach(lc, stmt->table_list)
		if (strcmp(((RangeVar *) lfirst(lc))->relname, name) == 0)
			listed = true;
	return stmt->list_type == FDW_IMPORT_SCHEMA_LIMIT_TO ? listed : !listed;
}

/* The CREATE FOREIGN TABLE statements of IMPORT FOREIGN SCHEMA. */
List *
se_fdw_import(ImportForeignSchemaStmt *stmt, Oid serverOid)
{
	ForeignServer *server = GetForeignServer(serverOid);
	List	   *indices;
	List	   *res = NIL;
	ListCell   *lc;
	SeError		err;
	ImportOpts	o;

	parse_options(stmt->options, &o);
	se_require_started();
	se_error_init(&err);
	/* only indices the importing role may read */
	indices = se_acl_resolve(stmt->remote_schema, SE_ACL_READ, true, &err);
	if (se_error_is_set(&err) && err.status == 403)
		se_raise(&err);
	if (se_error_is_set(&err))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_SCHEMA_NOT_FOUND),
				 errmsg("no index matches \"%s\": %s", stmt->remote_schema, err.reason),
				 errdetail("%s", err.type),
				 errhint("The remote schema of IMPORT FOREIGN SCHEMA is an index name or pattern, such as \"products\" or \"logs-*\".")));

	/* copy what we need before any other call can reload the state */
	{
		List	   *copies = NIL;

		foreach(lc, indices)
		{
			SeIndexMeta *im = lfirst(lc);
			SeIndexMeta *c = palloc0(sizeof(SeIndexMeta));

			c->name = pstrdup(im->name);
			c->closed = im->closed;
			c->mapping = se_mapping_copy(im->mapping);
			copies = lappend(copies, c);
		}
		indices = copies;
	}
	foreach(lc, indices)
	{
		SeIndexMeta *im = lfirst(lc);
		char	   *name = im->name;
		bool		closed = im->closed;
		SeMapping  *m = im->mapping;
		bool	   *is_array;
		StringInfoData sql;
		StringInfoData skipped;
		List	   *used;
		int			i;

		if (!wanted(stmt, name))
			continue;
		is_array = palloc0(sizeof(bool) * Max(1, m->nfields));
		if (!closed && o.sample_size > 0)
		{
			SeEngineIndex ei;
			ArraySample as;
			int			n;

			if (se_engine_open(name, &ei, true))
			{
				SeSearchShard *shards = se_engine_shards(&ei, &n);

				as.m = m;
				as.is_array = is_array;
				as.left = o.sample_size;
				as.cxt = AllocSetContextCreate(CurrentMemoryContext, "import sample",
											   ALLOCSET_DEFAULT_SIZES);
				se_engine_scan(se_engine_parse("{}", 2, false), "{}", shards, n, true, sample_doc, &as);
				MemoryContextDelete(as.cxt);
			}
		}
		for (i = 0; i < m->nfields; i++)
		{
			ListCell   *lc2;

			foreach(lc2, o.array_fields)
				if (strcmp(strVal(lfirst(lc2)), m->fields[i]->path) == 0)
					is_array[i] = true;
		}

		initStringInfo(&sql);
		appendStringInfo(&sql, "CREATE FOREIGN TABLE %s (\n  _id text",
						 quote_identifier(name));
		initStringInfo(&skipped);
		used = list_make3("_id", "_score", "_source");
		for (i = 0; i < m->nfields; i++)
		{
			const SeMappedField *f = m->fields[i];
			char	   *colname;
			ListCell   *lc3;
			bool		taken = false;

			if (!importable(f) || under_disabled(m, f))
				continue;
			/* a column name is at most NAMEDATALEN - 1 bytes, cut on a character */
			colname = pnstrdup(f->path, pg_mbcliplen(f->path, strlen(f->path), NAMEDATALEN - 1));
			foreach(lc3, used)
				if (strcmp(lfirst(lc3), colname) == 0)
					taken = true;
			if (taken)
			{
				/* two fields that share their first 63 bytes: keep the first */
				appendStringInfo(&skipped, "%s%s", skipped.len ? ", " : "", f->path);
				continue;
			}
			used = lappend(used, colname);
			appendStringInfo(&sql, ",\n  %s %s%s", quote_identifier(colname),
							 se_fdw_suggested_type(f),
							 is_array[i] && f->type != SE_FT_OBJECT ? "[]" : "");
			if (strcmp(colname, f->path) != 0)
				appendStringInfo(&sql, " OPTIONS (field %s)", quote_literal_cstr(f->path));
		}
		appendStringInfoString(&sql, ",\n  _score real");
		if (o.source)
			appendStringInfoString(&sql, ",\n  _source jsonb");
		appendStringInfo(&sql, "\n) SERVER %s OPTIONS (index %s)",
						 quote_identifier(server->servername), quote_literal_cstr(name));
		if (skipped.len > 0)
			ereport(WARNING,
					(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
					 errmsg("foreign table \"%s\" has no column for fields %s", name, skipped.data),
					 errdetail("Their column names would be the same as another column's after truncation to %d bytes.",
							   NAMEDATALEN - 1),
					 errhint("Add such columns by hand with OPTIONS (field '...').")));
		res = lappend(res, sql.data);
	}
	return res;
}
