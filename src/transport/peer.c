/*-------------------------------------------------------------------------
 *
 * peer.c
 *	  The calling side of the transport: pooled libpq connections to peers
 *	  and asynchronous fan-out of requests.
 *
 * Each backend (or worker) keeps at most one connection per peer, opened
 * on first use and kept while it stays healthy (and one per extra lane of
 * se_transport_streams, which only recovery workers use).  A call that fails on the
 * connection, times out or is interrupted closes it (a query may still be
 * running there: it is cancelled first), so a connection in the pool is
 * always idle.  Connections are opened without blocking: every wait is on
 * the socket and the process latch, bounded by the call's deadline, with
 * CHECK_FOR_INTERRUPTS between, so statement_timeout and pg_cancel_backend
 * act at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <poll.h>

#include "catalog/pg_type_d.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "node/node.h"
#include "transport/transport.h"
#include "transport/transport_int.h"

typedef struct Peer
{
	char	   *node;			/* TopMemoryContext */
	int			lane;			/* 0, or another connection to the node (streams) */
	char	   *conninfo;
	PGconn	   *conn;			/* NULL: not connected */
} Peer;

static Peer *peers = NULL;
static int	npeers = 0;
static int	maxpeers = 0;

/* Close p's connection, cancelling a query that may still run there. */
static void
peer_drop(Peer *p, bool cancel)
{
	if (p->conn == NULL)
		return;
	if (cancel && PQtransactionStatus(p->conn) == PQTRANS_ACTIVE)
	{
		PGcancel   *c = PQgetCancel(p->conn);
		char		buf[256];

		if (c)
		{
			(void) PQcancel(c, buf, sizeof(buf));
			PQfreeCancel(c);
		}
	}
	PQfinish(p->conn);
	p->conn = NULL;
}

void
se_transport_disconnect_all(void)
{
	int			i;

	for (i = 0; i < npeers; i++)
		peer_drop(&peers[i], true);
}

/*
 * The pool entry of node's connection number lane (created empty), its
 * conninfo brought up to date.  Calls use lane 0; parallel streams to one
 * node (se_transport_streams) each a lane of their own.
 */
static Peer *
peer_get(const char *node, const char *conninfo, int lane)
{
	Peer	   *p = NULL;
	int			i;

	for (i = 0; i < npeers; i++)
		if (peers[i].lane == lane && strcmp(peers[i].node, node) == 0)
			p = &peers[i];
	if (p == NULL)
	{
		if (npeers == maxpeers)
		{
			maxpeers = Max(8, maxpeers * 2);
			peers = peers == NULL
				? MemoryContextAllocZero(TopMemoryContext, sizeof(Peer) * maxpeers)
				: repalloc(peers, sizeof(Peer) * maxpeers);
		}
		p = &peers[npeers++];
		p->node = MemoryContextStrdup(TopMemoryContext, node);
		p->lane = lane;
		p->conninfo = NULL;
		p->conn = NULL;
	}
	if (p->conninfo == NULL || strcmp(p->conninfo, conninfo) != 0)
	{
		peer_drop(p, true);
		if (p->conninfo)
			pfree(p->conninfo);
		p->conninfo = MemoryContextStrdup(TopMemoryContext, conninfo);
	}
	return p;
}

static long
ms_left(TimestampTz deadline)
{
	long		ms = (long) ((deadline - GetCurrentTimestamp()) / 1000);

	return Max(ms, 0);
}

/*
 * Start connecting p: the peer's conninfo, then this node's
 * transport_conninfo, whose keywords win.  The connection is finished by
 * conn_step as its socket becomes ready.
 */
static bool
peer_connect_start(Peer *p, SeError *err)
{
	PQconninfoOption *extra = NULL;
	PQconninfoOption *o;
	const char *keys[64];
	const char *vals[64];
	int			n = 0;
	char	   *msg = NULL;
	PGconn	   *conn;

	if (se_transport_conninfo && se_transport_conninfo[0])
	{
		extra = PQconninfoParse(se_transport_conninfo, &msg);
		if (extra == NULL)
		{
			se_error_set(err, 500, "connect_transport_exception",
						 "[%s] invalid search_engine.transport_conninfo: %s",
						 p->node, msg ? msg : "out of memory");
			PQfreemem(msg);
			return false;
		}
	}
	keys[n] = "dbname";
	vals[n++] = p->conninfo;
	keys[n] = "fallback_application_name";
	vals[n++] = "search_engine transport";
	for (o = extra; o && o->keyword && n < lengthof(keys) - 1; o++)
		if (o->val && o->val[0])
		{
			keys[n] = o->keyword;
			vals[n++] = o->val;
		}
	keys[n] = NULL;
	vals[n] = NULL;
	conn = PQconnectStartParams(keys, vals, 1);
	if (extra)
		PQconninfoFree(extra);
	if (conn == NULL || PQstatus(conn) == CONNECTION_BAD)
	{
		se_error_set(err, 500, "connect_transport_exception", "[%s] connect failed: %s",
					 p->node, conn ? pchomp(PQerrorMessage(conn)) : "out of memory");
		PQfinish(conn);
		return false;
	}
	p->conn = conn;
	pg_atomic_fetch_add_u64(&SeShmem->transport_outbound_opened, 1);
	return true;
}

/* Per call, while it runs. */
typedef struct Pending
{
	Peer	   *peer;
	bool		connecting;		/* the connection is being made */
	PostgresPollingStatusType polling;	/* while connecting */
	bool		flushing;		/* the request is not all sent yet */
	bool		done;
	bool		stream;			/* _transport_stream, rows one at a time */
	int			lane;			/* which of the node's connections (peer_get) */
	PGresult   *res;			/* the one result row */
} Pending;

/* Send c's query on its (idle, connected) peer; false = c is over. */
static bool
call_send(SeTransportCall *c, Pending *pd)
{
	Oid			types[2] = {TEXTOID, BYTEAOID};
	const char *values[2];
	int			lengths[2];
	int			formats[2] = {0, 1};
	int			rc;

	values[0] = c->action;
	lengths[0] = strlen(c->action);
	values[1] = c->payload ? c->payload : "";
	lengths[1] = (int) c->payload_len;
	if (!PQsendQueryParams(pd->peer->conn,
						   pd->stream ? "SELECT search_engine._transport_stream($1, $2)"
						   : "SELECT search_engine._transport($1, $2)", 2,
						   types, values, lengths, formats, 1) ||
		(pd->stream && !PQsetSingleRowMode(pd->peer->conn)) ||
		(rc = PQflush(pd->peer->conn)) < 0)
	{
		se_error_set(&c->err, 500, "node_disconnected_exception", "[%s] send failed: %s",
					 c->node, pchomp(PQerrorMessage(pd->peer->conn)));
		peer_drop(pd->peer, false);
		return false;
	}
	pd->flushing = rc == 1;
	se_transport_count_tx(lengths[0] + lengths[1]);
	return true;
}

/*
 * Whether an idle pooled connection is still usable: whatever the peer sent
 * meanwhile is read and parsed now, while libpq is idle (an ErrorResponse
 * then counts as a notice, not as the next call's answer), and an EOF marks
 * the connection bad.
 */
static bool
idle_conn_alive(PGconn *conn)
{
	int			i;

	for (i = 0; i < 4 && PQstatus(conn) == CONNECTION_OK; i++)
	{
		struct pollfd pfd = {PQsocket(conn), POLLIN, 0};

		if (poll(&pfd, 1, 0) <= 0)
			return true;		/* nothing waiting */
		if (!PQconsumeInput(conn))
			return false;
		(void) PQisBusy(conn);	/* parse it now, as idle */
	}
	return PQstatus(conn) == CONNECTION_OK;
}

/* Begin c: on a pooled connection, or a new one; false = c is over. */
static bool
call_start(SeTransportCall *c, Pending *pd)
{
	pd->peer = peer_get(c->node, c->conninfo, pd->lane);

	/*
	 * A pooled connection the peer closed while it sat idle (the peer
	 * restarted or terminated its backend) holds that backend's FATAL and
	 * EOF unread: read them now and connect afresh, rather than send the
	 * call on it and fail it with a stale "terminating connection" (a
	 * replica failed that way for nothing).
	 */
	if (pd->peer->conn != NULL && !idle_conn_alive(pd->peer->conn))
		peer_drop(pd->peer, false);
	if (pd->peer->conn != NULL)
		return call_send(c, pd);
	if (!peer_connect_start(pd->peer, &c->err))
		return false;
	pd->connecting = true;
	pd->polling = PGRES_POLLING_WRITING;
	return true;
}

/* The connection of c advanced; false = c is over (failed). */
static bool
conn_step(SeTransportCall *c, Pending *pd)
{
	PGconn	   *conn = pd->peer->conn;

	pd->polling = PQconnectPoll(conn);
	if (pd->polling == PGRES_POLLING_FAILED)
	{
		se_error_set(&c->err, 500, "connect_transport_exception", "[%s] connect failed: %s",
					 c->node, pchomp(PQerrorMessage(conn)));
		peer_drop(pd->peer, false);
		return false;
	}
	if (pd->polling != PGRES_POLLING_OK)
		return true;
	pd->connecting = false;
	if (PQsetnonblocking(conn, 1) != 0)
	{
		se_error_set(&c->err, 500, "connect_transport_exception", "[%s] %s",
					 c->node, pchomp(PQerrorMessage(conn)));
		peer_drop(pd->peer, false);
		return false;
	}
	return call_send(c, pd);
}

/* Send what is left of the request, take what arrived; false: broken. */
static bool
send_and_receive(Pending *pd)
{
	PGconn	   *conn = pd->peer->conn;

	if (pd->flushing)
	{
		int			rc = PQflush(conn);

		if (rc < 0)
			return false;
		pd->flushing = rc == 1;
	}
	return PQconsumeInput(conn) != 0;
}

/* Take what arrived for c; true once its answer is complete. */
static bool
call_read(SeTransportCall *c, Pending *pd)
{
	PGconn	   *conn = pd->peer->conn;

	if (!send_and_receive(pd))
		goto broken;
	while (!PQisBusy(conn))
	{
		PGresult   *res = PQgetResult(conn);

		if (res == NULL)
		{
			/* the query is over; the connection is idle again */
			if (pd->res != NULL)
			{
				se_transport_count_rx(PQgetlength(pd->res, 0, 0));
				se_transport_reply_decode(c, PQgetvalue(pd->res, 0, 0),
										  PQgetlength(pd->res, 0, 0));
				PQclear(pd->res);
				pd->res = NULL;
			}
			else if (!se_error_is_set(&c->err))
				goto broken;
			return true;
		}
		if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
			PQnfields(res) == 1 && !PQgetisnull(res, 0, 0) && pd->res == NULL)
			pd->res = res;
		else
		{
			/* the peer raised an ERROR: ES calls it a remote transport failure */
			if (!se_error_is_set(&c->err))
				se_error_set(&c->err, 500, "remote_transport_exception", "[%s][%s] %s",
							 c->node, c->action,
							 PQresultErrorMessage(res)[0] ? pchomp(PQresultErrorMessage(res))
							 : "unexpected answer");
			PQclear(res);
			if (pd->res)
				PQclear(pd->res);
			pd->res = NULL;
		}
	}
	return false;

broken:
	if (!se_error_is_set(&c->err))
		se_error_set(&c->err, 500, "node_disconnected_exception", "[%s] connection lost: %s",
					 c->node, pchomp(PQerrorMessage(conn)));
	if (pd->res)
		PQclear(pd->res);
	pd->res = NULL;
	peer_drop(pd->peer, false);
	return true;
}

/*
 * Abandon the calls still running: their connections close, after a cancel
 * request unless !cancel.
 */
static void
abandon(SeTransportCall *calls, Pending *pds, int n, bool cancel)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		if (pds[i].done)
			continue;
		if (pds[i].res)
			PQclear(pds[i].res);
		pds[i].res = NULL;
		if (pds[i].peer)
			peer_drop(pds[i].peer, cancel);
		pds[i].done = true;
	}
}

/*
 * Start every call, then serve their sockets (connecting, sending,
 * reading) in one wait until all are over or the deadline passed.
 */
static void
fan_out(SeTransportCall *calls, Pending *pds, int n, TimestampTz deadline, bool cancel)
{
	int			left = 0;
	int			i;
	TimestampTz start = GetCurrentTimestamp();

	for (i = 0; i < n; i++)
	{
		calls[i].elapsed_us = 0;
		initStringInfo(&calls[i].reply);
		se_error_init(&calls[i].err);
		calls[i].ok = false;
		pds[i].done = !call_start(&calls[i], &pds[i]);
		if (!pds[i].done)
			left++;
	}
	while (left > 0)
	{
		WaitEventSet *set;
		WaitEvent	ev[16];
		long		ms = ms_left(deadline);
		int			nev;

		if (ms <= 0)
			break;
		set = CreateWaitEventSet(CurrentMemoryContext, left + 2);
		AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
		for (i = 0; i < n; i++)
		{
			int			events;

			if (pds[i].done)
				continue;
			if (pds[i].connecting)
				events = pds[i].polling == PGRES_POLLING_READING
					? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
			else
				events = WL_SOCKET_READABLE | (pds[i].flushing ? WL_SOCKET_WRITEABLE : 0);
			AddWaitEventToSet(set, events, PQsocket(pds[i].peer->conn), NULL, &pds[i]);
		}
		nev = WaitEventSetWait(set, ms, ev, lengthof(ev), PG_WAIT_EXTENSION);
		FreeWaitEventSet(set);
		for (i = 0; i < nev; i++)
		{
			Pending    *pd = ev[i].user_data;

			if (ev[i].events & WL_LATCH_SET)
				ResetLatch(MyLatch);
			else if (pd != NULL && !pd->done &&
					 (pd->connecting ? !conn_step(&calls[pd - pds], pd)
					  : call_read(&calls[pd - pds], pd)))
			{
				pd->done = true;
				calls[pd - pds].elapsed_us = GetCurrentTimestamp() - start;
				left--;
			}
		}
		CHECK_FOR_INTERRUPTS();
	}
	for (i = 0; i < n; i++)
		if (!pds[i].done && pds[i].connecting)
			se_error_set(&calls[i].err, 500, "connect_transport_exception",
						 "[%s] connect timed out", calls[i].node);
		else if (!pds[i].done)
			se_error_set(&calls[i].err, 504, "receive_timeout_transport_exception",
						 "[%s][%s] request timed out", calls[i].node, calls[i].action);
	abandon(calls, pds, n, cancel);
	for (i = 0; i < n; i++)
	{
		calls[i].ok = !se_error_is_set(&calls[i].err);
		if (calls[i].elapsed_us == 0)
			calls[i].elapsed_us = GetCurrentTimestamp() - start;
	}
}

/*
 * Send every call, then wait for all answers until timeout_ms: each call
 * ends ok (reply) or with its own error; none raises.
 */
static void
call_each(SeTransportCall *calls, int ncalls, int timeout_ms, bool cancel)
{
	Pending    *pds = palloc0(sizeof(Pending) * Max(1, ncalls));
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);

	PG_TRY();
	{
		fan_out(calls, pds, ncalls, deadline, cancel);
	}
	PG_CATCH();
	{
		/* interrupted: no connection may stay with a query running */
		abandon(calls, pds, ncalls, cancel);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pfree(pds);
}

void
se_transport_call_each(SeTransportCall *calls, int ncalls, int timeout_ms)
{
	call_each(calls, ncalls, timeout_ms, true);
}

/*
 * As se_transport_call_each, but a call that times out is dropped without
 * a cancel request: libpq's PQcancel waits for the peer's postmaster to
 * answer, which a stopped (SIGSTOP) node never does.  For short calls
 * whose only purpose is to hear from the peer (fault detection's checks).
 */
void
se_transport_probe_each(SeTransportCall *calls, int ncalls, int timeout_ms)
{
	call_each(calls, ncalls, timeout_ms, false);
}

/* As se_transport_call_each, then raise the first failure (call order). */
void
se_transport_call_all_or_error(SeTransportCall *calls, int ncalls, int timeout_ms)
{
	int			i;

	se_transport_call_each(calls, ncalls, timeout_ms);
	for (i = 0; i < ncalls; i++)
		if (!calls[i].ok)
			se_error_raise(&calls[i].err);
}

/*
 * Read what arrived for a stream: each row to fn; true once the query is
 * over (err set if it failed).
 */
static bool
stream_read(SeTransportCall *c, Pending *pd, SeTransportRowFn fn, void *arg)
{
	PGconn	   *conn = pd->peer->conn;

	if (!send_and_receive(pd))
		goto broken;
	while (!PQisBusy(conn))
	{
		PGresult   *res = PQgetResult(conn);
		ExecStatusType st;

		if (res == NULL)
			return true;		/* over; the connection is idle again */
		st = PQresultStatus(res);
		if (st == PGRES_SINGLE_TUPLE && PQnfields(res) == 1 && !PQgetisnull(res, 0, 0))
		{
			const char *data = PQgetvalue(res, 0, 0);
			int			len = PQgetlength(res, 0, 0);

			se_transport_count_rx(len);
			if (se_error_is_set(&c->err))
				;				/* only an error row ends a stream */
			else if (len >= 1 && data[0] == SE_TRANSPORT_REPLY_OK)
			{
				PG_TRY();
				{
					fn(arg, data + 1, len - 1);
				}
				PG_FINALLY();
				{
					PQclear(res);
				}
				PG_END_TRY();
				continue;
			}
			else
				se_transport_reply_decode(c, data, len);
		}
		else if (st != PGRES_TUPLES_OK && !se_error_is_set(&c->err))
			se_error_set(&c->err, 500, "remote_transport_exception", "[%s][%s] %s",
						 c->node, c->action,
						 PQresultErrorMessage(res)[0] ? pchomp(PQresultErrorMessage(res))
						 : "unexpected answer");
		PQclear(res);
	}
	return false;

broken:
	if (!se_error_is_set(&c->err))
		se_error_set(&c->err, 500, "node_disconnected_exception", "[%s] connection lost: %s",
					 c->node, pchomp(PQerrorMessage(conn)));
	peer_drop(pd->peer, false);
	return true;
}

/* one lane of se_transport_streams: a connection with one stream at a time */
typedef struct Lane
{
	SeTransportCall c;
	Pending		pd;
	void	   *arg;			/* the row function's, for this stream */
	bool		active;			/* a stream runs */
	TimestampTz deadline;		/* of the next row */
} Lane;

/*
 * Start lane l's next stream, if next gives one; false when it failed at
 * once (l->c.err set).
 */
static bool
lane_start(Lane *l, int lane, const char *node, const char *conninfo, const char *action,
		   SeTransportStreamNextFn next, void *ctx, int idle_timeout_ms)
{
	SeTransportStreamReq req;

	l->active = false;
	memset(&req, 0, sizeof(req));
	if (!next(ctx, lane, &req))
		return true;
	memset(&l->c, 0, sizeof(l->c));
	memset(&l->pd, 0, sizeof(l->pd));
	l->c.node = node;
	l->c.conninfo = conninfo;
	l->c.action = action;
	l->c.payload = req.payload;
	l->c.payload_len = req.payload_len;
	se_error_init(&l->c.err);
	l->arg = req.arg;
	l->pd.stream = true;
	l->pd.lane = lane;
	l->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), idle_timeout_ms);
	if (!call_start(&l->c, &l->pd))
		return false;
	l->active = true;
	return true;
}

bool
se_transport_streams(const char *node, const char *conninfo, const char *action,
					 int nlanes, SeTransportStreamNextFn next, void *ctx,
					 SeTransportRowFn fn, int idle_timeout_ms, SeError *err)
{
	Lane	   *lanes = palloc0(sizeof(Lane) * Max(1, nlanes));
	Lane	   *failed = NULL;
	int			i;

	PG_TRY();
	{
		for (i = 0; i < nlanes && failed == NULL; i++)
			if (!lane_start(&lanes[i], i, node, conninfo, action, next, ctx, idle_timeout_ms))
				failed = &lanes[i];
		while (failed == NULL)
		{
			WaitEventSet *set;
			WaitEvent	ev[8];
			long		ms = -1;
			int			nactive = 0;
			int			nev;

			for (i = 0; i < nlanes; i++)
				if (lanes[i].active)
				{
					long		left = ms_left(lanes[i].deadline);

					nactive++;
					if (left <= 0 && failed == NULL)
					{
						se_error_set(&lanes[i].c.err, 504, "receive_timeout_transport_exception",
									 "[%s][%s] no data for %d ms", node, action, idle_timeout_ms);
						failed = &lanes[i];
					}
					ms = ms < 0 ? left : Min(ms, left);
				}
			if (nactive == 0 || failed != NULL)
				break;
			set = CreateWaitEventSet(CurrentMemoryContext, nactive + 2);
			AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
			AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
			for (i = 0; i < nlanes; i++)
			{
				Pending    *pd = &lanes[i].pd;
				int			events;

				if (!lanes[i].active)
					continue;
				if (pd->connecting)
					events = pd->polling == PGRES_POLLING_READING
						? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
				else
					events = WL_SOCKET_READABLE | (pd->flushing ? WL_SOCKET_WRITEABLE : 0);
				AddWaitEventToSet(set, events, PQsocket(pd->peer->conn), NULL, &lanes[i]);
			}
			nev = WaitEventSetWait(set, ms, ev, lengthof(ev), PG_WAIT_EXTENSION);
			FreeWaitEventSet(set);
			for (i = 0; i < nev && failed == NULL; i++)
			{
				Lane	   *l = ev[i].user_data;
				bool		over;

				if (ev[i].events & WL_LATCH_SET)
					ResetLatch(MyLatch);
				if (l == NULL || !l->active)
					continue;
				if (l->pd.connecting)
					over = !conn_step(&l->c, &l->pd);
				else
					over = stream_read(&l->c, &l->pd, fn, l->arg);
				/* progress: the idle deadline starts again */
				l->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), idle_timeout_ms);
				if (!over)
					continue;
				l->active = false;
				if (se_error_is_set(&l->c.err) ||
					!lane_start(l, l - lanes, node, conninfo, action, next, ctx, idle_timeout_ms))
					failed = l;
			}
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		/* fn, next or an interrupt raised: no query may stay running here */
		for (i = 0; i < nlanes; i++)
			if (lanes[i].pd.peer)
				peer_drop(lanes[i].pd.peer, true);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (failed == NULL)
	{
		pfree(lanes);
		return true;
	}
	/* the other lanes' streams are cut: their queries are cancelled */
	for (i = 0; i < nlanes; i++)
		if (lanes[i].active && lanes[i].pd.peer)
			peer_drop(lanes[i].pd.peer, true);
	*err = failed->c.err;
	pfree(lanes);
	return false;
}

/* se_transport_stream's one request, handed out once */
typedef struct OneStream
{
	SeTransportStreamReq req;
	bool		given;
} OneStream;

static bool
one_stream_next(void *ctx, int lane, SeTransportStreamReq *req)
{
	OneStream  *o = ctx;

	if (o->given)
		return false;
	o->given = true;
	*req = o->req;
	return true;
}

bool
se_transport_stream(const char *node, const char *conninfo, const char *action,
					const char *payload, size_t payload_len,
					SeTransportRowFn fn, void *arg, int idle_timeout_ms, SeError *err)
{
	OneStream	o;

	memset(&o, 0, sizeof(o));
	o.req.payload = payload;
	o.req.payload_len = payload_len;
	o.req.arg = arg;
	return se_transport_streams(node, conninfo, action, 1, one_stream_next, &o,
								fn, idle_timeout_ms, err);
}
