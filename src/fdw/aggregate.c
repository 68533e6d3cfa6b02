/*-------------------------------------------------------------------------
 *
 * aggregate.c
 *	  Aggregates computed in the engine for a pushed-down GROUP BY /
 *	  aggregate query.
 *
 * The search module has no aggregations yet, so this runs them from the
 * FDW, still without fetching rows: count(*) alone is the count API; with
 * anything else the matching documents are scanned and their doc values
 * (columnar, no _source decompression or JSON parsing) feed per-group
 * accumulators.  Results follow PostgreSQL's own aggregate definitions
 * exactly: sum(int2/int4) is bigint, sum(int8) and avg of integers are
 * numeric (numeric_div of the exact sum by the count, as int8_avg and
 * numeric_poly_avg do), sum(real) adds in float4, sum/avg of floats add in
 * document order -- the order PostgreSQL itself would see them in from
 * this scan.  A scalar column holding several values in a document is an
 * error, as it is when rows are fetched.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/numeric.h"

#include "api/api.h"
#include "fdw/fdw.h"
#include "fdw/fdw_int.h"
#include "transport/transport.h"
#include "util/varint.h"

#define UNIX_EPOCH_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

typedef struct AggSpec
{
	SeAggKind	kind;
	SeFdwColumn *col;			/* NULL for count(*) */
	const SeMappedField *field;
	const char *dv_field;		/* field holding the doc values */
	bool		keyword;		/* sorted-set doc values */
	int			fieldno;		/* in the current segment, -1 = absent */
} AggSpec;

typedef struct Acc
{
	int64		count;			/* rows (count(*)) or non-null values */
	bool		has;
	int64		iv;				/* min/max of numeric doc values */
	char	   *sv;				/* min/max of keyword values */
	int			svlen;
#ifdef HAVE_INT128
	int128		isum;
#else
	int64		isum;
#endif
	double		dsum;
	float		fsum;
} Acc;

typedef struct AggGroup
{
	char	   *key;
	int			keylen;
	uint32		hash;
	Acc		   *accs;
} AggGroup;

typedef struct DvAggState
{
	SeScanState *ss;
	int			nspecs;
	AggSpec    *specs;
	bool		grouped;
	AggGroup	  **table;			/* open addressing */
	int			cap;
	int			ngroups;
	AggGroup	  **groups;			/* in order of creation */
	int			groups_cap;
	SeSearchShard *cur_shard;
	int			cur_segment;
	StringInfoData key;
	MemoryContext cxt;
} DvAggState;

static void
multi_valued(AggSpec *s, SeDocRef *d, int n)
{
	int			len;
	const char *id = se_segment_doc_id(d->shard->segments[d->segment], d->doc, &len);

	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("column \"%s\" cannot hold the %d values of field \"%s\" in document \"%s\"",
					s->col->name, n, s->col->field, pnstrdup(id, len)),
			 errhint("Declare the column as an array (%s[]) or as jsonb.",
					 format_type_be(s->col->typid))));
}

/* The doc value of spec s for d: 0 none, 1 found (numeric *iv or bytes). */
static int
doc_value(AggSpec *s, SeDocRef *d, int64 *iv, const char **sv, int *svlen)
{
	SeSegmentReader *r = d->shard->segments[d->segment];
	int			n;

	if (s->fieldno < 0)
		return 0;
	if (s->keyword)
	{
		n = se_segment_sorted_count(r, s->fieldno, d->doc);
		if (n > 1)
			multi_valued(s, d, n);
		if (n == 1)
			*sv = se_segment_sorted_value(r, s->fieldno, d->doc, 0, svlen);
		return n;
	}
	else
	{
		const int64 *vals;

		n = se_segment_numeric_values(r, s->fieldno, d->doc, &vals);
		if (n > 1)
			multi_valued(s, d, n);
		if (n == 1)
			*iv = vals[0];
		return n;
	}
}

/* A numeric doc value as the column's number (double). */
static double
as_double(AggSpec *s, int64 v)
{
	if (s->field->type == SE_FT_DOUBLE || s->field->type == SE_FT_FLOAT)
		return se_sortable_to_double(v);
	return (double) v;
}

/* Integer columns: a value outside the column's range is an error. */
static void
check_int_range(AggSpec *s, int64 v)
{
	Oid			t = s->col->typid;

	if ((t == INT2OID && (v < PG_INT16_MIN || v > PG_INT16_MAX)) ||
		(t == INT4OID && (v < PG_INT32_MIN || v > PG_INT32_MAX)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value " INT64_FORMAT " of field \"%s\" is out of range for column \"%s\" of type %s",
						v, s->col->field, s->col->name, format_type_be(t))));
}

static AggGroup *
find_group(DvAggState *as, const char *key, int keylen)
{
	uint32		h = hash_bytes((const unsigned char *) key, keylen);
	int			i;
	AggGroup	   *g;

	if (as->ngroups * 2 >= as->cap)
	{
		int			ncap = as->cap ? as->cap * 2 : 64;
		AggGroup	  **nt = MemoryContextAllocZero(as->cxt, sizeof(AggGroup *) * ncap);

		for (i = 0; i < as->ngroups; i++)
		{
			int			j = as->groups[i]->hash & (ncap - 1);

			while (nt[j])
				j = (j + 1) & (ncap - 1);
			nt[j] = as->groups[i];
		}
		as->table = nt;
		as->cap = ncap;
	}
	i = h & (as->cap - 1);
	while ((g = as->table[i]) != NULL)
	{
		if (g->hash == h && g->keylen == keylen && memcmp(g->key, key, keylen) == 0)
			return g;
		i = (i + 1) & (as->cap - 1);
	}
	g = MemoryContextAllocZero(as->cxt, sizeof(AggGroup));
	g->key = MemoryContextAlloc(as->cxt, Max(keylen, 1));
	memcpy(g->key, key, keylen);
	g->keylen = keylen;
	g->hash = h;
	g->accs = MemoryContextAllocZero(as->cxt, sizeof(Acc) * Max(as->nspecs, 1));
	as->table[i] = g;
	if (as->ngroups == as->groups_cap)
	{
		as->groups_cap = as->groups_cap ? as->groups_cap * 2 : 64;
		as->groups = as->groups
			? repalloc(as->groups, sizeof(AggGroup *) * as->groups_cap)
			: MemoryContextAlloc(as->cxt, sizeof(AggGroup *) * as->groups_cap);
	}
	as->groups[as->ngroups++] = g;
	return g;
}

static void
segment_changed(DvAggState *as, SeDocRef *d)
{
	int			i;

	as->cur_shard = d->shard;
	as->cur_segment = d->segment;
	for (i = 0; i < as->nspecs; i++)
		if (as->specs[i].dv_field)
			as->specs[i].fieldno = se_segment_field(d->shard->segments[d->segment],
													as->specs[i].dv_field);
}

static void
update_minmax(Acc *a, AggSpec *s, int64 iv, const char *sv, int svlen)
{
	bool		better;

	if (!a->has)
		better = true;
	else if (s->keyword)
	{
		int			c = memcmp(sv, a->sv, Min(svlen, a->svlen));

		if (c == 0)
			c = (svlen > a->svlen) - (svlen < a->svlen);
		better = (s->kind == SE_AGG_MIN) ? c < 0 : c > 0;
	}
	else
		better = (s->kind == SE_AGG_MIN) ? iv < a->iv : iv > a->iv;
	if (!better)
		return;
	a->has = true;
	if (s->keyword)
	{
		a->sv = (char *) sv;	/* points into the mapped segment */
		a->svlen = svlen;
	}
	else
		a->iv = iv;
}

static bool
agg_doc(SeDocRef *d, void *arg)
{
	DvAggState   *as = arg;
	AggGroup	   *g;
	int			i;

	CHECK_FOR_INTERRUPTS();
	if (d->shard != as->cur_shard || d->segment != as->cur_segment)
		segment_changed(as, d);

	/* the group key: per key column a null flag, then the value */
	resetStringInfo(&as->key);
	for (i = 0; i < as->nspecs; i++)
	{
		AggSpec    *s = &as->specs[i];
		int64		iv = 0;
		const char *sv = NULL;
		int			svlen = 0;

		if (s->kind != SE_AGG_GROUP_KEY)
			continue;
		if (doc_value(s, d, &iv, &sv, &svlen) == 0)
			appendStringInfoChar(&as->key, 0);
		else if (s->keyword)
		{
			appendStringInfoChar(&as->key, 1);
			appendBinaryStringInfo(&as->key, (char *) &svlen, sizeof(int));
			appendBinaryStringInfo(&as->key, sv, svlen);
		}
		else
		{
			if (s->col->typid == INT2OID || s->col->typid == INT4OID)
				check_int_range(s, iv);
			appendStringInfoChar(&as->key, 1);
			appendBinaryStringInfo(&as->key, (char *) &iv, sizeof(int64));
		}
	}
	g = find_group(as, as->key.data, as->key.len);

	for (i = 0; i < as->nspecs; i++)
	{
		AggSpec    *s = &as->specs[i];
		Acc		   *a = &g->accs[i];
		int64		iv = 0;
		const char *sv = NULL;
		int			svlen = 0;

		switch (s->kind)
		{
			case SE_AGG_GROUP_KEY:
				break;
			case SE_AGG_COUNT_STAR:
				a->count++;
				break;
			case SE_AGG_COUNT:
			case SE_AGG_MIN:
			case SE_AGG_MAX:
			case SE_AGG_SUM:
			case SE_AGG_AVG:
				if (doc_value(s, d, &iv, &sv, &svlen) == 0)
					break;
				a->count++;
				if (!s->keyword && (s->col->typid == INT2OID || s->col->typid == INT4OID ||
									s->col->typid == INT8OID) && s->field->type != SE_FT_DATE)
					check_int_range(s, iv);
				if (s->kind == SE_AGG_MIN || s->kind == SE_AGG_MAX)
					update_minmax(a, s, iv, sv, svlen);
				else if (s->kind == SE_AGG_SUM || s->kind == SE_AGG_AVG)
				{
					Oid			t = s->col->typid;

					if (t == FLOAT4OID)
					{
						float		f = (float) as_double(s, iv);

						a->fsum = a->fsum + f;
						a->dsum = a->dsum + (double) f;
					}
					else if (t == FLOAT8OID)
						a->dsum = a->dsum + as_double(s, iv);
					else
					{
						a->isum += iv;
						if (t != INT8OID && (a->isum > PG_INT64_MAX || a->isum < PG_INT64_MIN))
							ereport(ERROR,
									(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
									 errmsg("bigint out of range")));
					}
				}
				break;
		}
	}
	return true;
}

static Datum
numeric_from_int128(int128 v)
{
	char		buf[64];
	char	   *p = buf + sizeof(buf) - 1;
	bool		neg = v < 0;
	unsigned __int128 u = neg ? -(unsigned __int128) v : (unsigned __int128) v;

	*p = '\0';
	do
	{
		*--p = '0' + (int) (u % 10);
		u /= 10;
	} while (u > 0);
	if (neg)
		*--p = '-';
	return DirectFunctionCall3(numeric_in, CStringGetDatum(p), ObjectIdGetDatum(InvalidOid),
							   Int32GetDatum(-1));
}

/* A doc value (numeric sortable or keyword bytes) as a Datum of the column. */
static Datum
dv_datum(AggSpec *s, int64 iv, const char *sv, int svlen)
{
	Oid			t = s->col->typid;

	if (s->keyword)
		return PointerGetDatum(cstring_to_text_with_len(sv, svlen));
	switch (t)
	{
		case INT2OID:
			check_int_range(s, iv);
			return Int16GetDatum((int16) iv);
		case INT4OID:
			check_int_range(s, iv);
			return Int32GetDatum((int32) iv);
		case INT8OID:
			return Int64GetDatum(iv);
		case FLOAT4OID:
			return Float4GetDatum((float) as_double(s, iv));
		case FLOAT8OID:
			return Float8GetDatum(as_double(s, iv));
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			return TimestampTzGetDatum(iv * 1000 - UNIX_EPOCH_USECS);
		case BOOLOID:
			return BoolGetDatum(iv != 0);
	}
	elog(ERROR, "unexpected column type %u for an aggregated field", t);
	return (Datum) 0;
}

static void
emit_group(DvAggState *as, AggGroup *g, TupleDesc desc, Datum *values, bool *nulls)
{
	int			i;
	int			kpos = 0;

	for (i = 0; i < as->nspecs; i++)
	{
		AggSpec    *s = &as->specs[i];
		Acc		   *a = &g->accs[i];
		Oid			t = s->col ? s->col->typid : InvalidOid;

		nulls[i] = false;
		switch (s->kind)
		{
			case SE_AGG_GROUP_KEY:
				if (g->key[kpos++] == 0)
					nulls[i] = true;
				else if (s->keyword)
				{
					int			len;

					memcpy(&len, g->key + kpos, sizeof(int));
					kpos += sizeof(int);
					values[i] = dv_datum(s, 0, g->key + kpos, len);
					kpos += len;
				}
				else
				{
					int64		v;

					memcpy(&v, g->key + kpos, sizeof(int64));
					kpos += sizeof(int64);
					values[i] = dv_datum(s, v, NULL, 0);
				}
				break;
			case SE_AGG_COUNT_STAR:
			case SE_AGG_COUNT:
				values[i] = Int64GetDatum(a->count);
				break;
			case SE_AGG_MIN:
			case SE_AGG_MAX:
				if (!a->has)
					nulls[i] = true;
				else
					values[i] = dv_datum(s, a->iv, a->sv, a->svlen);
				break;
			case SE_AGG_SUM:
				if (a->count == 0)
					nulls[i] = true;
				else if (t == FLOAT4OID)
					values[i] = Float4GetDatum(a->fsum);
				else if (t == FLOAT8OID)
					values[i] = Float8GetDatum(a->dsum);
				else if (t == INT8OID)
					values[i] = numeric_from_int128(a->isum);
				else
					values[i] = Int64GetDatum((int64) a->isum);
				break;
			case SE_AGG_AVG:
				if (a->count == 0)
					nulls[i] = true;
				else if (t == FLOAT4OID || t == FLOAT8OID)
					values[i] = Float8GetDatum(a->dsum / (double) a->count);
				else
					values[i] = DirectFunctionCall2(numeric_div, numeric_from_int128(a->isum),
													NumericGetDatum(int64_to_numeric(a->count)));
				break;
		}
	}
	tuplestore_putvalues(as->ss->store, desc, values, nulls);
}

/* Spec s of a column (NULL for count(*)) of the index's mapping m. */
static void
init_spec(AggSpec *s, SeAggKind kind, SeFdwColumn *col, const SeMapping *m,
		  const char *relname, const char *index)
{
	SeColSearch cs;

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->fieldno = -1;
	if (col == NULL)
		return;
	s->col = col;
	se_fdw_col_search(col, m, col->collation, &cs);
	s->field = cs.field;
	if (s->field == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("field \"%s\" of foreign table \"%s\" is no longer mapped in index \"%s\"",
						col->field, relname, index),
				 errhint("Run the statement again.")));
	s->keyword = (s->field->type == SE_FT_KEYWORD);
	/* count(col) reads exists-equivalent doc values of the field */
	s->dv_field = s->field->path;
}

static void
agg_state_init(DvAggState *as, int nspecs)
{
	memset(as, 0, sizeof(*as));
	as->cxt = CurrentMemoryContext;
	as->nspecs = nspecs;
	as->specs = palloc0(sizeof(AggSpec) * Max(1, nspecs));
	as->cur_segment = -1;
	initStringInfo(&as->key);
}

/* ---------------------------------------------------------------------
 * Shards on other nodes: each node aggregates its shards (the transport
 * action "fdw_aggregate"), the coordinator merges the groups' partial
 * accumulators -- counts and sums add, min / max compare.  Sums of floats
 * then add each node's partial sum: the order differs from a scan's.
 * ---------------------------------------------------------------------
 */

static void
put_acc(StringInfo out, const Acc *a)
{
	uint64		bits;

	se_put_svint(out, a->count);
	se_put_vint(out, a->has ? 1 : 0);
	se_put_svint(out, a->iv);
	se_put_str(out, a->sv, a->svlen);
	se_put_svint(out, (int64) (a->isum >> 64));
	se_put_vint(out, (uint64) a->isum);
	memcpy(&bits, &a->dsum, sizeof(bits));
	se_put_vint(out, bits);
	se_put_float(out, a->fsum);
}

static void
get_acc(SeWireReader *r, Acc *a)
{
	uint64		bits;
	int64		hi;

	memset(a, 0, sizeof(*a));
	a->count = se_wire_svint(r);
	a->has = se_wire_vint(r) != 0;
	a->iv = se_wire_svint(r);
	a->sv = se_wire_str(r, &a->svlen);
	hi = se_wire_svint(r);
	a->isum = ((int128) hi << 64) | (int128) se_wire_vint(r);
	bits = se_wire_vint(r);
	memcpy(&a->dsum, &bits, sizeof(bits));
	a->fsum = se_wire_float(r);
}

static void
merge_acc(AggSpec *s, Acc *into, const Acc *from)
{
	switch (s->kind)
	{
		case SE_AGG_GROUP_KEY:
			break;
		case SE_AGG_MIN:
		case SE_AGG_MAX:
			into->count += from->count;
			if (from->has)
				update_minmax(into, s, from->iv, from->sv, from->svlen);
			break;
		default:
			into->count += from->count;
			into->isum += from->isum;
			into->dsum = into->dsum + from->dsum;
			into->fsum = into->fsum + from->fsum;
			if (s->col && s->col->typid != INT8OID &&
				(into->isum > PG_INT64_MAX || into->isum < PG_INT64_MIN))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			break;
	}
}

/*
 * Transport action "fdw_aggregate": the groups of this node's shards.
 * Payload: index name, table name, the request body, per spec its kind and
 * (0 for count(*)) column name, field, type and collation; then the shards.
 * Answer: per group its key and each spec's accumulator.
 */
bool
se_fdw_aggregate_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	char	   *index,
			   *relname,
			   *body;
	uint64		nspecs;
	DvAggState	as;
	SeSearchShard *shards;
	int			nshards;
	SeIndexMeta *im;
	int			i,
				g;

	se_wire_init(&r, payload, len);
	index = se_wire_str(&r, NULL);
	relname = se_wire_str(&r, NULL);
	body = se_wire_str(&r, NULL);
	nspecs = se_wire_vint(&r);
	if (r.bad || index == NULL || relname == NULL || body == NULL || nspecs > 10000)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed fdw_aggregate request");
		return false;
	}
	im = se_index_for_read(index, err);
	if (im == NULL)
		return false;
	agg_state_init(&as, (int) nspecs);
	for (i = 0; i < (int) nspecs; i++)
	{
		SeAggKind	kind = (SeAggKind) se_wire_vint(&r);
		SeFdwColumn *col = NULL;

		if (se_wire_vint(&r) != 0)
		{
			col = palloc0(sizeof(SeFdwColumn));
			col->kind = SE_COL_FIELD;
			col->name = se_wire_str(&r, NULL);
			col->field = se_wire_str(&r, NULL);
			col->typid = (Oid) se_wire_vint(&r);
			col->collation = (Oid) se_wire_vint(&r);
			col->typmod = -1;
			if (col->name == NULL || col->field == NULL)
				r.bad = true;
		}
		if (r.bad || kind < SE_AGG_COUNT_STAR || kind > SE_AGG_GROUP_KEY)
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed fdw_aggregate request");
			return false;
		}
		init_spec(&as.specs[i], kind, col, im->mapping, relname, index);
		if (kind == SE_AGG_GROUP_KEY)
			as.grouped = true;
	}
	if ((shards = se_engine_peer_shards(&r, &nshards, err)) == NULL)
		return false;
	for (i = 0; i < nshards; i++)
		shards[i].mapping = im->mapping;
	(void) se_engine_scan_local(se_engine_parse(body, strlen(body), false), shards, nshards,
								agg_doc, &as);
	se_put_vint(reply, (uint64) as.ngroups);
	for (g = 0; g < as.ngroups; g++)
	{
		se_put_str(reply, as.groups[g]->key, as.groups[g]->keylen);
		for (i = 0; i < as.nspecs; i++)
			put_acc(reply, &as.groups[g]->accs[i]);
	}
	return true;
}

/* Ask the nodes holding shards elsewhere for their groups; merge them. */
static void
aggregate_remote(DvAggState *as, SeScanState *ss, const char *body,
				 SeSearchShard *shards, int nshards)
{
	StringInfoData prefix;
	SeTransportCall *calls;
	int			ncalls;
	int			i,
				k;

	if (!se_engine_any_remote(shards, nshards))
		return;
	initStringInfo(&prefix);
	se_put_str(&prefix, ss->tbl->index, strlen(ss->tbl->index));
	se_put_str(&prefix, ss->tbl->relname, strlen(ss->tbl->relname));
	se_put_str(&prefix, body, strlen(body));
	se_put_vint(&prefix, (uint64) as->nspecs);
	for (i = 0; i < as->nspecs; i++)
	{
		AggSpec    *s = &as->specs[i];

		se_put_vint(&prefix, (uint64) s->kind);
		se_put_vint(&prefix, s->col ? 1 : 0);
		if (s->col)
		{
			se_put_str(&prefix, s->col->name, strlen(s->col->name));
			se_put_str(&prefix, s->col->field, strlen(s->col->field));
			se_put_vint(&prefix, (uint64) s->col->typid);
			se_put_vint(&prefix, (uint64) s->col->collation);
		}
	}
	calls = se_engine_call_shard_nodes(shards, nshards, "fdw_aggregate", prefix.data,
									   prefix.len, &ncalls);
	for (k = 0; k < ncalls; k++)
	{
		SeWireReader r;
		uint64		ngroups,
					g;

		se_wire_init(&r, calls[k].reply.data, calls[k].reply.len);
		ngroups = se_wire_vint(&r);
		for (g = 0; g < ngroups && !r.bad; g++)
		{
			int			keylen;
			char	   *key = se_wire_str(&r, &keylen);
			AggGroup   *grp;

			CHECK_FOR_INTERRUPTS();
			grp = find_group(as, key ? key : "", keylen);
			for (i = 0; i < as->nspecs; i++)
			{
				Acc			a;

				get_acc(&r, &a);
				merge_acc(&as->specs[i], &grp->accs[i], &a);
			}
		}
		if (r.bad)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("[%s][fdw_aggregate] malformed answer", calls[k].node)));
	}
}

/* Run the aggregation of a pushed-down GROUP BY / aggregate query. */
void
se_fdw_aggregate(ForeignScanState *node, SeScanState *ss, SeSearchRequest *req,
				 const char *body, SeEngineIndex *ei, SeSearchShard *shards, int nshards)
{
	TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	DvAggState	as;
	ListCell   *lc;
	int			i = 0;
	bool		counts_only = true;
	Datum	   *values;
	bool	   *nulls;

	agg_state_init(&as, list_length(ss->plan.aggs));
	as.ss = ss;
	foreach(lc, ss->plan.aggs)
	{
		List	   *l = lfirst(lc);
		SeAggKind	kind = linitial_int(l);
		int			attno = lsecond_int(l);

		init_spec(&as.specs[i++], kind, attno > 0 ? &ss->tbl->cols[attno - 1] : NULL,
				  ei->mapping, ss->tbl->relname, ss->tbl->index);
		if (kind != SE_AGG_COUNT_STAR)
			counts_only = false;
		if (kind == SE_AGG_GROUP_KEY)
			as.grouped = true;
	}
	values = palloc0(sizeof(Datum) * Max(1, desc->natts));
	nulls = palloc0(sizeof(bool) * Max(1, desc->natts));

	if (counts_only)
	{
		int64		c = se_engine_count(body, shards, nshards);

		for (i = 0; i < as.nspecs; i++)
		{
			values[i] = Int64GetDatum(c);
			nulls[i] = false;
		}
		ss->total_hits = c;
		tuplestore_putvalues(ss->store, desc, values, nulls);
		return;
	}

	/* this node's shards here, then the other nodes' there */
	(void) se_engine_scan_local(req, shards, nshards, agg_doc, &as);
	aggregate_remote(&as, ss, body, shards, nshards);
	if (!as.grouped && as.ngroups == 0)
		(void) find_group(&as, "", 0);	/* no rows: one row of empty aggregates */
	for (i = 0; i < as.ngroups; i++)
		emit_group(&as, as.groups[i], desc, values, nulls);
	ss->total_hits = as.ngroups;
}
