/*-------------------------------------------------------------------------
 *
 * xact.c
 *	  Transactional writes through the foreign tables: a per-transaction
 *	  buffer sent to the engine at commit, discarded on rollback.
 *
 * INSERT / UPDATE / DELETE / COPY on a foreign table only append items to
 * this backend's buffer, tagged with the subtransaction that made them.
 * Rolling back to a savepoint drops the items of that subtransaction and
 * its children; aborting the transaction drops them all.  Nothing reaches
 * the engine before COMMIT.
 *
 * At PRE_COMMIT the items go through the bulk path (se_bulk_execute, the
 * same bounded write queue as search_engine.bulk()) in rounds of
 * batch_size, in order, without refresh.  Each UPDATE/DELETE carries the
 * if_seq_no/if_primary_term of the version the statement read, so a
 * document changed by someone else since then fails the commit
 * (serialization_failure) instead of being overwritten.
 *
 * The engine has no multi-document transactions, so all-or-nothing is
 * obtained by compensation: every applied item keeps what undoes it (a
 * delete of what an INSERT created, the pre-image a write replaced, the
 * document a DELETE removed), conditioned on the seq_no our write
 * produced (several writes of one document undo as one, back to the state
 * before the first).  If any item is rejected (version conflict, mapping
 * error, 429 after retries, failed shard), the applied ones are undone in
 * reverse order and the commit fails with an error naming the rejected
 * items; the PostgreSQL transaction rolls back too.  The guarantee and
 * its limits (README.md):
 *   - after a failed commit no write of it is visible, unless an undo
 *     itself fails (a concurrent writer touched the same document in the
 *     window, or the node failed); then the error lists those items;
 *   - between the first applied round and the undo, a realtime GET or a
 *     periodic refresh of another session can observe the partial state
 *     (the window lasts the commit's bulk rounds and the undo; the commit
 *     refreshes only after every item succeeded);
 *   - if PostgreSQL's own commit fails after ours succeeded (e.g. another
 *     wrapper's commit callback fails), XACT_EVENT_ABORT undoes the
 *     applied items the same way, best effort, with a WARNING on failure;
 *   - a crash between our flush and PostgreSQL's commit record leaves the
 *     engine writes applied (the engine is not a two-phase participant;
 *     PREPARE TRANSACTION is refused when writes are pending).
 *
 * Reads inside the transaction see the engine's committed (refreshed)
 * documents, not the transaction's own pending writes; an UPDATE or
 * DELETE of a document already updated in the same transaction is chained
 * on the pending version (it is applied after it, conditioned on the
 * seq_no it produces).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "api/api.h"
#include "fdw/fdw.h"
#include "node/node.h"
#include "shard/snapshot.h"

typedef enum PreKind
{
	PRE_NONE,					/* INSERT create: nothing to replace */
	PRE_IMAGE,					/* the committed version the statement read */
	PRE_CHAIN,					/* the pending item prev of this transaction */
	PRE_FETCH					/* INSERT with op_type index: read at commit */
} PreKind;

typedef struct PendingItem
{
	SePendingOp op;
	SubTransactionId subid;
	const char *relname;
	char	   *index;
	char	   *id;
	char	   *routing;
	char	   *source;
	int			source_len;
	int			batch_size;
	bool		refresh;
	PreKind		pre_kind;
	int			prev;			/* PRE_CHAIN: index of the item it follows */
	bool		pre_found;		/* PRE_IMAGE / PRE_FETCH: a version existed */
	char	   *pre_source;
	int			pre_source_len;
	char	   *pre_routing;
	int64		pre_seq_no;
	int64		pre_primary_term;
	/* outcome */
	bool		sent;			/* reached a shard (its shard is known) */
	bool		applied;
	bool		deleted;		/* a DELETE that removed a document */
	int64		seq_no;
	int64		primary_term;
	int			shard;
	char	   *err_type;
	char	   *err_reason;
} PendingItem;

typedef struct IdEntry
{
	uint64		key;
	int			last;			/* newest item for this (index, id) */
} IdEntry;

static MemoryContext xact_cxt = NULL;
static PendingItem *items = NULL;
static int	nitems = 0;
static int	items_cap = 0;
static HTAB *by_id = NULL;		/* built on first lookup */
static bool registered = false;

/* applied at PRE_COMMIT, kept until COMMIT/ABORT (undo if the commit fails) */
static bool flushed = false;

static void xact_callback(XactEvent event, void *arg);
static void subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg);

static uint64
id_key(const char *index, const char *id)
{
	uint32		a = hash_bytes((const unsigned char *) index, strlen(index));
	uint32		b = hash_bytes((const unsigned char *) id, strlen(id));

	return ((uint64) a << 32) ^ (uint64) b ^ ((uint64) hash_bytes_uint32(a ^ 0x9e3779b9) << 17);
}

static void
reset_buffer(void)
{
	if (xact_cxt)
		MemoryContextReset(xact_cxt);
	items = NULL;
	nitems = 0;
	items_cap = 0;
	by_id = NULL;
	flushed = false;
}

static void
ensure_setup(void)
{
	if (!registered)
	{
		RegisterXactCallback(xact_callback, NULL);
		RegisterSubXactCallback(subxact_callback, NULL);
		registered = true;
	}
	if (xact_cxt == NULL)
		xact_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine fdw writes",
										 ALLOCSET_DEFAULT_SIZES);
}

static void
index_item(int i)
{
	IdEntry    *e;
	bool		found;
	uint64		k = id_key(items[i].index, items[i].id);

	e = hash_search(by_id, &k, HASH_ENTER, &found);
	e->last = i;
}

static void
build_index(void)
{
	HASHCTL		ctl;
	int			i;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(IdEntry);
	ctl.hcxt = xact_cxt;
	by_id = hash_create("search_engine fdw pending ids", 1024, &ctl,
						HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (i = 0; i < nitems; i++)
		index_item(i);
}

/* Newest pending item for (index, id), or -1. */
static int
latest(const char *index, const char *id)
{
	uint64		k;
	IdEntry    *e;
	int			i;

	if (nitems == 0)
		return -1;
	if (by_id == NULL)
		build_index();
	k = id_key(index, id);
	e = hash_search(by_id, &k, HASH_FIND, NULL);
	if (e == NULL)
		return -1;
	i = e->last;
	if (i < nitems && strcmp(items[i].index, index) == 0 && strcmp(items[i].id, id) == 0)
		return i;
	/* a hash collision: look for it the slow way */
	for (i = nitems - 1; i >= 0; i--)
		if (strcmp(items[i].index, index) == 0 && strcmp(items[i].id, id) == 0)
			return i;
	return -1;
}

static char *
xstrdup(const char *s)
{
	return s ? MemoryContextStrdup(xact_cxt, s) : NULL;
}

static char *
xmemdup(const char *s, int len)
{
	char	   *d;

	if (s == NULL)
		return NULL;
	d = MemoryContextAlloc(xact_cxt, len + 1);
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

/*
 * The pending state of (index, id) in this transaction: returns true when
 * the transaction has a pending write of it; *deleted when that write is a
 * DELETE, else *source is the pending document.
 */
bool
se_xact_pending_doc(const char *index, const char *id, bool *deleted,
					const char **source, int *source_len)
{
	int			i;

	ensure_setup();
	i = latest(index, id);
	/* an INSERT ... ON CONFLICT DO NOTHING may turn out a no-op: ignore */
	if (i >= 0 && items[i].op == SE_PENDING_CREATE_IF_ABSENT)
		i = -1;
	if (i < 0)
		return false;
	*deleted = items[i].op == SE_PENDING_DELETE;
	*source = items[i].source;
	*source_len = items[i].source_len;
	return true;
}

/*
 * Buffer one write.  pre: the version an UPDATE/DELETE read (NULL for
 * INSERT).  An UPDATE/DELETE of a document this transaction already wrote
 * is chained on that pending write.
 */
void
se_xact_add(SePendingOp op, const char *relname, const char *index, const char *id,
			const char *routing, const char *source, int source_len,
			const SePreImage *pre, int batch_size, bool refresh)
{
	PendingItem *it;
	MemoryContext old;
	int			prev = -1;

	ensure_setup();
	if (op == SE_PENDING_UPDATE || op == SE_PENDING_DELETE || op == SE_PENDING_INDEX)
	{
		prev = latest(index, id);
		if (prev >= 0 && items[prev].op == SE_PENDING_CREATE_IF_ABSENT)
			prev = -1;
	}
	old = MemoryContextSwitchTo(xact_cxt);
	if (nitems == items_cap)
	{
		items_cap = items_cap ? items_cap * 2 : 256;
		items = items ? repalloc_huge(items, sizeof(PendingItem) * items_cap)
			: MemoryContextAllocHuge(xact_cxt, sizeof(PendingItem) * items_cap);
	}
	it = &items[nitems];
	memset(it, 0, sizeof(*it));
	it->op = op;
	it->subid = GetCurrentSubTransactionId();
	it->relname = xstrdup(relname);
	it->index = xstrdup(index);
	it->id = xstrdup(id);
	it->routing = xstrdup(routing);
	it->source = xmemdup(source, source_len);
	it->source_len = source_len;
	it->batch_size = batch_size;
	it->refresh = refresh;
	it->prev = -1;
	if (prev >= 0)
	{
		it->pre_kind = PRE_CHAIN;
		it->prev = prev;
		if (it->routing == NULL)
			it->routing = items[prev].routing;
	}
	else if (pre != NULL)
	{
		it->pre_kind = PRE_IMAGE;
		it->pre_found = true;
		it->pre_source = xmemdup(pre->source, pre->source_len);
		it->pre_source_len = pre->source_len;
		it->pre_routing = xstrdup(pre->routing);
		it->pre_seq_no = pre->seq_no;
		it->pre_primary_term = pre->primary_term;
		if (it->routing == NULL)
			it->routing = it->pre_routing;
	}
	else if (op == SE_PENDING_INDEX)
		it->pre_kind = PRE_FETCH;
	else
		it->pre_kind = PRE_NONE;
	MemoryContextSwitchTo(old);
	nitems++;
	if (by_id)
		index_item(nitems - 1);
}

/* ---------------------------------------------------------------------
 * Subtransactions
 * ---------------------------------------------------------------------
 */

/* Drop the items made by subtransaction subid and its children. */
static void
truncate_from_subxact(SubTransactionId subid)
{
	int			n = nitems;

	while (n > 0 && items[n - 1].subid >= subid)
		n--;
	if (n == nitems)
		return;
	nitems = n;
	/* the id index is rebuilt on the next lookup */
	if (by_id)
	{
		hash_destroy(by_id);
		by_id = NULL;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && nitems > 0)
		truncate_from_subxact(mySubid);
}

/* ---------------------------------------------------------------------
 * Commit: apply, undo on failure
 * ---------------------------------------------------------------------
 */

static const char *
op_label(SePendingOp op)
{
	switch (op)
	{
		case SE_PENDING_CREATE:
		case SE_PENDING_CREATE_IF_ABSENT:
		case SE_PENDING_INDEX:
			return "INSERT";
		case SE_PENDING_UPDATE:
			return "UPDATE";
		case SE_PENDING_DELETE:
			return "DELETE";
	}
	return "write";
}

static void
fill_write(SeWriteItem *w, PendingItem *p)
{
	memset(w, 0, sizeof(*w));
	w->index = p->index;
	w->id = p->id;
	w->routing = p->routing;
	w->if_seq_no = -1;
	w->body = p->source;
	w->body_len = p->source_len;
	switch (p->op)
	{
		case SE_PENDING_CREATE:
		case SE_PENDING_CREATE_IF_ABSENT:
			w->op = SE_ITEM_CREATE;
			break;
		case SE_PENDING_INDEX:
		case SE_PENDING_UPDATE:
			w->op = SE_ITEM_INDEX;
			break;
		case SE_PENDING_DELETE:
			w->op = SE_ITEM_DELETE;
			w->body = NULL;
			w->body_len = 0;
			break;
	}
	if (p->pre_kind == PRE_CHAIN)
	{
		if (items[p->prev].op == SE_PENDING_DELETE)
		{
			/* after our own DELETE the document must still be absent */
			if (w->op == SE_ITEM_INDEX)
				w->op = SE_ITEM_CREATE;
		}
		else
		{
			w->if_seq_no = items[p->prev].seq_no;
			w->if_primary_term = items[p->prev].primary_term;
		}
	}
	else if ((p->pre_kind == PRE_IMAGE || p->pre_kind == PRE_FETCH) && p->pre_found)
	{
		w->if_seq_no = p->pre_seq_no;
		w->if_primary_term = p->pre_primary_term;
	}
}

/* Read the current version of INSERT (op_type index) targets. */
static void
fetch_preimages(int from, int to)
{
	int			i;

	for (i = from; i < to; i++)
	{
		PendingItem *p = &items[i];
		SeEngineDoc doc;
		MemoryContext old;

		if (p->pre_kind != PRE_FETCH)
			continue;
		se_engine_get(p->index, p->id, p->routing, &doc);
		old = MemoryContextSwitchTo(xact_cxt);
		p->pre_found = doc.found;
		if (doc.found)
		{
			p->pre_source = xmemdup(doc.source, doc.source_len);
			p->pre_source_len = doc.source_len;
			p->pre_routing = xstrdup(doc.routing);
			p->pre_seq_no = doc.seq_no;
			p->pre_primary_term = doc.primary_term;
		}
		MemoryContextSwitchTo(old);
	}
}

/*
 * The write that undoes the applied chain of one document ending at item
 * p (the newest applied write of that _id): back to the state before the
 * chain's first applied item, conditioned on the state p left.  Marks the
 * chain's items as covered.  False when there is nothing to write.
 */
static bool
undo_write(SeWriteItem *w, PendingItem *p, bool *covered, int pi)
{
	int			r = pi;
	bool		now_present;
	bool		was_present;
	const char *src = NULL;
	int			srclen = 0;
	PendingItem *root;

	/* the first applied item of the chain */
	covered[pi] = true;
	while (items[r].pre_kind == PRE_CHAIN && items[items[r].prev].applied)
	{
		r = items[r].prev;
		covered[r] = true;
	}
	root = &items[r];
	now_present = !(p->op == SE_PENDING_DELETE);
	switch (root->pre_kind)
	{
		case PRE_NONE:
			was_present = false;
			break;
		case PRE_IMAGE:
		case PRE_FETCH:
			was_present = root->pre_found;
			src = root->pre_source;
			srclen = root->pre_source_len;
			break;
		case PRE_CHAIN:
		default:
			/* follows a write of ours that changed nothing (a DELETE of nothing) */
			was_present = items[root->prev].op != SE_PENDING_DELETE;
			src = items[root->prev].source;
			srclen = items[root->prev].source_len;
			break;
	}
	if (!now_present && !was_present)
		return false;
	memset(w, 0, sizeof(*w));
	w->index = p->index;
	w->id = p->id;
	w->routing = p->routing;
	w->if_seq_no = -1;
	if (!now_present)
	{
		/* bring the removed document back */
		w->op = SE_ITEM_CREATE;
		w->body = src;
		w->body_len = srclen;
		return true;
	}
	w->if_seq_no = p->seq_no;
	w->if_primary_term = p->primary_term;
	if (was_present)
	{
		w->op = SE_ITEM_INDEX;
		w->body = src;
		w->body_len = srclen;
	}
	else
		w->op = SE_ITEM_DELETE;
	return true;
}

/*
 * Undo the applied items, newest first, in rounds of at most 1000 (a round
 * must fit the write queue's indexing-pressure bound); returns the items
 * left applied.
 */
static List *
undo_applied(void)
{
	SeWriteItem *ws = palloc0(sizeof(SeWriteItem) * 1000);
	int		   *which = palloc(sizeof(int) * 1000);
	bool	   *covered = palloc0(sizeof(bool) * Max(nitems, 1));
	int			i = nitems - 1;
	SeBulkOptions opts;
	List	   *left = NIL;

	memset(&opts, 0, sizeof(opts));
	opts.refresh = SE_REFRESH_FALSE;
	opts.max_retries = 8;
	opts.authorized = true;	/* checked when the writes were made */
	while (i >= 0)
	{
		int			n = 0;
		int			k;

		for (; i >= 0 && n < 1000; i--)
			if (items[i].applied && !covered[i] &&
				undo_write(&ws[n], &items[i], covered, i))
				which[n++] = i;
		if (n == 0)
			break;
		se_bulk_execute(ws, n, &opts);
		for (k = 0; k < n; k++)
		{
			if (ws[k].err_type)
				left = lappend(left, psprintf("%s _id \"%s\" of index \"%s\": %s: %s",
											  op_label(items[which[k]].op), items[which[k]].id,
											  items[which[k]].index, ws[k].err_type, ws[k].err_reason));
			else
			{
				int			j = which[k];

				/* the whole chain of that document is undone */
				for (;;)
				{
					items[j].applied = false;
					if (items[j].pre_kind != PRE_CHAIN || !items[items[j].prev].applied)
						break;
					j = items[j].prev;
				}
			}
		}
	}
	return left;
}

/* Is a rejection no failure at all (the item is simply a no-op)? */
static bool
benign(PendingItem *p, const SeWriteItem *w)
{
	if (w->resp.status != 409)
		return false;
	/* ON CONFLICT DO NOTHING: the document exists, nothing to do */
	if (p->op == SE_PENDING_CREATE_IF_ABSENT)
		return true;
	/* DELETE of a document someone else deleted meanwhile */
	if (p->op == SE_PENDING_DELETE && w->err_reason &&
		strstr(w->err_reason, "no document was found") != NULL)
		return true;
	return false;
}

/*
 * Refresh the shards the commit wrote to (after success: when the table
 * asks for it; after an undo: always, so searches and the _seq_no of the
 * next UPDATE see the restored documents).
 */
static void
refresh_touched(bool all)
{
	int			i;
	List	   *done = NIL;

	for (i = 0; i < nitems; i++)
	{
		PendingItem *p = &items[i];
		char	   *key;
		SeIndexMeta *im;

		if (!p->sent || !(all || (p->applied && p->refresh)))
			continue;
		key = psprintf("%s/%d", p->index, p->shard);
		if (list_member(done, makeString(key)))
			continue;
		done = lappend(done, makeString(key));
		im = se_state_find(se_state_current(), p->index);
		if (im && !im->closed)
			se_engine_refresh_shard(im, p->shard);
	}
}

static int
failure_sqlstate(List *failed_items)
{
	ListCell   *lc;
	bool		all_create = true;
	bool		all_conflict = true;
	const char *first = NULL;

	foreach(lc, failed_items)
	{
		int			i = lfirst_int(lc);

		if (first == NULL)
			first = items[i].err_type;
		if (strcmp(items[i].err_type, "version_conflict_engine_exception") != 0)
			all_conflict = all_create = false;
		else if (items[i].op != SE_PENDING_CREATE)
			all_create = false;
	}
	if (all_create && all_conflict)
		return ERRCODE_UNIQUE_VIOLATION;
	if (all_conflict)
		return ERRCODE_T_R_SERIALIZATION_FAILURE;
	return first ? se_error_sqlstate(first) : ERRCODE_FDW_ERROR;
}

/* Apply the buffer; on any rejection undo and ERROR. */
static void
flush(void)
{
	int			start = 0;
	List	   *failed = NIL;
	MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "search_engine fdw commit",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(work);

	se_require_started();
	while (start < nitems && failed == NIL)
	{
		int			bs = Max(items[start].batch_size, 1);
		int			end = start;
		SeWriteItem *ws;
		SeBulkOptions opts;
		int			i;

		/* a round: up to batch_size items, none chained on one of the same round */
		while (end < nitems && end - start < bs &&
			   !(items[end].pre_kind == PRE_CHAIN && items[end].prev >= start))
			end++;
		if (end == start)
			end = start + 1;
		fetch_preimages(start, end);
		ws = palloc(sizeof(SeWriteItem) * (end - start));
		for (i = start; i < end; i++)
			fill_write(&ws[i - start], &items[i]);
		memset(&opts, 0, sizeof(opts));
		opts.refresh = SE_REFRESH_FALSE;
		opts.max_retries = 8;
		opts.authorized = true;	/* checked when the writes were made */
		se_bulk_execute(ws, end - start, &opts);
		for (i = start; i < end; i++)
		{
			SeWriteItem *w = &ws[i - start];
			PendingItem *p = &items[i];

			p->shard = w->shard;
			p->sent = (w->im != NULL);
			if (w->err_type == NULL)
			{
				p->applied = true;
				p->seq_no = w->resp.seq_no;
				p->primary_term = w->resp.primary_term;
				p->deleted = (p->op == SE_PENDING_DELETE && w->resp.result == SE_RESULT_DELETED);
				if (p->op == SE_PENDING_DELETE && !p->deleted)
					p->applied = false; /* not found: nothing happened */
			}
			else if (!benign(p, w))
			{
				MemoryContext o2 = MemoryContextSwitchTo(old);

				failed = lappend_int(failed, i);
				MemoryContextSwitchTo(o2);
				p->err_type = MemoryContextStrdup(xact_cxt, w->err_type);
				p->err_reason = MemoryContextStrdup(xact_cxt, w->err_reason ? w->err_reason : "");
			}
		}
		start = end;
		if (failed == NIL)
			MemoryContextReset(work);
	}

	if (failed != NIL)
	{
		List	   *left = undo_applied();
		StringInfoData detail;
		ListCell   *lc;
		int			shown = 0;
		int			code = failure_sqlstate(failed);
		PendingItem *f = &items[linitial_int(failed)];

		refresh_touched(true);
		initStringInfo(&detail);
		foreach(lc, failed)
		{
			PendingItem *p = &items[lfirst_int(lc)];

			if (shown++ == 10)
			{
				appendStringInfo(&detail, "\n... and %d more.", list_length(failed) - 10);
				break;
			}
			appendStringInfo(&detail, "%s%s _id \"%s\" of index \"%s\" (foreign table \"%s\"): %s: %s",
							 detail.len ? "\n" : "", op_label(p->op), p->id, p->index,
							 p->relname, p->err_type, p->err_reason);
		}
		MemoryContextSwitchTo(old);
		if (left != NIL)
		{
			StringInfoData l;

			initStringInfo(&l);
			foreach(lc, left)
				appendStringInfo(&l, "%s%s", l.len ? "; " : "", (char *) lfirst(lc));
			ereport(ERROR,
					(errcode(code),
					 errmsg("could not commit %d write%s to search_engine: %d rejected, and %d applied write%s could not be undone",
							nitems, nitems == 1 ? "" : "s", list_length(failed),
							list_length(left), list_length(left) == 1 ? "" : "s"),
					 errdetail("%s", detail.data),
					 errhint("These writes were applied and remain: %s.", l.data)));
		}
		ereport(ERROR,
				(errcode(code),
				 errmsg("could not commit %d write%s to search_engine: %s _id \"%s\" was rejected%s",
						nitems, nitems == 1 ? "" : "s", op_label(f->op), f->id,
						list_length(failed) > 1 ? psprintf(" (and %d more)", list_length(failed) - 1) : ""),
				 errdetail("%s", detail.data),
				 errhint("No write of the transaction was applied (the ones sent before the rejection were undone).")));
	}
	refresh_touched(false);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (nitems > 0)
			{
				flush();
				flushed = true;
			}
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (nitems > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has written to search_engine foreign tables"),
						 errdetail("The engine cannot take part in two-phase commit.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			reset_buffer();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (flushed)
			{
				/* our writes went out but PostgreSQL's commit failed: undo */
				MemoryContext old = MemoryContextSwitchTo(xact_cxt);

				elog(DEBUG1, "search_engine fdw: the commit failed after %d writes were applied; undoing them",
					 nitems);

				PG_TRY();
				{
					List	   *left = undo_applied();

					refresh_touched(true);
					if (left != NIL)
						ereport(WARNING,
								(errcode(ERRCODE_FDW_ERROR),
								 errmsg("the transaction aborted after its search_engine writes were applied, and %d of them could not be undone",
										list_length(left))));
				}
				PG_CATCH();
				{
					FlushErrorState();
					ereport(WARNING,
							(errcode(ERRCODE_FDW_ERROR),
							 errmsg("the transaction aborted after its search_engine writes were applied, and undoing them failed")));
				}
				PG_END_TRY();
				MemoryContextSwitchTo(old);
			}
			reset_buffer();
			break;
		default:
			break;
	}
}
