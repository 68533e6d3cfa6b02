/*-------------------------------------------------------------------------
 *
 * actions.c
 *	  The serving side of the transport: search_engine._transport(action,
 *	  payload), which runs a registered action's handler for a peer.
 *
 * Actions are registered by the layers that own them (at _PG_init, so
 * every process knows them), which keeps this layer below theirs.  Only
 * members of search_engine_node (and superusers) may call _transport: the
 * peer checked the requesting role's privileges before it sent the
 * request, as ES's coordinating node does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "node/node.h"
#include "storage/ipc.h"
#include "transport/transport.h"
#include "transport/transport_int.h"

/* this backend serves a peer: counted in transport_server_open until it exits */
static bool serving_peer = false;

/* A message received (either side): ES's rx_count and rx_size_in_bytes. */
void
se_transport_count_rx(size_t bytes)
{
	pg_atomic_fetch_add_u64(&SeShmem->transport_rx_count, 1);
	pg_atomic_fetch_add_u64(&SeShmem->transport_rx_bytes, bytes);
}

/* A message sent (either side): ES's tx_count and tx_size_in_bytes. */
void
se_transport_count_tx(size_t bytes)
{
	pg_atomic_fetch_add_u64(&SeShmem->transport_tx_count, 1);
	pg_atomic_fetch_add_u64(&SeShmem->transport_tx_bytes, bytes);
}

static void
serving_peer_exit(int code, Datum arg)
{
	pg_atomic_fetch_sub_u64(&SeShmem->transport_server_open, 1);
}

/*
 * A peer's call arrived on this backend: count the request, and the
 * connection once (a transport connection is a backend that serves them,
 * pooled by its peer until either side closes it).
 */
static void
served_request(const char *action, size_t payload_len)
{
	if (!serving_peer)
	{
		serving_peer = true;
		pg_atomic_fetch_add_u64(&SeShmem->transport_server_open, 1);
		before_shmem_exit(serving_peer_exit, 0);
	}
	se_transport_count_rx(strlen(action) + payload_len);
}

#define SE_TRANSPORT_MAX_ACTIONS 32

typedef struct Action
{
	const char *name;
	SeTransportHandler fn;
} Action;

static Action actions[SE_TRANSPORT_MAX_ACTIONS];
static int	nactions = 0;

typedef struct StreamAction
{
	const char *name;
	SeTransportStreamOpen open;
	SeTransportStreamNext next;
} StreamAction;

static StreamAction streams[SE_TRANSPORT_MAX_ACTIONS];
static int	nstreams = 0;

void
se_transport_register(const char *action, SeTransportHandler fn)
{
	if (nactions == SE_TRANSPORT_MAX_ACTIONS)
		elog(ERROR, "too many search_engine transport actions");
	actions[nactions].name = action;
	actions[nactions].fn = fn;
	nactions++;
}

void
se_transport_register_stream(const char *action, SeTransportStreamOpen open,
							 SeTransportStreamNext next)
{
	if (nstreams == SE_TRANSPORT_MAX_ACTIONS)
		elog(ERROR, "too many search_engine transport stream actions");
	streams[nstreams].name = action;
	streams[nstreams].open = open;
	streams[nstreams].next = next;
	nstreams++;
}

/* Replace reply's bytes with err's encoding ('E', status, type, NUL, reason). */
static void
encode_error(StringInfo reply, const SeError *err)
{
	const char *reason = err->reason ? err->reason : "";

	appendStringInfoChar(reply, SE_TRANSPORT_REPLY_ERROR);
	appendStringInfoChar(reply, (char) ((uint32) err->status >> 24));
	appendStringInfoChar(reply, (char) ((uint32) err->status >> 16));
	appendStringInfoChar(reply, (char) ((uint32) err->status >> 8));
	appendStringInfoChar(reply, (char) (uint32) err->status);
	appendBinaryStringInfo(reply, err->type, strlen(err->type) + 1);
	appendBinaryStringInfo(reply, reason, strlen(reason));
}

/* Fill c's outcome from a reply's bytes. */
void
se_transport_reply_decode(SeTransportCall *c, const char *data, int len)
{
	if (len >= 1 && data[0] == SE_TRANSPORT_REPLY_OK)
	{
		appendBinaryStringInfo(&c->reply, data + 1, len - 1);
		return;
	}
	if (len >= 6 && data[0] == SE_TRANSPORT_REPLY_ERROR)
	{
		uint32		status = ((uint32) (uint8) data[1] << 24) | ((uint32) (uint8) data[2] << 16) |
			((uint32) (uint8) data[3] << 8) | (uint32) (uint8) data[4];
		const char *type = data + 5;
		int			tlen = strnlen(type, len - 5);

		if (tlen < len - 5)
		{
			se_error_set(&c->err, (int) status, pnstrdup(type, tlen), "%.*s",
						 len - 6 - tlen, type + tlen + 1);
			return;
		}
	}
	se_error_set(&c->err, 500, "remote_transport_exception",
				 "[%s][%s] malformed reply (%d bytes)", c->node, c->action, len);
}

/* Only peers (members of search_engine_node) and superusers run actions. */
static void
check_may_serve(const char *action)
{
	Oid			node_role = get_role_oid("search_engine_node", true);

	if (!superuser() && !(OidIsValid(node_role) && has_privs_of_role(GetUserId(), node_role)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for search_engine transport action \"%s\"", action),
				 errdetail("security_exception"),
				 errhint("Peers log in as a member of search_engine_node.")));
}

PG_FUNCTION_INFO_V1(se_sql_transport);
Datum
se_sql_transport(PG_FUNCTION_ARGS)
{
	char	   *action = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bytea	   *payload = PG_GETARG_BYTEA_PP(1);
	StringInfoData reply;
	SeError		err;
	bytea	   *out;
	int			i;

	check_may_serve(action);
	served_request(action, VARSIZE_ANY_EXHDR(payload));
	se_error_init(&err);
	initStringInfo(&reply);
	appendStringInfoChar(&reply, SE_TRANSPORT_REPLY_OK);
	for (i = 0; i < nactions; i++)
		if (strcmp(actions[i].name, action) == 0)
			break;
	if (i == nactions)
		se_error_set(&err, 400, "action_not_found_transport_exception",
					 "No handler for action [%s]", action);
	else
		(void) actions[i].fn(VARDATA_ANY(payload), VARSIZE_ANY_EXHDR(payload), &reply, &err);
	if (se_error_is_set(&err))
	{
		resetStringInfo(&reply);
		encode_error(&reply, &err);
	}
	out = palloc(VARHDRSZ + reply.len);
	SET_VARSIZE(out, VARHDRSZ + reply.len);
	memcpy(VARDATA(out), reply.data, reply.len);
	se_transport_count_tx(reply.len);
	PG_RETURN_BYTEA_P(out);
}

/* a stream's state between rows */
typedef struct StreamState
{
	const StreamAction *action;
	void	   *arg;			/* the action's, from its open */
	bool		over;			/* the last row (an error) went */
} StreamState;

/*
 * search_engine._transport_stream(action, payload): a registered stream
 * action's rows, each a reply ('R' + bytes), the last one possibly an
 * error ('E' ...) that ends it.  A value-per-call set-returning function
 * in the select list, so each row goes to the peer as it is made (the
 * caller reads them in single-row mode): a large transfer is one call, the
 * producer runs ahead of the consumer by what the socket buffers hold, and
 * no row is kept once sent.  Each row is built in place as the bytea
 * returned (header room first), so the bytes are copied once between the
 * action's buffer and the socket.
 */
PG_FUNCTION_INFO_V1(se_sql_transport_stream);
Datum
se_sql_transport_stream(PG_FUNCTION_ARGS)
{
	FuncCallContext *fc;
	StreamState *st;
	StringInfoData row;
	SeError		err;
	bool		more;

	if (SRF_IS_FIRSTCALL())
	{
		char	   *action = text_to_cstring(PG_GETARG_TEXT_PP(0));
		bytea	   *payload = PG_GETARG_BYTEA_PP(1);
		MemoryContext old;
		int			i;

		check_may_serve(action);
		served_request(action, VARSIZE_ANY_EXHDR(payload));
		fc = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
		st = palloc0(sizeof(StreamState));
		se_error_init(&err);
		for (i = 0; i < nstreams; i++)
			if (strcmp(streams[i].name, action) == 0)
				st->action = &streams[i];
		if (st->action == NULL)
			se_error_set(&err, 400, "action_not_found_transport_exception",
						 "No handler for stream action [%s]", action);
		else
			st->arg = st->action->open(VARDATA_ANY(payload), VARSIZE_ANY_EXHDR(payload), &err);
		MemoryContextSwitchTo(old);
		if (se_error_is_set(&err))
		{
			/* the error is the one row */
			st->over = true;
			initStringInfo(&row);
			appendBinaryStringInfo(&row, "\0\0\0\0", VARHDRSZ);
			encode_error(&row, &err);
			SET_VARSIZE(row.data, row.len);
			se_transport_count_tx(row.len - VARHDRSZ);
			fc->user_fctx = st;
			SRF_RETURN_NEXT(fc, PointerGetDatum(row.data));
		}
		fc->user_fctx = st;
	}
	fc = SRF_PERCALL_SETUP();
	st = fc->user_fctx;
	if (st->over)
		SRF_RETURN_DONE(fc);
	CHECK_FOR_INTERRUPTS();
	/* the row, in this call's (per-tuple) memory: it goes once sent */
	initStringInfo(&row);
	appendBinaryStringInfo(&row, "\0\0\0\0", VARHDRSZ);
	appendStringInfoChar(&row, SE_TRANSPORT_REPLY_OK);
	se_error_init(&err);
	more = st->action->next(st->arg, &row, &err);
	if (se_error_is_set(&err))
	{
		row.len = VARHDRSZ;
		encode_error(&row, &err);
		st->over = true;
	}
	else if (!more)
		SRF_RETURN_DONE(fc);
	SET_VARSIZE(row.data, row.len);
	se_transport_count_tx(row.len - VARHDRSZ);
	SRF_RETURN_NEXT(fc, PointerGetDatum(row.data));
}
