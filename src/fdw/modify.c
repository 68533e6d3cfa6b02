/*-------------------------------------------------------------------------
 *
 * modify.c
 *	  INSERT, UPDATE, DELETE and COPY FROM on search_engine foreign tables.
 *
 * Rows become documents: the field columns form _source (dotted paths as
 * nested objects, NULL columns left out), over the _source column's value
 * when the table has one; _id names the document (generated, ES style,
 * when NULL or absent) and _routing routes it.  Writes are buffered until
 * commit (xact.c):
 *
 *   INSERT             create: an existing _id fails the commit with
 *                      unique_violation (op_type 'index': overwrite)
 *   ON CONFLICT DO NOTHING   create; an existing _id is skipped
 *   UPDATE             the document as the statement read it (its
 *                      _seq_no), with the updated columns replaced; the
 *                      commit checks nobody changed it since
 *   DELETE             by _id, checked the same way
 *
 * UPDATE and DELETE identify rows by the _id column (a row identity junk
 * column); the scan feeding them keeps each row's pre-image (full _source,
 * seq_no, primary term, routing) in a per-query registry, so the write can
 * be conditioned and undone.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/inherit.h"
#include "optimizer/pathnode.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "api/api.h"
#include "fdw/fdw.h"

#define SE_ROWID_NAME "se_id"

/* PlanForeignModify's fdw_private */
enum
{
	MP_OP,						/* CmdType */
	MP_UPDATED,					/* IntList of updated attnos (UPDATE) */
	MP_DO_NOTHING				/* ON CONFLICT DO NOTHING */
};

typedef struct SeModifyState
{
	SeFdwTable *tbl;
	CmdType		op;
	List	   *updated;
	bool		do_nothing;
	AttrNumber	id_junk;		/* in the subplan's output (UPDATE/DELETE) */
	SeMapping  *mapping;		/* NULL: the index does not exist yet */
	const SeMappedField **fields;	/* by attno - 1 */
	SeColConv  *convs;			/* RETURNING of DELETE */
	TupleTableSlot *rslot;		/* INSERT with a generated _id */
	MemoryContext tmp;
	int64		written;
} SeModifyState;

/* ---------------------------------------------------------------------
 * The pre-image registry (filled by foreign_scan.c)
 * ---------------------------------------------------------------------
 */

typedef struct RegEntry
{
	char		key[NAMEDATALEN + 520];
	SePreImage	pi;
} RegEntry;

typedef struct Registry
{
	EState	   *estate;
	Oid			relid;
	HTAB	   *h;
	MemoryContext cxt;
	MemoryContextCallback cb;
} Registry;

static List *registries = NIL;

static void
registry_gone(void *arg)
{
	registries = list_delete_ptr(registries, arg);
}

static Registry *
registry_for(EState *estate, Oid relid, bool create)
{
	ListCell   *lc;
	Registry   *r;
	HASHCTL		ctl;
	MemoryContext old;

	foreach(lc, registries)
	{
		r = lfirst(lc);
		if (r->estate == estate && r->relid == relid)
			return r;
	}
	if (!create)
		return NULL;
	r = MemoryContextAllocZero(estate->es_query_cxt, sizeof(Registry));
	r->estate = estate;
	r->relid = relid;
	r->cxt = estate->es_query_cxt;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(((RegEntry *) 0)->key);
	ctl.entrysize = sizeof(RegEntry);
	ctl.hcxt = r->cxt;
	r->h = hash_create("search_engine fdw pre-images", 256, &ctl,
					   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	r->cb.func = registry_gone;
	r->cb.arg = r;
	MemoryContextRegisterResetCallback(r->cxt, &r->cb);
	old = MemoryContextSwitchTo(TopMemoryContext);
	registries = lappend(registries, r);
	MemoryContextSwitchTo(old);
	return r;
}

/* Remember the version of a document a scan of an UPDATE/DELETE target read. */
void
se_fdw_preimage_put(EState *estate, Oid relid, SePreImage *pi)
{
	Registry   *r = registry_for(estate, relid, true);
	RegEntry   *e;
	bool		found;
	char		key[sizeof(((RegEntry *) 0)->key)];

	if (strlen(pi->id) >= sizeof(key))
		return;					/* ids are at most 512 bytes */
	memset(key, 0, sizeof(key));
	strlcpy(key, pi->id, sizeof(key));
	e = hash_search(r->h, key, HASH_ENTER, &found);
	e->pi.id = MemoryContextStrdup(r->cxt, pi->id);
	e->pi.routing = pi->routing ? MemoryContextStrdup(r->cxt, pi->routing) : NULL;
	e->pi.seq_no = pi->seq_no;
	e->pi.primary_term = pi->primary_term;
	if (found && e->pi.source)
		pfree(e->pi.source);
	e->pi.source = MemoryContextAlloc(r->cxt, pi->source_len + 1);
	memcpy(e->pi.source, pi->source, pi->source_len);
	e->pi.source[pi->source_len] = '\0';
	e->pi.source_len = pi->source_len;
}

SePreImage *
se_fdw_preimage_get(EState *estate, Oid relid, const char *id)
{
	Registry   *r = registry_for(estate, relid, false);
	RegEntry   *e;
	char		key[sizeof(((RegEntry *) 0)->key)];

	if (r == NULL || strlen(id) >= sizeof(key))
		return NULL;
	memset(key, 0, sizeof(key));
	strlcpy(key, id, sizeof(key));
	e = hash_search(r->h, key, HASH_FIND, NULL);
	return e ? &e->pi : NULL;
}

/* ---------------------------------------------------------------------
 * Building documents
 * ---------------------------------------------------------------------
 */

static SeJson *
parse_json(const char *s, int len, const char *what)
{
	SeError		err;
	SeJsonParseOptions po = {0};
	SeJson	   *j;

	se_error_init(&err);
	j = se_json_parse(s, len, &po, &err);
	if (j == NULL)
		se_raise(&err);
	if (j->type != SE_JSON_OBJECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a JSON object, not %s", what, se_json_type_name(j->type)),
				 errdetail("mapper_parsing_exception")));
	return j;
}

static void
remove_member(SeJson *obj, int i)
{
	memmove(&obj->u.o.members[i], &obj->u.o.members[i + 1],
			sizeof(SeJsonMember) * (obj->u.o.count - i - 1));
	obj->u.o.count--;
}

static void
add_member(SeJson *obj, const char *key, int keylen, SeJson *val)
{
	SeJsonMember *m = palloc(sizeof(SeJsonMember) * (obj->u.o.count + 1));

	if (obj->u.o.count > 0)
		memcpy(m, obj->u.o.members, sizeof(SeJsonMember) * obj->u.o.count);
	m[obj->u.o.count].key = pnstrdup(key, keylen);
	m[obj->u.o.count].keylen = keylen;
	m[obj->u.o.count].value = val;
	obj->u.o.members = m;
	obj->u.o.count++;
}

/*
 * Set (val != NULL) or remove path in object obj, with ES path semantics:
 * an existing dotted key or nested object is reused; a new path is added
 * as nested objects.
 */
static void
json_set_path(SeJson *obj, const char *path, int pathlen, SeJson *val)
{
	int			i;
	const char *dot;

	for (i = 0; i < obj->u.o.count; i++)
	{
		SeJsonMember *m = &obj->u.o.members[i];

		if (m->keylen == pathlen && memcmp(m->key, path, pathlen) == 0)
		{
			if (val)
				m->value = val;
			else
				remove_member(obj, i);
			return;
		}
	}
	for (i = 0; i < obj->u.o.count; i++)
	{
		SeJsonMember *m = &obj->u.o.members[i];

		if (m->keylen < pathlen && path[m->keylen] == '.' &&
			memcmp(m->key, path, m->keylen) == 0 && m->value->type == SE_JSON_OBJECT)
		{
			json_set_path(m->value, path + m->keylen + 1, pathlen - m->keylen - 1, val);
			return;
		}
	}
	if (val == NULL)
		return;
	dot = memchr(path, '.', pathlen);
	if (dot == NULL)
		add_member(obj, path, pathlen, val);
	else
	{
		SeJson	   *child = palloc0(sizeof(SeJson));

		child->type = SE_JSON_OBJECT;
		add_member(obj, path, dot - path, child);
		json_set_path(child, dot + 1, pathlen - (dot - path) - 1, val);
	}
}

static SeJson *
column_json(SeModifyState *ms, SeFdwColumn *col, Datum value)
{
	StringInfoData b;
	SeError		err;
	SeJsonParseOptions po = {0};
	SeJson	   *j;

	initStringInfo(&b);
	se_fdw_value_to_json(col, ms->fields[col->attnum - 1], value, &b);
	se_error_init(&err);
	j = se_json_parse(b.data, b.len, &po, &err);
	if (j == NULL)
		se_raise(&err);
	return j;
}

static char *
jsonb_text(Datum d, int *len)
{
	Jsonb	   *jb = DatumGetJsonbP(d);
	char	   *s = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

	*len = strlen(s);
	return s;
}

static char *
source_column_text(SeFdwColumn *col, Datum d, int *len)
{
	if (col->typid == JSONBOID)
		return jsonb_text(d, len);
	else
	{
		text	   *t = DatumGetTextPP(d);

		*len = VARSIZE_ANY_EXHDR(t);
		return pnstrdup(VARDATA_ANY(t), *len);
	}
}

/*
 * The _source of a row.  base: the document to start from (UPDATE), or
 * NULL; only: the attnos to take (NIL: every field column, NULLs left out).
 */
static char *
build_source(SeModifyState *ms, TupleTableSlot *slot, const char *base, int baselen,
			 List *only, int *len)
{
	SeFdwTable *t = ms->tbl;
	SeJson	   *doc = NULL;
	StringInfoData out;
	int			i;
	SeFdwColumn *srccol = se_fdw_column_by_kind(t, SE_COL_SOURCE);
	bool		source_set = srccol && (only == NIL || list_member_int(only, srccol->attnum));

	if (source_set && !slot->tts_isnull[srccol->attnum - 1])
	{
		int			l;
		char	   *s = source_column_text(srccol, slot->tts_values[srccol->attnum - 1], &l);

		doc = parse_json(s, l, "_source");
	}
	else if (base)
		doc = parse_json(base, baselen, "_source");
	else
	{
		doc = palloc0(sizeof(SeJson));
		doc->type = SE_JSON_OBJECT;
	}
	for (i = 0; i < t->natts; i++)
	{
		SeFdwColumn *c = &t->cols[i];

		if (c->kind != SE_COL_FIELD)
			continue;
		if (only != NIL && !list_member_int(only, c->attnum))
			continue;
		if (slot->tts_isnull[i])
		{
			if (only != NIL)
				json_set_path(doc, c->field, strlen(c->field), NULL);
			continue;
		}
		json_set_path(doc, c->field, strlen(c->field),
					  column_json(ms, c, slot->tts_values[i]));
	}
	initStringInfo(&out);
	se_json_write(&out, doc);
	*len = out.len;
	return out.data;
}

static char *
text_value(SeFdwColumn *col, Datum d)
{
	Oid			outfunc;
	bool		varlena;

	if (col->typid == TEXTOID || col->typid == VARCHAROID)
		return TextDatumGetCString(d);
	getTypeOutputInfo(col->typid, &outfunc, &varlena);
	return OidOutputFunctionCall(outfunc, d);
}

/* ---------------------------------------------------------------------
 * Planning
 * ---------------------------------------------------------------------
 */

static void
seAddForeignUpdateTargets(PlannerInfo *root, Index rtindex, RangeTblEntry *target_rte,
						  Relation target_relation)
{
	SeFdwTable *t = se_fdw_table_get(RelationGetRelid(target_relation));
	SeFdwColumn *idc = se_fdw_column_by_kind(t, SE_COL_ID);
	Var		   *var;

	if (idc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
				 errmsg("foreign table \"%s\" has no _id column", t->relname),
				 errdetail("UPDATE and DELETE identify documents by _id."),
				 errhint("Add a column named _id (or one with OPTIONS (field '_id')).")));
	var = makeVar(rtindex, idc->attnum, idc->typid, idc->typmod, idc->collation, 0);
	add_row_identity_var(root, var, rtindex, SE_ROWID_NAME);
}

static List *
sePlanForeignModify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
					int subplan_index)
{
	CmdType		op = plan->operation;
	List	   *updated = NIL;

	if (op == CMD_UPDATE)
	{
		RelOptInfo *rel = find_base_rel(root, resultRelation);
		Bitmapset  *cols = get_rel_all_updated_cols(root, rel);
		int			col = -1;

		while ((col = bms_next_member(cols, col)) >= 0)
		{
			AttrNumber	attno = col + FirstLowInvalidHeapAttributeNumber;

			if (attno > 0)
				updated = lappend_int(updated, attno);
		}
	}
	return list_make3(makeInteger(op), updated,
					  makeInteger(plan->onConflictAction == ONCONFLICT_NOTHING));
}

/* ---------------------------------------------------------------------
 * Execution
 * ---------------------------------------------------------------------
 */

static SeModifyState *
modify_state(Relation rel, CmdType op, List *updated, bool do_nothing)
{
	SeModifyState *ms = palloc0(sizeof(SeModifyState));
	SeEngineIndex ei;
	int			i;

	ms->tbl = se_fdw_table_get(RelationGetRelid(rel));
	ms->op = op;
	ms->updated = updated;
	ms->do_nothing = do_nothing;
	ms->fields = palloc0(sizeof(SeMappedField *) * Max(ms->tbl->natts, 1));
	se_require_started();
	/* through an alias: ES's write rules (its write index; refused without) */
	(void) se_engine_write_index(ms->tbl->target, NULL);
	if (se_engine_open(ms->tbl->index, &ei, true))
	{
		ms->mapping = ei.mapping;
		se_fdw_check_columns(ms->tbl, ms->mapping);
		for (i = 0; i < ms->tbl->natts; i++)
			if (ms->tbl->cols[i].kind == SE_COL_FIELD)
				ms->fields[i] = se_mapping_find(ms->mapping, ms->tbl->cols[i].field);
	}
	ms->tmp = AllocSetContextCreate(CurrentMemoryContext, "search_engine modify",
									ALLOCSET_DEFAULT_SIZES);
	/* updating metadata other than _source is not possible */
	if (op == CMD_UPDATE)
	{
		ListCell   *lc;

		foreach(lc, updated)
		{
			SeFdwColumn *c = &ms->tbl->cols[lfirst_int(lc) - 1];

			if (c->kind != SE_COL_FIELD && c->kind != SE_COL_SOURCE)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("column \"%s\" of foreign table \"%s\" cannot be updated",
								c->name, ms->tbl->relname),
						 errdetail("%s is document metadata.", se_fdw_meta_name(c->kind)),
						 c->kind == SE_COL_ID ?
						 errhint("Delete the document and insert it with the new _id.") : 0));
		}
	}
	return ms;
}

static void
seBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private,
					 int subplan_index, int eflags)
{
	SeModifyState *ms;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	ms = modify_state(rinfo->ri_RelationDesc, (CmdType) intVal(list_nth(fdw_private, MP_OP)),
					  list_nth(fdw_private, MP_UPDATED),
					  intVal(list_nth(fdw_private, MP_DO_NOTHING)));
	/* the writes go out at commit, already authorized (xact.c) */
	se_engine_authorize(ms->tbl->index, SE_ACL_WRITE, mtstate->ps.state, rinfo->ri_RangeTableIndex);
	if (ms->op == CMD_UPDATE || ms->op == CMD_DELETE)
	{
		Plan	   *subplan = outerPlanState(mtstate)->plan;

		ms->id_junk = ExecFindJunkAttributeInTlist(subplan->targetlist, SE_ROWID_NAME);
		if (!AttributeNumberIsValid(ms->id_junk))
			elog(ERROR, "could not find junk %s column", SE_ROWID_NAME);
	}
	rinfo->ri_FdwState = ms;
}

static TupleTableSlot *
insert_one(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot)
{
	SeModifyState *ms = rinfo->ri_FdwState;
	SeFdwTable *t = ms->tbl;
	SeFdwColumn *idc = se_fdw_column_by_kind(t, SE_COL_ID);
	SeFdwColumn *rc = se_fdw_column_by_kind(t, SE_COL_ROUTING);
	MemoryContext old = MemoryContextSwitchTo(ms->tmp);
	char	   *id = NULL;
	char	   *routing = NULL;
	char	   *src;
	int			len;
	bool		generated = false;
	SePendingOp op;

	slot_getallattrs(slot);
	if (idc && !slot->tts_isnull[idc->attnum - 1])
		id = text_value(idc, slot->tts_values[idc->attnum - 1]);
	if (id == NULL || id[0] == '\0')
	{
		id = se_auto_id();
		generated = true;
	}
	if (strlen(id) > 512)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("_id \"%.20s...\" is too long, must be no longer than 512 bytes but was: %d",
						id, (int) strlen(id)),
				 errdetail("action_request_validation_exception")));
	if (rc && !slot->tts_isnull[rc->attnum - 1])
		routing = text_value(rc, slot->tts_values[rc->attnum - 1]);
	/* an alias's index routing, refused when the row's differs (ES) */
	(void) se_engine_write_index(t->target, (const char **) &routing);
	src = build_source(ms, slot, NULL, 0, NIL, &len);
	op = ms->do_nothing ? SE_PENDING_CREATE_IF_ABSENT
		: (t->op_index ? SE_PENDING_INDEX : SE_PENDING_CREATE);
	se_xact_add(op, t->relname, t->index, id, routing, src, len, NULL,
				t->batch_size, t->refresh);
	MemoryContextSwitchTo(old);
	ms->written++;

	if (generated && idc)
	{
		/* RETURNING and triggers see the generated _id */
		Oid			infunc,
					ioparam;

		if (ms->rslot == NULL)
		{
			/* per-query memory: the callbacks run in per-tuple memory */
			MemoryContext q = MemoryContextSwitchTo(estate->es_query_cxt);

			ms->rslot = MakeSingleTupleTableSlot(slot->tts_tupleDescriptor, &TTSOpsVirtual);
			MemoryContextSwitchTo(q);
		}
		ExecCopySlot(ms->rslot, slot);
		slot_getallattrs(ms->rslot);
		getTypeInputInfo(idc->typid, &infunc, &ioparam);
		old = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
		ms->rslot->tts_values[idc->attnum - 1] = OidInputFunctionCall(infunc, id, ioparam, idc->typmod);
		MemoryContextSwitchTo(old);
		ms->rslot->tts_isnull[idc->attnum - 1] = false;
		MemoryContextReset(ms->tmp);
		return ms->rslot;
	}
	MemoryContextReset(ms->tmp);
	return slot;
}

static TupleTableSlot *
seExecForeignInsert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
					TupleTableSlot *planSlot)
{
	return insert_one(estate, rinfo, slot);
}

static TupleTableSlot **
seExecForeignBatchInsert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot **slots,
						 TupleTableSlot **planSlots, int *numSlots)
{
	int			i;

	for (i = 0; i < *numSlots; i++)
		(void) insert_one(estate, rinfo, slots[i]);
	return slots;
}

static int
seGetForeignModifyBatchSize(ResultRelInfo *rinfo)
{
	SeModifyState *ms = rinfo->ri_FdwState;

	if (ms == NULL || rinfo->ri_projectReturning != NULL ||
		(rinfo->ri_TrigDesc && (rinfo->ri_TrigDesc->trig_insert_before_row ||
								rinfo->ri_TrigDesc->trig_insert_after_row)) ||
		rinfo->ri_WithCheckOptions != NIL)
		return 1;
	return Max(1, Min(ms->tbl->batch_size, 1000));
}

/* The _id of the row being updated / deleted. */
static char *
row_id(SeModifyState *ms, TupleTableSlot *planSlot)
{
	bool		isnull;
	Datum		d = ExecGetJunkAttribute(planSlot, ms->id_junk, &isnull);

	if (isnull)
		elog(ERROR, "_id of the row to modify is NULL");
	return text_value(se_fdw_column_by_kind(ms->tbl, SE_COL_ID), d);
}

/*
 * The version of document id the statement works on: this transaction's
 * pending write of it, else what the scan read (or a realtime GET).
 * Returns false when the document is gone.
 */
static bool
current_version(EState *estate, SeModifyState *ms, const char *id, const char **src,
				int *srclen, SePreImage **pre)
{
	bool		deleted;
	SePreImage *pi;

	*pre = NULL;
	if (se_xact_pending_doc(ms->tbl->index, id, &deleted, src, srclen))
		return !deleted;
	pi = se_fdw_preimage_get(estate, ms->tbl->relid, id);
	if (pi == NULL)
	{
		SeEngineDoc doc;

		se_engine_get(ms->tbl->index, id, NULL, &doc);
		if (!doc.found)
			return false;
		pi = palloc0(sizeof(SePreImage));
		pi->id = pstrdup(id);
		pi->routing = doc.routing;
		pi->seq_no = doc.seq_no;
		pi->primary_term = doc.primary_term;
		pi->source = doc.source;
		pi->source_len = doc.source_len;
	}
	*pre = pi;
	*src = pi->source;
	*srclen = pi->source_len;
	return true;
}

static TupleTableSlot *
seExecForeignUpdate(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
					TupleTableSlot *planSlot)
{
	SeModifyState *ms = rinfo->ri_FdwState;
	MemoryContext old = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
	char	   *id = row_id(ms, planSlot);
	const char *base;
	int			baselen;
	SePreImage *pre;
	char	   *src;
	int			len;

	if (!current_version(estate, ms, id, &base, &baselen, &pre))
	{
		MemoryContextSwitchTo(old);
		return NULL;			/* deleted meanwhile: nothing to update */
	}
	slot_getallattrs(slot);
	src = build_source(ms, slot, base, baselen, ms->updated, &len);
	se_xact_add(SE_PENDING_UPDATE, ms->tbl->relname, ms->tbl->index, id,
				pre ? pre->routing : NULL, src, len, pre, ms->tbl->batch_size, ms->tbl->refresh);
	MemoryContextSwitchTo(old);
	ms->written++;
	return slot;
}

/* Fill slot with the columns of a document (RETURNING of DELETE). */
static void
fill_from_doc(SeModifyState *ms, TupleTableSlot *slot, const char *id, const char *src,
			  int srclen, const SePreImage *pre)
{
	SeFdwTable *t = ms->tbl;
	SeJson	   *doc = parse_json(src, srclen, "_source");
	int			i;

	if (ms->convs == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(ms));

		ms->convs = palloc0(sizeof(SeColConv) * Max(t->natts, 1));
		for (i = 0; i < t->natts; i++)
			if (t->cols[i].kind != SE_COL_DROPPED)
				se_fdw_conv_init(&ms->convs[i], &t->cols[i], ms->fields[i]);
		MemoryContextSwitchTo(old);
	}
	ExecClearTuple(slot);
	se_fdw_conv_pos.relname = t->relname;
	se_fdw_conv_pos.doc_id = id;
	for (i = 0; i < t->natts; i++)
	{
		SeFdwColumn *c = &t->cols[i];
		SeColConv  *cv = &ms->convs[i];

		slot->tts_isnull[i] = true;
		switch (c->kind)
		{
			case SE_COL_FIELD:
				{
					SeFieldValues fv;

					se_fdw_lookup_path(doc, c->field, &fv);
					slot->tts_values[i] = se_fdw_value_from_json(cv, &fv, &slot->tts_isnull[i]);
					break;
				}
			case SE_COL_ID:
				slot->tts_values[i] = InputFunctionCall(&cv->inproc, (char *) id, cv->ioparam, c->typmod);
				slot->tts_isnull[i] = false;
				break;
			case SE_COL_SOURCE:
				slot->tts_values[i] = InputFunctionCall(&cv->inproc, pnstrdup(src, srclen),
														cv->ioparam, c->typmod);
				slot->tts_isnull[i] = false;
				break;
			case SE_COL_ROUTING:
				if (pre && pre->routing)
				{
					slot->tts_values[i] = InputFunctionCall(&cv->inproc, pre->routing, cv->ioparam, c->typmod);
					slot->tts_isnull[i] = false;
				}
				break;
			case SE_COL_INDEX:
				slot->tts_values[i] = InputFunctionCall(&cv->inproc, t->index, cv->ioparam, c->typmod);
				slot->tts_isnull[i] = false;
				break;
			default:
				break;
		}
	}
	ExecStoreVirtualTuple(slot);
}

static TupleTableSlot *
seExecForeignDelete(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
					TupleTableSlot *planSlot)
{
	SeModifyState *ms = rinfo->ri_FdwState;
	MemoryContext old = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
	char	   *id = row_id(ms, planSlot);
	const char *base;
	int			baselen;
	SePreImage *pre;

	if (!current_version(estate, ms, id, &base, &baselen, &pre))
	{
		MemoryContextSwitchTo(old);
		return NULL;			/* already gone */
	}
	se_xact_add(SE_PENDING_DELETE, ms->tbl->relname, ms->tbl->index, id,
				pre ? pre->routing : NULL, NULL, 0, pre, ms->tbl->batch_size, ms->tbl->refresh);
	ms->written++;
	if (rinfo->ri_projectReturning)
		fill_from_doc(ms, slot, id, base, baselen, pre);
	MemoryContextSwitchTo(old);
	return slot;
}

static void
seEndForeignModify(EState *estate, ResultRelInfo *rinfo)
{
	SeModifyState *ms = rinfo->ri_FdwState;

	if (ms && ms->rslot)
		ExecDropSingleTupleTableSlot(ms->rslot);
}

static void
seBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	bool		do_nothing = false;

	if (mtstate && mtstate->ps.plan &&
		((ModifyTable *) mtstate->ps.plan)->onConflictAction == ONCONFLICT_NOTHING)
		do_nothing = true;
	rinfo->ri_FdwState = modify_state(rinfo->ri_RelationDesc, CMD_INSERT, NIL, do_nothing);
	se_engine_authorize(((SeModifyState *) rinfo->ri_FdwState)->tbl->index, SE_ACL_WRITE,
						mtstate ? mtstate->ps.state : NULL, rinfo->ri_RangeTableIndex);
}

static void
seEndForeignInsert(EState *estate, ResultRelInfo *rinfo)
{
	seEndForeignModify(estate, rinfo);
}

static int
seIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT) | (1 << CMD_UPDATE) | (1 << CMD_DELETE);
}

static void
seExplainForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private,
					   int subplan_index, ExplainState *es)
{
	SeFdwTable *t;
	CmdType		op = (CmdType) intVal(list_nth(fdw_private, MP_OP));

	if (!es->verbose)
		return;
	t = se_fdw_table_get(RelationGetRelid(rinfo->ri_RelationDesc));
	ExplainPropertyText("Index", t->index, es);
	ExplainPropertyText("Engine Writes",
						psprintf("%s, buffered until commit, bulk rounds of %d%s",
								 op == CMD_INSERT ?
								 (intVal(list_nth(fdw_private, MP_DO_NOTHING)) ? "create (skip existing _id)" :
								  t->op_index ? "index (overwrite)" : "create") :
								 op == CMD_UPDATE ? "index if_seq_no (read version)" :
								 "delete if_seq_no (read version)",
								 t->batch_size, t->refresh ? ", then refresh" : ""),
						es);
}

/* Install the write callbacks. */
void
se_fdw_modify_routines(FdwRoutine *r)
{
	r->AddForeignUpdateTargets = seAddForeignUpdateTargets;
	r->PlanForeignModify = sePlanForeignModify;
	r->BeginForeignModify = seBeginForeignModify;
	r->ExecForeignInsert = seExecForeignInsert;
	r->ExecForeignBatchInsert = seExecForeignBatchInsert;
	r->GetForeignModifyBatchSize = seGetForeignModifyBatchSize;
	r->ExecForeignUpdate = seExecForeignUpdate;
	r->ExecForeignDelete = seExecForeignDelete;
	r->EndForeignModify = seEndForeignModify;
	r->BeginForeignInsert = seBeginForeignInsert;
	r->EndForeignInsert = seEndForeignInsert;
	r->IsForeignRelUpdatable = seIsForeignRelUpdatable;
	r->ExplainForeignModify = seExplainForeignModify;
}
