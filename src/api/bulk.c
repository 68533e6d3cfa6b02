/*-------------------------------------------------------------------------
 *
 * bulk.c
 *	  The bulk coordinator: parse NDJSON, route every item to its shard,
 *	  queue one sub-request per shard to the owning write worker through
 *	  the bounded queue, wait, retry 429s when asked, answer as ES does.
 *
 * The calling backend is the coordinating node.  One DSM segment carries
 * all sub-requests of one round (see shard/bulk_protocol.h).  A
 * sub-request that does not fit the queue or the indexing-pressure bound
 * is rejected whole: its items get 429 es_rejected_execution_exception
 * while the other shards' sub-requests proceed.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "libpq/pqformat.h"
#include "nodes/value.h"
#include "node/node.h"
#include "replication/relocation.h"
#include "replication/replication.h"
#include "security/acl.h"
#include "shard/bulk_protocol.h"
#include "transport/transport.h"
#include "util/hash.h"

/* SeWriteItem (api.h) is one bulk item: request, routing and outcome. */
typedef SeWriteItem BulkItem;

/* ES's IndexRouting refuses an index or create item with an empty _id */
#define SE_EMPTY_ID_REASON "if _id is specified it must not be empty"

static const char *
op_name(SeItemOp op)
{
	switch (op)
	{
		case SE_ITEM_INDEX:
			return "index";
		case SE_ITEM_CREATE:
			return "create";
		case SE_ITEM_UPDATE:
			return "update";
		case SE_ITEM_DELETE:
			return "delete";
	}
	return "index";
}

static void
item_fail(BulkItem *it, int status, const char *type, const char *reason)
{
	it->done = true;
	it->resp.status = status;
	it->err_type = pstrdup(type);
	it->err_reason = pstrdup(reason);
}

/* ES-style auto id: 20 chars of base64url, time-prefixed for locality. */
char *
se_auto_id(void)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	static uint32 seq = 0;
	uint8		b[15];
	int64		ms = se_now_millis();
	char	   *out = palloc(21);
	int			i;

	if (seq == 0 && !pg_strong_random(&seq, sizeof(seq)))
		seq = (uint32) MyProcPid;
	seq++;
	/* 6 bytes time, 3 bytes sequence, 6 bytes random */
	for (i = 0; i < 6; i++)
		b[i] = (uint8) (ms >> (40 - 8 * i));
	b[6] = (uint8) (seq >> 16);
	b[7] = (uint8) (seq >> 8);
	b[8] = (uint8) seq;
	if (!pg_strong_random(b + 9, 6))
		memset(b + 9, 0, 6);
	for (i = 0; i < 20; i++)
	{
		int			bit = i * 6;
		int			v = ((b[bit / 8] << 8) | (bit / 8 + 1 < 15 ? b[bit / 8 + 1] : 0)) >> (10 - bit % 8);

		out[i] = alphabet[v & 63];
	}
	out[20] = '\0';
	return out;
}

static char *
json_scalar_string(const SeJson *v)
{
	if (v->type == SE_JSON_STRING)
		return pstrdup(v->u.s.str);
	if (v->type == SE_JSON_NUMBER)
		return pnstrdup(v->u.n.text, v->u.n.len);
	return NULL;
}

/* The op of an action line's key; false if none. */
static bool
action_op(const char *key, int len, SeItemOp *op)
{
	if (len == 5 && memcmp(key, "index", 5) == 0)
		*op = SE_ITEM_INDEX;
	else if (len == 6 && memcmp(key, "create", 6) == 0)
		*op = SE_ITEM_CREATE;
	else if (len == 6 && memcmp(key, "update", 6) == 0)
		*op = SE_ITEM_UPDATE;
	else if (len == 6 && memcmp(key, "delete", 6) == 0)
		*op = SE_ITEM_DELETE;
	else
		return false;
	return true;
}

/*
 * ES's checks of a compare-and-write pair as the request gave it, with
 * ES's values for "not given": if_seq_no SE_UNASSIGNED_SEQ_NO, primary
 * term 0.  Any other negative value would make the write unconditional.
 * On success a seq_no not given becomes -1, as SeWriteItem has it.
 */
bool
se_cas_check(int64 *if_seq_no, int64 if_primary_term, SeError *err)
{
	bool		seq_given = *if_seq_no != SE_UNASSIGNED_SEQ_NO;

	if (*if_seq_no < 0 && seq_given)
		se_error_set(err, 400, "illegal_argument_exception",
					 "sequence numbers must be non negative. got [" INT64_FORMAT "].", *if_seq_no);
	else if (if_primary_term < 0)
		se_error_set(err, 400, "illegal_argument_exception",
					 "primary term must be non negative. got [" INT64_FORMAT "]", if_primary_term);
	else if (seq_given && if_primary_term == 0)
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: ifSeqNo is set, but primary term is [0];");
	else if (!seq_given && if_primary_term != 0)
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: ifSeqNo is unassigned, but primary term is [" INT64_FORMAT "];",
					 if_primary_term);
	else
	{
		if (!seq_given)
			*if_seq_no = -1;
		return true;
	}
	return false;
}

/* Parse the action/metadata line; false sets a request-level 400 in err. */
static bool
parse_action(const char *line, size_t len, int lineno, BulkItem *it, SeError *err)
{
	SeJsonParseOptions opts = {.reject_duplicate_keys = true};
	SeActionLine a;
	SeJson	   *j;
	const SeJsonMember *m;
	int			i;

	/* the common shape, read in place (it means what the full parse would) */
	if (se_json_scan_action_line(line, len, &a) && action_op(a.op, a.op_len, &it->op))
	{
		it->if_seq_no = SE_UNASSIGNED_SEQ_NO;
		it->if_primary_term = 0;
		if (a.index)
			it->index = pnstrdup(a.index, a.index_len);
		if (a.id)
			it->id = pnstrdup(a.id, a.id_len);
		if (a.routing)
			it->routing = pnstrdup(a.routing, a.routing_len);
		return true;
	}
	j = se_json_parse(line, len, &opts, err);
	if (j == NULL)
		return false;
	if (j->type != SE_JSON_OBJECT || j->u.o.count != 1)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Malformed action/metadata line [%d], expected START_OBJECT or END_OBJECT but found [%s]",
					 lineno, j->type == SE_JSON_OBJECT ? "END_OBJECT" : "VALUE_STRING");
		return false;
	}
	m = &j->u.o.members[0];
	if (!action_op(m->key, m->keylen, &it->op))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Malformed action/metadata line [%d], expected one of [create, delete, index, update] but found [%s]",
					 lineno, m->key);
		return false;
	}
	if (m->value->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Malformed action/metadata line [%d], expected START_OBJECT but found [%s]",
					 lineno, se_json_type_name(m->value->type));
		return false;
	}
	it->if_seq_no = SE_UNASSIGNED_SEQ_NO;
	it->if_primary_term = 0;
	for (i = 0; i < m->value->u.o.count; i++)
	{
		const char *k = m->value->u.o.members[i].key;
		SeJson	   *v = m->value->u.o.members[i].value;
		char	   *s = json_scalar_string(v);

		if (strcmp(k, "_index") == 0 && s)
		{
			if (!se_name_check_json(v, SE_NAME_INDEX, err))
				return false;
			it->index = s;
		}
		else if (strcmp(k, "_id") == 0 && s)
		{
			if (!se_name_check_json(v, SE_NAME_ID, err))
				return false;
			it->id = s;
		}
		else if ((strcmp(k, "routing") == 0 || strcmp(k, "_routing") == 0) && s)
		{
			if (!se_name_check_json(v, SE_NAME_ROUTING, err))
				return false;
			it->routing = s;
		}
		else if (strcmp(k, "if_seq_no") == 0 && v->type == SE_JSON_NUMBER && v->u.n.is_int)
			it->if_seq_no = v->u.n.i;
		else if (strcmp(k, "if_primary_term") == 0 && v->type == SE_JSON_NUMBER && v->u.n.is_int)
			it->if_primary_term = v->u.n.i;
		else if (strcmp(k, "require_alias") == 0 &&
				 (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
			it->require_alias = v->type == SE_JSON_TRUE;
		else if (strcmp(k, "retry_on_conflict") == 0 || strcmp(k, "require_alias") == 0 ||
				 strcmp(k, "pipeline") == 0 || strcmp(k, "_source") == 0 ||
				 strcmp(k, "dynamic_templates") == 0)
			continue;			/* accepted; no effect on a single node */
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Action/metadata line [%d] contains an unknown parameter [%s]", lineno, k);
			return false;
		}
	}
	return se_cas_check(&it->if_seq_no, it->if_primary_term, err);
}

/* Split NDJSON into items; request-level errors fail the whole bulk. */
static BulkItem *
parse_ndjson(const char *body, size_t len, const SeBulkOptions *opts, bool require_newline,
			 int *nitems, SeError *err)
{
	int			cap = 64;
	int			n = 0;
	BulkItem   *items = palloc0(sizeof(BulkItem) * cap);
	size_t		pos = 0;
	int			lineno = 0;

	if (require_newline && len > 0 && body[len - 1] != '\n')
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "The bulk request must be terminated by a newline [\\n]");
		return NULL;
	}
	while (pos < len)
	{
		const char *nl = memchr(body + pos, '\n', len - pos);
		size_t		end = nl ? (size_t) (nl - body) : len;
		size_t		l = end - pos;
		const char *line = body + pos;
		BulkItem   *it;
		size_t		k;
		bool		blank = true;

		lineno++;
		for (k = 0; k < l; k++)
			if (!isspace((unsigned char) line[k]))
				blank = false;
		pos = end + 1;
		if (blank)
			continue;
		if (n == cap)
		{
			cap *= 2;
			items = repalloc(items, sizeof(BulkItem) * cap);
			memset(items + n, 0, sizeof(BulkItem) * (cap - n));
		}
		it = &items[n];
		it->require_alias = opts->url_require_alias;	/* the line's own wins */
		if (!parse_action(line, l, lineno, it, err))
			return NULL;
		if (it->op != SE_ITEM_DELETE)
		{
			const char *src;
			size_t		srcend;

			if (pos >= len)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "The bulk request must be terminated by a newline [\\n]");
				return NULL;
			}
			src = body + pos;
			nl = memchr(src, '\n', len - pos);
			srcend = nl ? (size_t) (nl - body) : len;
			lineno++;
			it->body = src;
			it->body_len = srcend - pos;
			pos = srcend + 1;
		}
		if (it->index == NULL)
			it->index = (char *) opts->default_index;	/* outlives the items */
		if (it->index == NULL)
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: index is missing;");
			return NULL;
		}
		if (it->routing == NULL && opts->default_routing)
			it->routing = pstrdup(opts->default_routing);
		if (it->id != NULL && it->id[0] == '\0')
		{
			/* ES: it fails an index or create item; delete and update miss an id */
			if (it->op != SE_ITEM_INDEX && it->op != SE_ITEM_CREATE)
				it->id = NULL;
			else
				item_fail(it, 400, "illegal_argument_exception", SE_EMPTY_ID_REASON);
		}
		if (it->id == NULL)
		{
			if (it->op != SE_ITEM_INDEX && it->op != SE_ITEM_CREATE)
			{
				se_error_set(err, 400, "action_request_validation_exception",
							 "Validation Failed: 1: id is missing;");
				return NULL;
			}
			it->id = se_auto_id();
			it->auto_id = true;
		}
		else if (!se_doc_id_check(it->id, err))
			return NULL;
		n++;
	}
	if (n == 0)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no requests added;");
		return NULL;
	}
	*nitems = n;
	return items;
}

/* Resolve indices (auto-creating missing ones) and shards for every item. */
static void
route_items(BulkItem *items, int n, const SeBulkOptions *opts)
{
	int			i;
	const SeClusterState *st;
	const char *last_index = NULL;
	SeIndexMeta *last_im = NULL;
	int		   *slot_of = NULL;
	const char *checked_index = NULL;	/* the last index authorized */
	SeError		block;

	/* pass 1: auto-create missing indices (state reloads invalidate im pointers) */
	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];
		SeError		err;

		if (it->done)
			continue;
		se_error_init(&err);
		if (it->body_len > (size_t) se_max_document_size_kb * 1024)
		{
			item_fail(it, 400, "illegal_argument_exception",
					  psprintf("document of [%zu] bytes is larger than search_engine.max_document_size [%zu] bytes",
							   it->body_len, (size_t) se_max_document_size_kb * 1024));
			continue;
		}
		/* ES's require_alias: a write (not a delete) must name an alias */
		if (it->require_alias && it->op != SE_ITEM_DELETE &&
			se_alias_indices(se_state_current(), it->index) == NIL)
		{
			item_fail(it, 404, "index_not_found_exception",
					  psprintf("[require_alias] request flag is [true] and [%s] is not an alias",
							   it->index));
			continue;
		}
		/* an alias writes to its write index, with its index routing (cluster/alias.c) */
		{
			const char *ci = se_alias_single_index(se_state_current(), it->index, true,
												   (const char **) &it->routing, &err);

			if (ci == NULL)
			{
				item_fail(it, err.status, err.type, err.reason);
				continue;
			}
			it->index = (char *) ci;
		}
		if (!se_index_name_valid(it->index, &err))
		{
			item_fail(it, 400, err.type, err.reason);
			continue;
		}
		/* ES indexes _routing as one term: Lucene refuses an immense one */
		if (it->routing && it->op != SE_ITEM_DELETE && strlen(it->routing) > SE_MAX_TERM_LENGTH)
		{
			se_immense_term_error(&err, "_routing", it->routing, (int) strlen(it->routing));
			item_fail(it, 400, err.type, err.reason);
			continue;
		}
		/* write covers auto-creation, as ES's write privilege does */
		if (!opts->authorized &&
			(checked_index == NULL || strcmp(checked_index, it->index) != 0))
		{
			if (!se_acl_check(it->index, SE_ACL_WRITE, &err))
			{
				item_fail(it, err.status, err.type, err.reason);
				continue;
			}
			checked_index = it->index;
		}
		st = se_state_current();
		if (se_state_find(st, it->index) == NULL && it->op != SE_ITEM_DELETE &&
			!opts->no_auto_create && !se_index_auto_create(it->index, &err))
			item_fail(it, err.status, err.type, err.reason);
	}
	/*
	 * pass 2: route.  Items nearly always name the index of the item before,
	 * so its metadata and the slot of each of its shards are looked up once
	 * (se_slot_find takes the slots lock and scans every slot).
	 */
	st = se_state_current();
	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];
		const char *r;

		if (it->done)
			continue;
		if (last_index == NULL || strcmp(it->index, last_index) != 0)
		{
			last_index = it->index;
			last_im = se_state_find(st, it->index);
			if (last_im != NULL)
			{
				int			k;

				slot_of = palloc(sizeof(int) * last_im->settings.number_of_shards);
				for (k = 0; k < last_im->settings.number_of_shards; k++)
					slot_of[k] = -2;	/* not looked up yet */
			}
		}
		it->im = last_im;
		if (it->im == NULL)
		{
			item_fail(it, 404, "index_not_found_exception",
					  psprintf("no such index [%s]", it->index));
			continue;
		}
		if (it->im->closed)
		{
			item_fail(it, 400, "index_closed_exception", "closed");
			continue;
		}
		if (se_index_write_blocked(it->im, false, &block))
		{
			item_fail(it, block.status, block.type, block.reason);
			continue;
		}
		if (it->uuid && strcmp(it->uuid, it->im->uuid) != 0)
		{
			/* a peer routed it to an index of that name that is gone */
			item_fail(it, 404, "index_not_found_exception",
					  psprintf("no such index [%s]", it->index));
			continue;
		}
		r = it->routing ? it->routing : it->id;
		it->shard = se_routing_shard(r, strlen(r), it->im->settings.number_of_shards,
									 it->im->settings.routing_num_shards);
		if (!se_state_shard_local(it->im, it->shard))
		{
			const char *node = it->im->shard_nodes[it->shard];

			if (opts->local_only || node[0] == '\0')
			{
				/*
				 * Final, not retried: a coordinator whose state is behind
				 * (partitioned, say) could otherwise apply the item long
				 * after its client gave up on it and wrote the id again.
				 */
				item_fail(it, 503, "no_shard_available_action_exception",
						  psprintf("[%s][%d] is not on node [%s]%s", it->index, it->shard,
								   se_node_name_get(), node[0] ? "" : ": it is unassigned"));
				continue;
			}
			it->slot = SE_SLOT_REMOTE;
			it->node = node;
			continue;
		}
		if (slot_of[it->shard] == -2)
			slot_of[it->shard] = se_slot_find(it->im->uuid, it->shard);
		it->slot = slot_of[it->shard];
		if (it->slot < 0)
		{
			SeError		err;

			se_error_init(&err);
			if (!se_index_open_routed(it->im, &err))
			{
				item_fail(it, err.status, err.type, err.reason);
				continue;
			}
			it->slot = slot_of[it->shard] = se_slot_find(it->im->uuid, it->shard);
		}
	}
}

/*
 * The DSM segment of this backend's last bulk round, kept mapped for the
 * next one: creating a segment (shm_open, fallocate, mmap, first-touch page
 * faults) and unmapping it cost a 1000-document bulk's coordinator about as
 * much as routing and copying its items.  A kept segment is reused only if
 * every sub-request in it is finished -- a round interrupted by an error
 * leaves sub-requests that a worker may still take and answer into it --
 * and if it is big enough but not more than four times too big.
 */
static dsm_segment *kept_seg = NULL;

static dsm_segment *
bulk_segment(Size size)
{
	dsm_segment *seg;

	if (kept_seg != NULL)
	{
		SeBulkHeader *old = (SeBulkHeader *) dsm_segment_address(kept_seg);
		Size		have = dsm_segment_map_length(kept_seg);
		bool		idle = true;
		int			s;

		for (s = 0; s < old->nsubs; s++)
			if (pg_atomic_read_u32(&old->subs[s].state) == SE_SUB_PENDING)
				idle = false;
		if (idle && have >= size && have / 4 <= size)
			return kept_seg;
		seg = kept_seg;
		kept_seg = NULL;
		dsm_detach(seg);
	}
	/* room to grow: the next bulk is rarely exactly as large */
	seg = dsm_create(size + size / 4, 0);
	dsm_pin_mapping(seg);
	kept_seg = seg;
	return seg;
}

/* One round: every not-done item, one sub-request per slot. */
/*
 * Wait for every accepted sub-request of a round, then replicate it:
 * acknowledged only once every in-sync copy has the operations (cluster
 * mode; a single node has no copies and returns at once).
 */
static void
wait_and_replicate(SeBulkHeader *hdr, int naccepted)
{
	int			s;

	for (;;)
	{
		bool		all = true;

		for (s = 0; s < naccepted; s++)
		{
			SeBulkSub  *sub = &hdr->subs[s];

			if (pg_atomic_read_u32(&sub->state) != SE_SUB_PENDING)
				continue;
			/* taken by a worker that has since exited with FATAL: lost */
			if (sub->taker >= 0 &&
				SeShmem->workers[sub->taker].generation != sub->taker_generation)
			{
				strlcpy(sub->failure_type, "shard_failed_exception", sizeof(sub->failure_type));
				strlcpy(sub->failure, "the write worker owning the shard exited while applying this request",
						sizeof(sub->failure));
				pg_atomic_write_u32(&sub->state, SE_SUB_FAILED);
				continue;
			}
			all = false;
		}
		if (all)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		se_check_wait_interrupts();
	}
	pg_read_barrier();
	se_replication_replicate_round(hdr);
}

/*
 * refresh=wait_for: the round answers once a refresh made each shard's
 * writes visible to search (the shard's next scheduled refresh, or a
 * forced one past index.max_refresh_listeners: se_slot_wait_refresh),
 * after replication, as ES's listener runs after the replication.
 */
static void
wait_for_refresh(SeBulkHeader *hdr, BulkItem *items, int n, const int *sub_of,
				 const int *dsub, int nsubs)
{
	bool	   *seen = palloc0(sizeof(bool) * nsubs);
	int			i;

	for (i = 0; i < n; i++)
	{
		int			s = sub_of[i];
		SeBulkSub  *sub;

		if (s < 0 || dsub[s] < 0 || seen[s])
			continue;
		seen[s] = true;
		sub = &hdr->subs[dsub[s]];
		if (pg_atomic_read_u32(&sub->state) != SE_SUB_DONE || sub->write_gen == 0)
			continue;
		pg_read_barrier();
		sub->forced_refresh =
			se_slot_wait_refresh(sub->slot, sub->index_uuid, sub->shard, sub->write_gen,
								 items[i].im->settings.max_refresh_listeners);
	}
	pfree(seen);
}

static void
run_round(BulkItem *items, int n, const SeBulkOptions *opts)
{
	int		   *sub_of = palloc(sizeof(int) * n);
	int		   *slots = palloc(sizeof(int) * n);
	int		   *counts = palloc0(sizeof(int) * n);
	uint64	   *reqbytes = palloc0(sizeof(uint64) * n);
	Size	   *srcroom = palloc0(sizeof(Size) * n);	/* updates' sources */
	int			nsubs = 0;
	int			i,
				s;
	Size		size;
	Size		off;
	dsm_segment *seg = NULL;
	SeBulkHeader *hdr = NULL;
	char	   *base = NULL;
	int		   *entry;			/* reserved queue entry per sub, -1 = rejected */
	int		   *dsub;			/* sub-request number in the DSM, -1 = rejected */
	char	  **why;			/* rejection reason per sub */
	bool	   *handed_off;		/* refused: the primary moved (relocation.c) */
	int			naccepted = 0;
	uint64		total = 0;
	uint64		limit = (uint64) se_indexing_pressure_limit_kb * 1024;

	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];

		sub_of[i] = -1;
		if (it->done || it->slot == SE_SLOT_REMOTE)
			continue;
		for (s = 0; s < nsubs; s++)
			if (slots[s] == it->slot)
				break;
		if (s == nsubs)
			slots[nsubs++] = it->slot;
		sub_of[i] = s;
		counts[s]++;
		reqbytes[s] += sizeof(SeItemReq) + strlen(it->id) +
			(it->routing ? strlen(it->routing) : 0) + it->body_len;
		if (it->want_source)
			srcroom[s] += SE_UPDATE_SOURCE_ROOM;
	}
	if (nsubs == 0)
		return;

	/*
	 * Reserve queue room first: a sub-request that does not fit is
	 * rejected before anything is copied, so a wave of rejections stays
	 * cheap for the node.
	 */
	entry = palloc(sizeof(int) * nsubs);
	dsub = palloc(sizeof(int) * nsubs);
	why = palloc0(sizeof(char *) * nsubs);
	handed_off = palloc0(sizeof(bool) * nsubs);
	for (s = 0; s < nsubs; s++)
		total += reqbytes[s];
	for (s = 0; s < nsubs; s++)
	{
		SeEnqueueResult res;

		/*
		 * A request larger than the whole indexing pressure limit can never
		 * fit: ES's coordinating check rejects it (429) before anything
		 * else, even on an idle node.
		 */
		if (total > limit)
		{
			entry[s] = dsub[s] = -1;
			why[s] = psprintf("rejected execution of coordinating operation [coordinating_and_primary_bytes=0, "
							  "replica_bytes=0, all_bytes=0, coordinating_operation_bytes=" UINT64_FORMAT
							  ", max_coordinating_and_primary_bytes=" UINT64_FORMAT "]", total, limit);
			continue;
		}
		/* a primary that handed off to its relocation target takes no write */
		if (!se_relocation_write_begin(slots[s]))
		{
			entry[s] = dsub[s] = -1;
			handed_off[s] = true;
			continue;
		}
		entry[s] = se_queue_reserve_bulk(slots[s], reqbytes[s], &res);
		dsub[s] = -1;
		if (entry[s] >= 0)
		{
			dsub[s] = naccepted++;
			continue;
		}
		se_relocation_write_end(slots[s]);
		if (res == SE_ENQUEUE_REJECTED_QUEUE)
			why[s] = psprintf("rejected execution of shard bulk request on the [write] queue of node [%s] (queue capacity = %d)",
							  se_node_name_get(), se_write_queue_size);
		else
			why[s] = psprintf("rejected execution of shard bulk request of [" UINT64_FORMAT "] bytes: indexing pressure over [%d kb] on node [%s]",
							  reqbytes[s], se_indexing_pressure_limit_kb, se_node_name_get());
	}

	if (naccepted > 0)
	{
		PG_TRY();
		{
			size = MAXALIGN(offsetof(SeBulkHeader, subs) + sizeof(SeBulkSub) * naccepted);
			for (s = 0; s < nsubs; s++)
				if (dsub[s] >= 0)
					size += MAXALIGN(reqbytes[s]) + MAXALIGN(sizeof(SeItemResp) * counts[s]) +
						MAXALIGN(Min((Size) 512 * counts[s] + 4096, (Size) 16 * 1024 * 1024) +
								 srcroom[s]);
			seg = bulk_segment(size);
		}
		PG_CATCH();
		{
			for (s = 0; s < nsubs; s++)
				if (entry[s] >= 0)
				{
					se_queue_cancel_reserved(entry[s]);
					se_relocation_write_end(slots[s]);
				}
			PG_RE_THROW();
		}
		PG_END_TRY();
		base = dsm_segment_address(seg);
		hdr = (SeBulkHeader *) base;
		hdr->magic = SE_BULK_MAGIC;
		hdr->nsubs = naccepted;
		hdr->refresh = (int) opts->refresh;
		off = MAXALIGN(offsetof(SeBulkHeader, subs) + sizeof(SeBulkSub) * naccepted);
		for (s = 0; s < nsubs; s++)
		{
			SeBulkSub  *sub;

			if (dsub[s] < 0)
				continue;
			sub = &hdr->subs[dsub[s]];
			memset(sub, 0, sizeof(*sub));
			pg_atomic_init_u32(&sub->state, SE_SUB_PENDING);
			sub->taker = -1;
			sub->slot = slots[s];
			sub->nitems = counts[s];
			sub->req_off = off;
			off += MAXALIGN(reqbytes[s]);
			sub->resp_off = off;
			off += MAXALIGN(sizeof(SeItemResp) * counts[s]);
			sub->err_off = off;
			sub->err_cap = Min((Size) 512 * counts[s] + 4096, (Size) 16 * 1024 * 1024) +
				srcroom[s];
			off += MAXALIGN(sub->err_cap);
			sub->req_len = 0;	/* used as a write cursor below */
		}
		for (i = 0; i < n; i++)
		{
			BulkItem   *it = &items[i];
			SeBulkSub  *sub;
			SeItemReq	rq;
			char	   *p;

			if (sub_of[i] < 0 || dsub[sub_of[i]] < 0)
				continue;
			sub = &hdr->subs[dsub[sub_of[i]]];
			if (sub->req_len == 0)
			{
				strlcpy(sub->index_uuid, it->im->uuid, sizeof(sub->index_uuid));
				sub->shard = it->shard;
				strlcpy(sub->index_name, it->im->name, sizeof(sub->index_name));
			}
			memset(&rq, 0, sizeof(rq));
			rq.op = (uint8) it->op;
			rq.flags = (it->auto_id ? SE_ITEM_FLAG_AUTO_ID : 0) |
				(it->if_seq_no >= 0 ? SE_ITEM_FLAG_IF_SEQ_NO : 0) |
				(it->want_source ? SE_ITEM_FLAG_WANT_SOURCE : 0);
			rq.id_len = strlen(it->id);
			rq.routing_len = it->routing ? strlen(it->routing) : PG_UINT32_MAX;
			rq.body_len = it->body_len;
			rq.if_seq_no = it->if_seq_no;
			rq.if_primary_term = it->if_primary_term;
			p = base + sub->req_off + sub->req_len;
			memcpy(p, &rq, sizeof(rq));
			p += sizeof(rq);
			memcpy(p, it->id, rq.id_len);
			p += rq.id_len;
			if (it->routing)
			{
				memcpy(p, it->routing, rq.routing_len);
				p += rq.routing_len;
			}
			if (it->body_len)
				memcpy(p, it->body, it->body_len);
			p += it->body_len;
			sub->req_len = p - (base + sub->req_off);
		}
		for (s = 0; s < nsubs; s++)
			if (dsub[s] >= 0)
				se_queue_submit_reserved(entry[s], dsm_segment_handle(seg), dsub[s]);
		PG_TRY();
		{
			wait_and_replicate(hdr, naccepted);
		}
		PG_FINALLY();
		{
			for (s = 0; s < nsubs; s++)
				if (dsub[s] >= 0)
					se_relocation_write_end(slots[s]);
		}
		PG_END_TRY();
		if (opts->refresh == SE_REFRESH_WAIT_FOR)
			wait_for_refresh(hdr, items, n, sub_of, dsub, nsubs);
	}

	/* collect per-item outcomes */
	{
		int		   *pos = palloc0(sizeof(int) * nsubs);

		for (i = 0; i < n; i++)
		{
			BulkItem   *it = &items[i];
			SeBulkSub  *sub;
			uint32		st;

			if (sub_of[i] < 0)
				continue;
			if (handed_off[sub_of[i]])
			{
				/* se_bulk_execute routes it again to the new primary */
				item_fail(it, 503, SE_RETRY_ON_PRIMARY,
						  psprintf("shard [%s][%d] is relocating: its primary handed off to the relocation target",
								   it->index, it->shard));
				continue;
			}
			if (dsub[sub_of[i]] < 0)
			{
				/* rejected: not done, the caller may retry it */
				memset(&it->resp, 0, sizeof(it->resp));
				it->resp.status = 429;
				it->err_type = "es_rejected_execution_exception";
				it->err_reason = why[sub_of[i]];
				continue;
			}
			sub = &hdr->subs[dsub[sub_of[i]]];
			st = pg_atomic_read_u32(&sub->state);
			it->done = true;
			if (st == SE_SUB_FAILED)
			{
				it->resp.status = sub->failure_status ? sub->failure_status : 500;
				it->err_type = pstrdup(sub->failure_type);
				it->err_reason = pstrdup(sub->failure);
				continue;
			}
			it->resp = ((SeItemResp *) (base + sub->resp_off))[pos[sub_of[i]]++];
			it->resp.replicas_ok = (uint8) Min(sub->replicas_ok, PG_UINT8_MAX);
			it->forced_refresh = sub->forced_refresh;
			if (it->resp.err_off >= 0)
			{
				const char *t = base + sub->err_off + it->resp.err_off;

				it->err_type = pstrdup(t);
				it->err_reason = pstrdup(t + strlen(t) + 1);
			}
			else
				it->err_type = NULL;
			if (it->want_source && it->resp.src_off >= 0)
			{
				const char *t = base + sub->err_off + it->resp.src_off;
				uint32		l;

				memcpy(&l, t, sizeof(l));
				it->source = pnstrdup(t + sizeof(l), l);
				it->source_len = l;
			}
		}
	}
}

/* ---------- items on other nodes: the "bulk_items" transport action ---------- */

/* how long a coordinator retries items a handed-off primary refused */
#define SE_RETRY_ON_PRIMARY_MS	30000

/* ES's bulk timeout (1m): how long a node's share of a bulk may take */
#define SE_BULK_REMOTE_TIMEOUT_MS	60000

#define REMOTE_FLAG_AUTO_ID		0x01
#define REMOTE_FLAG_ROUTING		0x02
#define REMOTE_FLAG_WANT_SOURCE	0x04	/* the reply carries the update's _source */

static void
put_string(StringInfo buf, const char *s)
{
	pq_sendint32(buf, (int32) strlen(s));
	pq_sendbytes(buf, s, strlen(s));
}

static char *
get_string(StringInfo buf)
{
	int32		len = pq_getmsgint(buf, 4);

	if (len < 0 || len > buf->len - buf->cursor)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed bulk_items transport message")));
	return pnstrdup(pq_getmsgbytes(buf, len), len);
}

/* One node's items of this round, as the peer's handler reads them. */
static void
encode_items(BulkItem *items, int n, const char *node, const SeBulkOptions *opts,
			 StringInfo buf, int *nsent)
{
	int			i,
				count = 0;

	pq_sendbyte(buf, (uint8) opts->refresh);
	for (i = 0; i < n; i++)
		if (!items[i].done && items[i].slot == SE_SLOT_REMOTE && strcmp(items[i].node, node) == 0)
			count++;
	pq_sendint32(buf, count);
	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];

		if (it->done || it->slot != SE_SLOT_REMOTE || strcmp(it->node, node) != 0)
			continue;
		pq_sendbyte(buf, (uint8) it->op);
		pq_sendbyte(buf, (it->auto_id ? REMOTE_FLAG_AUTO_ID : 0) |
					(it->routing ? REMOTE_FLAG_ROUTING : 0) |
					(it->want_source ? REMOTE_FLAG_WANT_SOURCE : 0));
		put_string(buf, it->index);
		put_string(buf, it->im->uuid);
		put_string(buf, it->id);
		if (it->routing)
			put_string(buf, it->routing);
		pq_sendint64(buf, it->if_seq_no);
		pq_sendint64(buf, it->if_primary_term);
		pq_sendint32(buf, (int32) it->body_len);
		pq_sendbytes(buf, it->body, it->body_len);
	}
	*nsent = count;
}

/* Transport action "bulk_items": a peer's items for shards of this node. */
static bool
bulk_items_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	StringInfoData buf;
	SeBulkOptions opts;
	BulkItem   *items;
	int			n,
				i;

	buf.data = (char *) payload;
	buf.len = (int) len;
	buf.maxlen = buf.len;
	buf.cursor = 0;
	memset(&opts, 0, sizeof(opts));
	opts.refresh = (SeRefresh) pq_getmsgbyte(&buf);
	opts.authorized = true;		/* the coordinating node checked write */
	opts.no_auto_create = true;
	opts.local_only = true;
	n = pq_getmsgint(&buf, 4);
	if (n < 0 || n > buf.len)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed bulk_items request");
		return false;
	}
	items = palloc0(sizeof(BulkItem) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];
		int			flags;

		it->op = (SeItemOp) pq_getmsgbyte(&buf);
		flags = pq_getmsgbyte(&buf);
		it->auto_id = (flags & REMOTE_FLAG_AUTO_ID) != 0;
		it->want_source = (flags & REMOTE_FLAG_WANT_SOURCE) != 0;
		it->index = get_string(&buf);
		it->uuid = get_string(&buf);
		it->id = get_string(&buf);
		it->routing = (flags & REMOTE_FLAG_ROUTING) ? get_string(&buf) : NULL;
		it->if_seq_no = pq_getmsgint64(&buf);
		it->if_primary_term = pq_getmsgint64(&buf);
		it->body_len = pq_getmsgint(&buf, 4);
		if (it->body_len > (size_t) (buf.len - buf.cursor))
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed bulk_items request");
			return false;
		}
		it->body = pq_getmsgbytes(&buf, it->body_len);
	}
	se_bulk_execute(items, n, &opts);
	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];

		pq_sendint16(reply, it->resp.status);
		pq_sendbyte(reply, it->resp.result);
		pq_sendint64(reply, it->resp.version);
		pq_sendint64(reply, it->resp.seq_no);
		pq_sendint64(reply, it->resp.primary_term);
		pq_sendbyte(reply, it->resp.replicas_ok);
		pq_sendbyte(reply, it->forced_refresh ? 1 : 0);
		pq_sendbyte(reply, it->err_type ? 1 : 0);
		if (it->err_type)
		{
			put_string(reply, it->err_type);
			put_string(reply, it->err_reason ? it->err_reason : "");
		}
		if (it->want_source)
		{
			pq_sendbyte(reply, it->source ? 1 : 0);
			if (it->source)
			{
				pq_sendint32(reply, (int32) it->source_len);
				pq_sendbytes(reply, it->source, it->source_len);
			}
		}
	}
	return true;
}

void
se_bulk_register_actions(void)
{
	se_transport_register("bulk_items", bulk_items_action);
}

/* Read a node's answer into its items (in the order they were sent). */
static void
decode_outcomes(BulkItem *items, int n, const char *node, StringInfo reply)
{
	int			i;

	reply->cursor = 0;
	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];

		if (it->done || it->slot != SE_SLOT_REMOTE || strcmp(it->node, node) != 0)
			continue;
		memset(&it->resp, 0, sizeof(it->resp));
		it->resp.status = pq_getmsgint(reply, 2);
		it->resp.result = pq_getmsgbyte(reply);
		it->resp.version = pq_getmsgint64(reply);
		it->resp.seq_no = pq_getmsgint64(reply);
		it->resp.primary_term = pq_getmsgint64(reply);
		it->resp.replicas_ok = pq_getmsgbyte(reply);
		it->resp.err_off = -1;
		it->forced_refresh = pq_getmsgbyte(reply) != 0;
		it->err_type = NULL;
		if (pq_getmsgbyte(reply))
		{
			it->err_type = get_string(reply);
			it->err_reason = get_string(reply);
		}
		it->source = NULL;
		if (it->want_source && pq_getmsgbyte(reply))
		{
			it->source = get_string(reply);
			it->source_len = strlen(it->source);
		}
		/* the node's full queue: retried here, as a local rejection is */
		it->done = !(it->resp.status == 429 && it->err_type &&
					 strcmp(it->err_type, "es_rejected_execution_exception") == 0);
	}
}

/*
 * Send the items routed to other nodes' shards, one request per node at
 * once, and take their outcomes; a node that cannot be reached fails its
 * items with the transport's error.
 */
static void
run_remote(BulkItem *items, int n, const SeBulkOptions *opts)
{
	List	   *nodes = NIL;
	SeTransportCall *calls;
	ListCell   *lc;
	int			i,
				c;

	for (i = 0; i < n; i++)
		if (!items[i].done && items[i].slot == SE_SLOT_REMOTE &&
			!list_member(nodes, makeString((char *) items[i].node)))
			nodes = lappend(nodes, makeString((char *) items[i].node));
	if (nodes == NIL)
		return;
	calls = palloc0(sizeof(SeTransportCall) * list_length(nodes));
	c = 0;
	foreach(lc, nodes)
	{
		const char *node = strVal(lfirst(lc));
		StringInfoData buf;
		int			nsent;

		initStringInfo(&buf);
		encode_items(items, n, node, opts, &buf, &nsent);
		calls[c].node = node;
		calls[c].conninfo = se_cluster_conninfo(node);
		calls[c].action = "bulk_items";
		calls[c].payload = buf.data;
		calls[c].payload_len = buf.len;
		c++;
	}
	se_transport_call_each(calls, c, SE_BULK_REMOTE_TIMEOUT_MS);
	for (c = 0; c < list_length(nodes); c++)
	{
		if (calls[c].ok)
		{
			decode_outcomes(items, n, calls[c].node, &calls[c].reply);
			continue;
		}
		for (i = 0; i < n; i++)
			if (!items[i].done && items[i].slot == SE_SLOT_REMOTE &&
				strcmp(items[i].node, calls[c].node) == 0)
				item_fail(&items[i], calls[c].err.status, calls[c].err.type, calls[c].err.reason);
	}
}

/*
 * Route, queue and wait for items (the bulk coordinator without NDJSON):
 * the write seam for update-by-query, reindex and the FDW.  Items must
 * have op, index and id set (auto_id for generated ids); outcomes land in
 * resp / err_type / err_reason.
 */
/* Active (STARTED) copies of shard s of the index named name now; -1: gone. */
static int
active_copies(const char *name, int s, int *wanted, int wait)
{
	SeIndexMeta *im = se_state_find(se_state_current(), name);
	int			k,
				active = 0;

	if (im == NULL || im->closed || s >= im->settings.number_of_shards)
		return -1;
	*wanted = wait < 0 ? 1 + im->settings.number_of_replicas : wait;
	if (im->routing == NULL)
		return se_state_shard_state(im, s) == SE_SHARD_STARTED ? 1 : 0;
	for (k = 0; k < im->routing[s].ncopies; k++)
		active += im->routing[s].copies[k].state == SE_SHARD_STARTED;
	return active;
}

/*
 * ES's wait_for_active_shards: before any item is written, each shard
 * written to must have that many active copies (as this node's applied
 * state shows them); wait for them up to the request's timeout, then fail
 * that shard's items with 503 unavailable_shards_exception.  The default
 * (1: the primary) waits for nothing here.
 */
static void
wait_active_shards(SeWriteItem *items, int n, const SeBulkOptions *opts)
{
	int			wait = opts->wait_for_active_shards;
	int			timeout = opts->timeout_ms > 0 ? opts->timeout_ms : 60000;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout);
	int			i;

	if (wait == 0 || wait == 1)
		return;
	for (i = 0; i < n; i++)
	{
		SeWriteItem *it = &items[i];
		int			active;
		int			wanted = 0;
		int			j;

		if (it->done || it->im == NULL)
			continue;
		for (;;)
		{
			active = active_copies(it->im->name, it->shard, &wanted, wait);
			if (active < 0 || active >= wanted || GetCurrentTimestamp() >= deadline)
				break;
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50,
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			se_check_wait_interrupts();
		}
		if (active < 0 || active >= wanted)
			continue;
		/* every item of that shard fails alike */
		for (j = i; j < n; j++)
			if (!items[j].done && items[j].im != NULL && items[j].shard == it->shard &&
				strcmp(items[j].im->name, it->im->name) == 0)
			{
				item_fail(&items[j], 503, "unavailable_shards_exception",
						  psprintf("[%s][%d] Not enough active copies to meet shard count of [%s] (have %d, needed %d). Timeout: [%dms]",
								   it->im->name, it->shard,
								   wait < 0 ? "ALL" : psprintf("%d", wait), active, wanted, timeout));
				items[j].done = true;
			}
	}
}

void
se_bulk_execute(SeWriteItem *items, int n, const SeBulkOptions *opts)
{
	int			attempt = 0;

	TimestampTz start = GetCurrentTimestamp();

	route_items(items, n, opts);
	wait_active_shards(items, n, opts);
	for (;;)
	{
		int			i;
		int			pending = 0;
		int			moved = 0;

		run_remote(items, n, opts);
		run_round(items, n, opts);
		/*
		 * Items a primary refused because it handed off to its
		 * relocation target were not applied anywhere: the coordinating
		 * node routes them again once its state shows the new primary
		 * (ES's retry on primary; the handoff lasts until the master
		 * committed the move, or cancelled it).  A node serving
		 * bulk_items answers them to its coordinator instead.
		 */
		for (i = 0; i < n && !opts->local_only; i++)
			if (items[i].done && items[i].err_type &&
				strcmp(items[i].err_type, SE_RETRY_ON_PRIMARY) == 0 &&
				!TimestampDifferenceExceeds(start, GetCurrentTimestamp(), SE_RETRY_ON_PRIMARY_MS))
			{
				items[i].done = false;
				items[i].err_type = items[i].err_reason = NULL;
				memset(&items[i].resp, 0, sizeof(items[i].resp));
				items[i].slot = -1;
				items[i].node = NULL;
				moved++;
			}
		if (moved > 0)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 50, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			se_check_wait_interrupts();
			route_items(items, n, opts);
			continue;
		}
		for (i = 0; i < n; i++)
			if (!items[i].done)
				pending++;
		if (pending == 0)
			break;
		if (attempt >= opts->max_retries)
		{
			for (i = 0; i < n; i++)
				items[i].done = true;	/* final: the 429s stand */
			break;
		}
		/* exponential backoff as Beats/Logstash do: 50ms, 100ms, ... capped at 5s */
		{
			long		delay = Min(5000L, 50L << Min(attempt, 10));

			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 delay, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			se_check_wait_interrupts();
		}
		attempt++;
		((SeBulkOptions *) opts)->retried = attempt;
	}
}

static const char *
result_name(int r)
{
	switch (r)
	{
		case SE_RESULT_CREATED:
			return "created";
		case SE_RESULT_UPDATED:
			return "updated";
		case SE_RESULT_DELETED:
			return "deleted";
		case SE_RESULT_NOT_FOUND:
			return "not_found";
		case SE_RESULT_NOOP:
			return "noop";
	}
	return "error";
}

/*
 * Bulk and single-document answers are written as JSON text, in ES's own
 * key order.  A 1000-item answer is some 170 KB: built as a jsonb tree and
 * then printed by jsonb_out, it cost its coordinator more than parsing,
 * routing and queueing the items (a third of the backend's CPU on the
 * Contents corpus); as text it is a few memcpy per item.
 */
#define put_lit(out, lit) appendBinaryStringInfo((out), (lit), sizeof(lit) - 1)

static inline void
put_str(StringInfo out, const char *s)
{
	se_json_write_string(out, s, (int) strlen(s));
}

static inline void
put_int(StringInfo out, int64 v)
{
	char		buf[MAXINT8LEN + 1];

	appendBinaryStringInfo(out, buf, pg_lltoa(v, buf));
}

/* The per-item body ES shows inside "items" (and as a single-doc answer). */
static void
item_json(StringInfo out, const BulkItem *it, bool single)
{
	put_lit(out, "{\"_index\":");
	put_str(out, it->index);
	put_lit(out, ",\"_id\":");
	put_str(out, it->id);
	if (it->err_type)
	{
		put_lit(out, ",\"status\":");
		put_int(out, it->resp.status);
		put_lit(out, ",\"error\":{\"type\":");
		put_str(out, it->err_type);
		put_lit(out, ",\"reason\":");
		put_str(out, it->err_reason);
		if (it->im)
		{
			put_lit(out, ",\"index_uuid\":");
			put_str(out, it->im->uuid);
			put_lit(out, ",\"shard\":\"");
			put_int(out, it->shard);
			put_lit(out, "\",\"index\":");
			put_str(out, it->index);
		}
		put_lit(out, "}}");
		return;
	}
	put_lit(out, ",\"_version\":");
	put_int(out, it->resp.version);
	put_lit(out, ",\"result\":\"");
	appendStringInfoString(out, result_name(it->resp.result));
	put_lit(out, "\"");
	if (it->forced_refresh)
		put_lit(out, ",\"forced_refresh\":true");
	if (it->resp.result == SE_RESULT_NOOP)
		put_lit(out, ",\"_shards\":{\"total\":0,\"successful\":0,\"failed\":0}");
	else
	{
		put_lit(out, ",\"_shards\":{\"total\":");
		put_int(out, 1 + it->im->settings.number_of_replicas);
		/* the primary and the in-sync replicas that acknowledged it */
		put_lit(out, ",\"successful\":");
		put_int(out, 1 + Min(it->resp.replicas_ok, it->im->settings.number_of_replicas));
		put_lit(out, ",\"failed\":0}");
	}
	put_lit(out, ",\"_seq_no\":");
	put_int(out, it->resp.seq_no);
	put_lit(out, ",\"_primary_term\":");
	put_int(out, it->resp.primary_term);
	if (!single)
	{
		put_lit(out, ",\"status\":");
		put_int(out, it->resp.status);
	}
	appendStringInfoChar(out, '}');
}

/*
 * A bulk's large pieces (its body as received, the items, the answer and
 * PostgreSQL's copies of both) are each a few hundred KB: with glibc's
 * defaults every request mapped fresh pages and returned them (~190 page
 * faults per 1000 Contents documents, a third of the coordinator's CPU).
 * A backend that coordinates bulks keeps up to 32 MB of freed heap for its
 * next request; pieces above 16 MB (bulks far beyond ES's advice of 5-15
 * MB) are still mapped (api.h).  Other backends keep glibc's defaults
 * unless they return large results (se_jsonb_from_text).
 */

bool
se_op_bulk(const char *body, size_t len, const SeBulkOptions *opts, SeResponse *r, SeError *err)
{
	TimestampTz start = GetCurrentTimestamp();
	int			n;
	BulkItem   *items;
	int			i;
	bool		errors = false;
	long		secs;
	int			usecs;
	StringInfo	out = &r->body;

	se_require_started();
	se_keep_freed_heap(SE_BULK_MMAP_ABOVE, SE_BULK_TRIM_KEEP);
	items = parse_ndjson(body, len, opts, opts->require_alias, &n, err);
	if (items == NULL)
		return false;
	se_bulk_execute(items, n, opts);
	for (i = 0; i < n; i++)
		if (items[i].err_type)
			errors = true;
	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	/* ~170 bytes an item: one allocation for the whole answer */
	resetStringInfo(out);
	enlargeStringInfo(out, 64 + 192 * n);
	put_lit(out, "{\"took\":");
	put_int(out, (int64) secs * 1000 + usecs / 1000);
	if (errors)
		put_lit(out, ",\"errors\":true,\"items\":[");
	else
		put_lit(out, ",\"errors\":false,\"items\":[");
	for (i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(out, ',');
		put_lit(out, "{\"");
		appendStringInfoString(out, op_name(items[i].op));
		put_lit(out, "\":");
		item_json(out, &items[i], false);
		appendStringInfoChar(out, '}');
	}
	put_lit(out, "]}");
	r->status = 200;
	return true;
}

bool
se_op_doc_write(const SeDocWrite *w, SeResponse *r, SeError *err)
{
	BulkItem	it;
	SeBulkOptions opts;

	se_require_started();
	memset(&it, 0, sizeof(it));
	memset(&opts, 0, sizeof(opts));
	opts.refresh = w->refresh;
	/* checked before the write, as for a bulk's items (wait_active_shards) */
	opts.wait_for_active_shards = w->wait_for_active_shards;
	opts.timeout_ms = w->timeout_ms;
	if (strcmp(w->op, "index") == 0)
		it.op = SE_ITEM_INDEX;
	else if (strcmp(w->op, "create") == 0)
		it.op = SE_ITEM_CREATE;
	else if (strcmp(w->op, "update") == 0)
		it.op = SE_ITEM_UPDATE;
	else if (strcmp(w->op, "delete") == 0)
		it.op = SE_ITEM_DELETE;
	else
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "opType must be 'create' or 'index', found: [%s]", w->op);
		return false;
	}
	it.index = pstrdup(w->index);
	if (w->id != NULL && w->id[0] == '\0' && (it.op == SE_ITEM_INDEX || it.op == SE_ITEM_CREATE))
	{
		se_error_set(err, 400, "illegal_argument_exception", SE_EMPTY_ID_REASON);
		return false;
	}
	if (w->id == NULL || w->id[0] == '\0')
	{
		if (it.op != SE_ITEM_INDEX && it.op != SE_ITEM_CREATE)
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: id is missing;");
			return false;
		}
		it.id = se_auto_id();
		it.auto_id = true;
	}
	else
		it.id = pstrdup(w->id);
	if (!se_doc_id_check(it.id, err))
		return false;
	it.routing = w->routing ? pstrdup(w->routing) : NULL;
	it.require_alias = w->require_alias;
	it.if_seq_no = w->if_seq_no;
	it.if_primary_term = w->if_primary_term;
	it.body = w->body;
	it.body_len = w->body_len;
	it.want_source = it.op == SE_ITEM_UPDATE && w->source != NULL &&
		w->source->type != SE_JSON_FALSE;
	se_bulk_execute(&it, 1, &opts);
	/* a write may overtake this update here: its "get" must not show it */
	if (it.want_source)
		se_debug_waitpoint("se:update:after_write");
	if (it.err_type)
	{
		se_error_set(err, it.resp.status, it.err_type, "%s", it.err_reason);
		return false;
	}
	r->status = it.resp.status;
	resetStringInfo(&r->body);
	item_json(&r->body, &it, true);
	/* update with _source: ES adds the document as updated ("get") */
	if (it.want_source)
	{
		r->body.data[--r->body.len] = '\0';
		appendStringInfoString(&r->body, ",\"get\":");
		if (!se_get_after_update(w->index, &it, w->source, &r->body, err))
			return false;
		appendStringInfoChar(&r->body, '}');
	}
	return true;
}
