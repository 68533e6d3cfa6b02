/*-------------------------------------------------------------------------
 *
 * transport.h
 *	  Node-to-node requests over libpq.
 *
 * A request is an action name and an opaque payload; the peer runs the
 * action's handler inside SELECT search_engine._transport(action, payload)
 * and answers with a reply: the handler's bytes, or its ES error.  The
 * caller's side keeps one connection per peer per backend, sends all the
 * calls of a fan-out before waiting for any, waits on the sockets with the
 * latch (so interrupts act at once) and bounds every wait.  The failure
 * policy is in the function's name, as in Citus:
 *
 *	se_transport_call_each			every call gets its own outcome
 *	se_transport_call_all_or_error	the first failure is raised as ERROR
 *
 * Peers log in with PostgreSQL's own authentication: the peer's published
 * conninfo plus this node's search_engine.transport_conninfo (user,
 * passfile, sslmode, certificates).  The role must be a member of
 * search_engine_node, which alone may execute _transport: a node trusts
 * the privilege checks its peer made for the request, as ES's transport
 * layer does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_TRANSPORT_H
#define SE_TRANSPORT_H

#include "util/se_common.h"

#include "lib/stringinfo.h"

typedef struct SeTransportCall
{
	/* in */
	const char *node;			/* the peer's node name (errors, pooling) */
	const char *conninfo;		/* the peer's publish_conninfo */
	const char *action;			/* a registered action name */
	const char *payload;
	size_t		payload_len;
	/* out */
	bool		ok;				/* reply holds the handler's answer */
	StringInfoData reply;
	SeError		err;			/* when !ok: the peer's ES error, or ours */
	int64		elapsed_us;		/* send to answer (or to giving up) */
} SeTransportCall;

/* in peer.c */
extern void se_transport_call_each(SeTransportCall *calls, int ncalls, int timeout_ms);
extern void se_transport_call_all_or_error(SeTransportCall *calls, int ncalls,
										   int timeout_ms);
/* the same, a timed-out call dropped without a cancel request (see peer.c) */
extern void se_transport_probe_each(SeTransportCall *calls, int ncalls, int timeout_ms);
extern void se_transport_disconnect_all(void);

/*
 * A stream: one request whose answer is a sequence of rows (a file's
 * chunks), each handed to fn as it arrives -- the peer produces the next
 * while fn consumes this one, and nothing is gathered.  fn may raise
 * ERROR (the connection is then closed, cancelling the peer's query).
 * idle_timeout_ms bounds each wait for the next row.  Returns false with
 * err set on the peer's error or a transport failure.
 */
typedef void (*SeTransportRowFn) (void *arg, const char *data, size_t len);
extern bool se_transport_stream(const char *node, const char *conninfo, const char *action,
								const char *payload, size_t payload_len,
								SeTransportRowFn fn, void *arg, int idle_timeout_ms,
								SeError *err);

/*
 * Streams of one action from one node, up to nlanes at a time, each lane
 * on a connection of its own (the peer serves each in its own backend, so
 * several produce at once).  Whenever a lane is free -- at the start and
 * each time its stream ended well -- next(ctx, lane, req) gives its next
 * request (payload, and the arg fn gets with that stream's rows) or false
 * (the lane is done).  The first failure of any stream cancels the others
 * and is returned (false, err); fn or next may raise ERROR.
 */
typedef struct SeTransportStreamReq
{
	const char *payload;
	size_t		payload_len;
	void	   *arg;
} SeTransportStreamReq;
typedef bool (*SeTransportStreamNextFn) (void *ctx, int lane, SeTransportStreamReq *req);
extern bool se_transport_streams(const char *node, const char *conninfo, const char *action,
								 int nlanes, SeTransportStreamNextFn next, void *ctx,
								 SeTransportRowFn fn, int idle_timeout_ms, SeError *err);

/*
 * in actions.c: the server side.  A handler answers into reply, or fails
 * with err (sent back to the caller as the same ES error).
 */
typedef bool (*SeTransportHandler) (const char *payload, size_t len,
									StringInfo reply, SeError *err);
extern void se_transport_register(const char *action, SeTransportHandler fn);

/*
 * A stream action (search_engine._transport_stream): open parses the
 * payload and returns the state kept between rows (allocated in the
 * current, multi-call memory context; NULL with err set to refuse); next
 * appends one row's bytes to row and returns true, or returns false at
 * the end (err set: the error ends the stream).  Files it opens should be
 * transient files (OpenTransientFile), closed at the end or by the
 * transaction's abort when the caller goes away mid-stream.
 */
typedef void *(*SeTransportStreamOpen) (const char *payload, size_t len, SeError *err);
typedef bool (*SeTransportStreamNext) (void *state, StringInfo row, SeError *err);
extern void se_transport_register_stream(const char *action, SeTransportStreamOpen open,
										 SeTransportStreamNext next);

#endif							/* SE_TRANSPORT_H */
