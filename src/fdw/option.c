/*-------------------------------------------------------------------------
 *
 * option.c
 *	  Options of the search_engine foreign data wrapper and the column ->
 *	  field map of a foreign table.
 *
 * Server and table options: batch_size, refresh, op_type,
 * use_remote_estimate, fdw_startup_cost, fdw_tuple_cost (a table's value
 * wins over its server's).  Table only: index (required).  Column: field,
 * a dotted field path or one of the metadata names (_id, _score, _source,
 * _routing, _seq_no, _primary_term, _version, _index); without it the
 * column name is the field path (or the metadata name).  The server is the
 * local node: it takes no connection options, and user mappings none.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "fdw/fdw.h"

typedef struct SeFdwOption
{
	const char *name;
	Oid			context;		/* catalog the option belongs to */
} SeFdwOption;

static const SeFdwOption valid_options[] = {
	{"index", ForeignTableRelationId},
	{"batch_size", ForeignServerRelationId},
	{"batch_size", ForeignTableRelationId},
	{"refresh", ForeignServerRelationId},
	{"refresh", ForeignTableRelationId},
	{"op_type", ForeignServerRelationId},
	{"op_type", ForeignTableRelationId},
	{"use_remote_estimate", ForeignServerRelationId},
	{"use_remote_estimate", ForeignTableRelationId},
	{"fdw_startup_cost", ForeignServerRelationId},
	{"fdw_startup_cost", ForeignTableRelationId},
	{"fdw_tuple_cost", ForeignServerRelationId},
	{"fdw_tuple_cost", ForeignTableRelationId},
	{"field", AttributeRelationId},
	{NULL, InvalidOid}
};

static const struct
{
	const char *name;
	SeColKind	kind;
}			meta_names[] = {
	{"_id", SE_COL_ID},
	{"_score", SE_COL_SCORE},
	{"_source", SE_COL_SOURCE},
	{"_routing", SE_COL_ROUTING},
	{"_seq_no", SE_COL_SEQ_NO},
	{"_primary_term", SE_COL_PRIMARY_TERM},
	{"_version", SE_COL_VERSION},
	{"_index", SE_COL_INDEX},
};

/* Metadata kind of a name, or SE_COL_FIELD. */
SeColKind
se_fdw_meta_kind(const char *name)
{
	int			i;

	for (i = 0; i < lengthof(meta_names); i++)
		if (strcmp(meta_names[i].name, name) == 0)
			return meta_names[i].kind;
	return SE_COL_FIELD;
}

const char *
se_fdw_meta_name(SeColKind kind)
{
	int			i;

	for (i = 0; i < lengthof(meta_names); i++)
		if (meta_names[i].kind == kind)
			return meta_names[i].name;
	return "field";
}

static const char *
context_name(Oid context)
{
	switch (context)
	{
		case ForeignDataWrapperRelationId:
			return "foreign data wrapper";
		case ForeignServerRelationId:
			return "server";
		case UserMappingRelationId:
			return "user mapping";
		case ForeignTableRelationId:
			return "foreign table";
		case AttributeRelationId:
			return "column";
	}
	return "object";
}

static void
check_bool(DefElem *def)
{
	(void) defGetBoolean(def);	/* errors on anything else */
}

static void
check_cost(DefElem *def)
{
	char	   *v = defGetString(def);
	char	   *end;
	double		d = strtod(v, &end);

	if (*v == '\0' || *end != '\0' || d < 0 || isnan(d) || isinf(d))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"", def->defname, v),
				 errhint("%s must be a non-negative number.", def->defname)));
}

/* A field path: non-empty, no empty components. */
static void
check_field(DefElem *def)
{
	char	   *v = defGetString(def);
	size_t		len = strlen(v);

	if (len == 0 || v[0] == '.' || v[len - 1] == '.' || strstr(v, "..") != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid field path \"%s\"", v),
				 errhint("A field is a dotted path such as \"user.name\", or one of _id, _score, _source, _routing, _seq_no, _primary_term, _version, _index.")));
	if (v[0] == '_' && se_fdw_meta_kind(v) == SE_COL_FIELD && strchr(v, '.') == NULL &&
		(strcmp(v, "_ignored") == 0 || strcmp(v, "_field_names") == 0 || strcmp(v, "_doc") == 0))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("metadata field \"%s\" cannot be mapped to a column", v),
				 errhint("Supported metadata columns are _id, _score, _source, _routing, _seq_no, _primary_term, _version and _index.")));
}

PG_FUNCTION_INFO_V1(se_fdw_validator);

/*
 * Validate the options of CREATE/ALTER FOREIGN DATA WRAPPER, SERVER, USER
 * MAPPING, FOREIGN TABLE and column options.
 */
Datum
se_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	ListCell   *lc;
	bool		have_index = false;

	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		const SeFdwOption *opt;
		bool		known = false;

		for (opt = valid_options; opt->name; opt++)
			if (opt->context == catalog && strcmp(opt->name, def->defname) == 0)
				known = true;
		if (!known)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			for (opt = valid_options; opt->name; opt++)
				if (opt->context == catalog)
					appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "", opt->name);
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\"", def->defname),
					 buf.len > 0
					 ? errhint("Valid options in this context are: %s.", buf.data)
					 : errhint("A search_engine %s takes no options.", context_name(catalog))));
		}

		if (strcmp(def->defname, "index") == 0)
		{
			SeError		err;
			char	   *v = defGetString(def);

			se_error_init(&err);
			if (!se_index_name_valid(v, &err))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"index\": %s", err.reason),
						 errdetail("%s", err.type),
						 errhint("The index option names one concrete index (no wildcards, no comma lists).")));
			have_index = true;
		}
		else if (strcmp(def->defname, "batch_size") == 0)
		{
			char	   *v = defGetString(def);
			int			n;

			if (!parse_int(v, &n, 0, NULL) || n < 1 || n > 100000)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"batch_size\": \"%s\"", v),
						 errhint("batch_size is an integer between 1 and 100000.")));
		}
		else if (strcmp(def->defname, "refresh") == 0 ||
				 strcmp(def->defname, "use_remote_estimate") == 0)
			check_bool(def);
		else if (strcmp(def->defname, "op_type") == 0)
		{
			char	   *v = defGetString(def);

			if (strcmp(v, "create") != 0 && strcmp(v, "index") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"op_type\": \"%s\"", v),
						 errhint("op_type is \"create\" (INSERT of an existing _id fails) or \"index\" (INSERT overwrites).")));
		}
		else if (strcmp(def->defname, "fdw_startup_cost") == 0 ||
				 strcmp(def->defname, "fdw_tuple_cost") == 0)
			check_cost(def);
		else if (strcmp(def->defname, "field") == 0)
			check_field(def);
	}

	/*
	 * CREATE FOREIGN TABLE must name the index; ALTER passes the merged
	 * list, so the same check holds there.
	 */
	if (catalog == ForeignTableRelationId && !have_index)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("option \"index\" is required for a search_engine foreign table"),
				 errhint("Add OPTIONS (index 'name'), naming the index the table reads and writes.")));

	PG_RETURN_VOID();
}

/* Is serverid a server of our wrapper? */
bool
se_fdw_is_our_server(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	HeapTuple	tp;
	bool		ours = false;

	tp = SearchSysCache1(PROCOID, ObjectIdGetDatum(fdw->fdwhandler));
	if (HeapTupleIsValid(tp))
	{
		bool		isnull;
		Datum		d = SysCacheGetAttr(PROCOID, tp, Anum_pg_proc_prosrc, &isnull);

		ours = !isnull && strcmp(TextDatumGetCString(d), "se_fdw_handler") == 0;
		ReleaseSysCache(tp);
	}
	return ours;
}

static void
apply_option(SeFdwTable *t, DefElem *def)
{
	if (strcmp(def->defname, "index") == 0)
		t->index = pstrdup(defGetString(def));
	else if (strcmp(def->defname, "batch_size") == 0)
		(void) parse_int(defGetString(def), &t->batch_size, 0, NULL);
	else if (strcmp(def->defname, "refresh") == 0)
		t->refresh = defGetBoolean(def);
	else if (strcmp(def->defname, "op_type") == 0)
		t->op_index = strcmp(defGetString(def), "index") == 0;
	else if (strcmp(def->defname, "use_remote_estimate") == 0)
		t->use_remote_estimate = defGetBoolean(def);
	else if (strcmp(def->defname, "fdw_startup_cost") == 0)
		t->fdw_startup_cost = strtod(defGetString(def), NULL);
	else if (strcmp(def->defname, "fdw_tuple_cost") == 0)
		t->fdw_tuple_cost = strtod(defGetString(def), NULL);
}

/*
 * Options and column map of a foreign table, read from the catalogs (in
 * CurrentMemoryContext).
 */
SeFdwTable *
se_fdw_table_get(Oid relid)
{
	SeFdwTable *t = palloc0(sizeof(SeFdwTable));
	ForeignTable *ft = GetForeignTable(relid);
	ForeignServer *server = GetForeignServer(ft->serverid);
	Relation	rel;
	TupleDesc	desc;
	ListCell   *lc;
	int			i;

	t->relid = relid;
	t->relname = get_rel_name(relid);
	t->serverid = ft->serverid;
	t->batch_size = SE_FDW_DEFAULT_BATCH_SIZE;
	t->refresh = true;
	t->fdw_startup_cost = SE_FDW_DEFAULT_STARTUP_COST;
	t->fdw_tuple_cost = SE_FDW_DEFAULT_TUPLE_COST;
	foreach(lc, server->options)
		apply_option(t, lfirst(lc));
	foreach(lc, ft->options)
		apply_option(t, lfirst(lc));
	if (t->index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("foreign table \"%s\" has no index option", t->relname)));
	/* an alias: its index (an alias of one index, read each time), its filter */
	t->target = t->index;
	t->filter = se_engine_alias_filter(t->index);
	t->index = (char *) se_engine_concrete_index(t->index);

	rel = table_open(relid, NoLock);
	desc = RelationGetDescr(rel);
	t->natts = desc->natts;
	t->cols = palloc0(sizeof(SeFdwColumn) * Max(1, desc->natts));
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		SeFdwColumn *c = &t->cols[i];
		char	   *field = NULL;
		ListCell   *lc2;

		c->attnum = i + 1;
		if (att->attisdropped)
		{
			c->kind = SE_COL_DROPPED;
			c->name = "";
			continue;
		}
		c->name = pstrdup(NameStr(att->attname));
		c->typid = att->atttypid;
		c->typmod = att->atttypmod;
		c->collation = att->attcollation;
		c->elemtype = get_element_type(att->atttypid);
		c->is_array = OidIsValid(c->elemtype) && att->atttypid != INT2VECTOROID &&
			att->atttypid != OIDVECTOROID;
		foreach(lc2, GetForeignColumnOptions(relid, i + 1))
		{
			DefElem    *def = lfirst(lc2);

			if (strcmp(def->defname, "field") == 0)
				field = defGetString(def);
		}
		if (field == NULL)
			field = c->name;
		c->kind = se_fdw_meta_kind(field);
		if (c->kind == SE_COL_FIELD)
			c->field = pstrdup(field);
	}
	table_close(rel, NoLock);
	return t;
}

/* First column of a metadata kind, or NULL. */
SeFdwColumn *
se_fdw_column_by_kind(SeFdwTable *t, SeColKind kind)
{
	int			i;

	for (i = 0; i < t->natts; i++)
		if (t->cols[i].kind == kind)
			return &t->cols[i];
	return NULL;
}
