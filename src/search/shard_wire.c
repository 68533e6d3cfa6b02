/*-------------------------------------------------------------------------
 *
 * shard_wire.c
 *	  The query phase of one shard as a message: what a shard answers the
 *	  coordinator, whether it runs in a search worker or, later, on another
 *	  node over the transport.
 *
 * A message is either the shard's top docs (hit count and relation,
 * whether it timed out, max score, and per doc: score, segment, doc and
 * its sort values) or the error its query phase raised.  Integers are
 * varints (signed ones zigzag-coded), floats their IEEE bits, so the bytes
 * do not depend on the sender's struct layout; a decoder checks bounds
 * everywhere and treats a malformed message as no answer, never as a
 * result.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "search/aggs.h"
#include "search/search_int.h"
#include "util/varint.h"

#define WIRE_VERSION	2
/* version 2 followed by the shard's aggregations (requests with "aggs") */
#define WIRE_VERSION_AGGS	3
#define WIRE_TOP_DOCS	1
#define WIRE_ERROR		2

void
se_search_wire_put_error(StringInfo out, const SeError *e)
{
	se_put_vint(out, (uint64) Max(e->status, 0));
	se_put_str(out, e->type, e->type ? strlen(e->type) : 0);
	se_put_str(out, e->reason, e->reason ? strlen(e->reason) : 0);
}

void
se_search_wire_get_error(SeWireReader *r, SeError *e)
{
	int			status = (int) se_wire_vint(r);
	char	   *type = se_wire_str(r, NULL);
	char	   *reason = se_wire_str(r, NULL);

	if (!r->bad)
		se_error_set(e, status, type ? type : "exception", "%s", reason ? reason : "");
}

void
se_search_query_phase(SeSearchRequest *req, SeSearchShard *shard, int shard_idx,
					  StringInfo out)
{
	SeShardTopDocs top;
	SeError		err;
	int			nkeys = req->nsort > 0 && req->from + req->size > 0 ? req->nsort : 0;
	int			i,
				k;

	/* a collapsed shard's docs carry their group value last (collapse.c) */
	if (req->collapse != NULL && req->from + req->size > 0)
		nkeys++;
	se_error_init(&err);
	se_put_vint(out, req->aggs != NULL ? WIRE_VERSION_AGGS : WIRE_VERSION);
	if (!se_search_check_window(req, &err) ||
		!se_search_query_shard(req, shard, shard_idx, req->from + req->size,
							   false, &top, &err))
	{
		se_put_vint(out, WIRE_ERROR);
		se_search_wire_put_error(out, &err);
		return;
	}
	se_put_vint(out, WIRE_TOP_DOCS);
	se_put_vint(out, (uint64) shard_idx);
	se_put_vint(out, top.failed ? 1 : 0);
	if (top.failed)
	{
		se_search_wire_put_error(out, &top.error);
		return;
	}
	se_put_svint(out, top.total);
	se_put_vint(out, (top.total_is_lower_bound ? 1 : 0) | (top.timed_out ? 2 : 0) |
				(top.terminated_early ? 4 : 0));
	se_put_float(out, top.max_score);
	se_put_vint(out, (uint64) nkeys);
	se_put_vint(out, (uint64) top.ndocs);
	for (i = 0; i < top.ndocs; i++)
	{
		const SeTopDoc *d = &top.docs[i];

		se_put_float(out, d->score);
		se_put_vint(out, (uint64) d->seg);
		se_put_vint(out, (uint64) d->doc);
		se_put_vint(out, d->rescored);
		for (k = 0; k < nkeys; k++)
		{
			const SeSortValue *v = &d->keys[k];
			bool		has_bytes = !v->missing && v->bytes != NULL;

			se_put_vint(out, v->missing ? 1 : 0);
			se_put_svint(out, v->num);
			se_put_float(out, v->score);
			se_put_str(out, has_bytes ? v->bytes : NULL, has_bytes ? v->len : 0);
		}
	}
	if (req->aggs != NULL)
	{
		StringInfoData aggs;

		initStringInfo(&aggs);
		if (top.aggs != NULL)
			se_aggs_encode(top.aggs, &aggs);
		se_put_str(out, aggs.data, aggs.len);
	}
}

void
se_search_wire_shard_failed(StringInfo out, int shard_idx, const SeError *e)
{
	se_put_vint(out, WIRE_VERSION);
	se_put_vint(out, WIRE_TOP_DOCS);
	se_put_vint(out, (uint64) shard_idx);
	se_put_vint(out, 1);
	se_search_wire_put_error(out, e);
}

/*
 * Decode a query phase message for shard shard_idx of a search over
 * nshards shards (nsegments[i] segments each) expecting nkeys sort values
 * per doc.  SE_WIRE_OK fills out; SE_WIRE_ERROR sets err to the shard's
 * error; SE_WIRE_MALFORMED means the message is no answer.
 */
SeWireResult
se_search_decode_query_phase(const char *data, size_t len, int shard_idx,
							 int nsegments, int nkeys, SeShardTopDocs *out,
							 SeError *err)
{
	SeWireReader r;
	uint64		kind;
	uint64		version;
	int			i,
				k;

	memset(out, 0, sizeof(*out));
	out->shard_idx = shard_idx;
	out->max_score = NAN;
	se_error_init(&out->error);
	se_wire_init(&r, data, len);
	version = se_wire_vint(&r);
	if (version != WIRE_VERSION && version != WIRE_VERSION_AGGS)
		return SE_WIRE_MALFORMED;
	kind = se_wire_vint(&r);
	if (kind == WIRE_ERROR)
	{
		SeError		e;

		se_error_init(&e);
		se_search_wire_get_error(&r, &e);
		if (r.bad || r.p != r.end)
			return SE_WIRE_MALFORMED;
		se_error_set(err, e.status, e.type, "%s", e.reason);
		return SE_WIRE_ERROR;
	}
	if (kind != WIRE_TOP_DOCS || se_wire_vint(&r) != (uint64) shard_idx)
		return SE_WIRE_MALFORMED;
	if (se_wire_vint(&r) != 0)
	{
		out->failed = true;
		se_search_wire_get_error(&r, &out->error);
		return r.bad || r.p != r.end ? SE_WIRE_MALFORMED : SE_WIRE_OK;
	}
	out->total = se_wire_svint(&r);
	{
		uint64		flags = se_wire_vint(&r);

		out->total_is_lower_bound = (flags & 1) != 0;
		out->timed_out = (flags & 2) != 0;
		out->terminated_early = (flags & 4) != 0;
	}
	out->max_score = se_wire_float(&r);
	if (se_wire_vint(&r) != (uint64) nkeys)
		return SE_WIRE_MALFORMED;
	{
		uint64		ndocs = se_wire_vint(&r);

		/* each doc takes at least 6 bytes: no allocation beyond the message */
		if (r.bad || ndocs > len / 6)
			return SE_WIRE_MALFORMED;
		out->ndocs = (int) ndocs;
	}
	out->docs = palloc0(sizeof(SeTopDoc) * Max(1, out->ndocs));
	for (i = 0; i < out->ndocs && !r.bad; i++)
	{
		SeTopDoc   *d = &out->docs[i];

		d->shard_idx = shard_idx;
		d->score = se_wire_float(&r);
		d->seg = (int32) se_wire_vint(&r);
		d->doc = (int32) se_wire_vint(&r);
		d->rescored = (uint32) se_wire_vint(&r);
		if (d->seg < 0 || d->seg >= nsegments || d->doc < 0)
			return SE_WIRE_MALFORMED;
		if (nkeys > 0)
			d->keys = palloc0(sizeof(SeSortValue) * nkeys);
		for (k = 0; k < nkeys; k++)
		{
			SeSortValue *v = &d->keys[k];

			v->missing = se_wire_vint(&r) != 0;
			v->num = se_wire_svint(&r);
			v->score = se_wire_float(&r);
			v->bytes = se_wire_str(&r, &v->len);
			v->cap = v->bytes ? v->len + 1 : 0;
		}
	}
	if (version == WIRE_VERSION_AGGS)
		out->aggs_msg = se_wire_str(&r, &out->aggs_len);
	if (r.bad || r.p != r.end)
		return SE_WIRE_MALFORMED;
	return SE_WIRE_OK;
}
