/*-------------------------------------------------------------------------
 *
 * etcd.h
 *	  A client for etcd's v3 JSON gateway (libcurl): key-value, transactions,
 *	  leases and a non-blocking watch stream.
 *
 * Consensus (election, membership, the versioned cluster state) is etcd's;
 * the coordinator worker reaches it through this client.  Every call is
 * bounded by the connection's timeout and fails over across the endpoints,
 * starting from the last one that answered; a connect failure, a timeout
 * or a 5xx moves on to the next (a member without a leader answers 503, as
 * every request requires one).  When every endpoint failed the error is
 * status 503, type "etcd_unavailable_exception"; when etcd answered with an
 * error it is type "etcd_exception" (reason: endpoint, HTTP status, etcd's
 * message).
 *
 * The module is pure (SeError, no ereport, no catalog access) and compiles
 * both in the server and standalone (SE_FRONTEND) for unit tests, so its
 * results are palloc'd arrays rather than Lists.  Everything returned is
 * palloc'd in CurrentMemoryContext at the time of the call; the SeEtcd and
 * SeEtcdWatch handles live in the context current when they were made, and
 * resetting or deleting that context closes them (their sockets included),
 * so an error unwinding past them leaks nothing.  Stop a client's watches
 * before closing the client.  Keys are NUL-terminated strings; values are
 * byte strings with a length (and a NUL after them, for convenience).
 *
 * A mutation that timed out may have been applied before the client moved
 * on, and is then sent again to the next endpoint: write transactions that
 * can recognise their own earlier success (compare on a value only this
 * node writes; read the key in the else branch).
 *
 * In the server a pending cancel or die aborts a transfer, and the call
 * then runs CHECK_FOR_INTERRUPTS.  Not supported yet: TLS client
 * certificates and etcd authentication (https:// endpoints get libcurl's
 * defaults, the system's CAs; untested).
 *
 * Call se_etcd_global_init() once per process before the first connect
 * (curl_global_init is not thread-safe and must precede any other curl
 * call).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_ETCD_H
#define SE_CLUSTER_ETCD_H

#include "util/se_common.h"

/* Error types (SeError.type) this client sets. */
#define SE_ETCD_UNAVAILABLE	"etcd_unavailable_exception"	/* 503: no endpoint answered */
#define SE_ETCD_ERROR		"etcd_exception"	/* etcd answered an error */

typedef struct SeEtcd SeEtcd;

typedef struct SeEtcdKv
{
	char	   *key;
	char	   *value;			/* value_len bytes, NUL-terminated */
	int			value_len;
	int64		create_revision;
	int64		mod_revision;
	int64		version;
	int64		lease;			/* 0 = none */
} SeEtcdKv;

/* Once per process, before any other call; false (and err) if curl fails. */
extern bool se_etcd_global_init(SeError *err);

/*
 * endpoints: comma-separated base URLs, e.g.
 * "http://127.0.0.1:2379,http://10.0.0.2:2379"; timeout_ms bounds every
 * unary request on one endpoint (connect included).  Returns NULL (and err,
 * status 400 illegal_argument_exception) on a malformed list; does not
 * contact etcd.
 */
extern SeEtcd *se_etcd_connect(const char *endpoints, int timeout_ms, SeError *err);
extern void se_etcd_close(SeEtcd *c);

/* The endpoint that answered last (or will be tried first). */
extern const char *se_etcd_current_endpoint(const SeEtcd *c);

/*
 * Read key (prefix: every key starting with key; key "" with prefix: all
 * keys).  *kvs gets a palloc'd array of *nkvs entries sorted by key (NULL
 * when none); *revision (may be NULL) the store revision the read saw.
 */
extern bool se_etcd_range(SeEtcd *c, const char *key, bool prefix,
						  SeEtcdKv **kvs, int *nkvs, int64 *revision,
						  SeError *err);

/* Write key = value[0..value_len), attached to lease (0 = none). */
extern bool se_etcd_put(SeEtcd *c, const char *key, const char *value,
						int value_len, int64 lease, int64 *revision,
						SeError *err);

/* Delete key (or the prefix); *deleted (may be NULL) counts the keys. */
extern bool se_etcd_delete(SeEtcd *c, const char *key, bool prefix,
						   int64 *deleted, int64 *revision, SeError *err);

/* Transactions: if every compare holds, run then_ops, else else_ops. */
typedef enum SeEtcdTarget
{
	SE_ETCD_CREATE,				/* create_revision (0: key absent) */
	SE_ETCD_MOD,				/* mod_revision */
	SE_ETCD_VERSION,			/* version (0: key absent) */
	SE_ETCD_VALUE,				/* value bytes */
	SE_ETCD_LEASE				/* lease id */
} SeEtcdTarget;

typedef enum SeEtcdCmpOp
{
	SE_ETCD_EQUAL,
	SE_ETCD_NOT_EQUAL,
	SE_ETCD_GREATER,
	SE_ETCD_LESS
} SeEtcdCmpOp;

typedef struct SeEtcdCmp
{
	const char *key;
	SeEtcdTarget target;
	SeEtcdCmpOp op;
	int64		number;			/* CREATE, MOD, VERSION, LEASE */
	const char *value;			/* VALUE */
	int			value_len;
} SeEtcdCmp;

typedef enum SeEtcdOpKind
{
	SE_ETCD_OP_PUT,
	SE_ETCD_OP_DELETE,
	SE_ETCD_OP_RANGE
} SeEtcdOpKind;

typedef struct SeEtcdOp
{
	SeEtcdOpKind kind;
	const char *key;
	const char *value;			/* PUT */
	int			value_len;		/* PUT */
	int64		lease;			/* PUT; 0 = none */
	bool		prefix;			/* DELETE, RANGE */
} SeEtcdOp;

/*
 * *succeeded tells which branch ran; *range_kvs (may be NULL) gets the kvs
 * of the RANGE ops of the branch that ran, concatenated in op order.
 */
extern bool se_etcd_txn(SeEtcd *c,
						const SeEtcdCmp *cmps, int ncmp,
						const SeEtcdOp *then_ops, int nthen,
						const SeEtcdOp *else_ops, int nelse,
						bool *succeeded, int64 *revision,
						SeEtcdKv **range_kvs, int *nrange_kvs,
						SeError *err);

/* Leases */
extern bool se_etcd_lease_grant(SeEtcd *c, int ttl_s, int64 *lease_id,
								SeError *err);

/* One keep-alive; *ttl_left = 0 means the lease is gone (expired/revoked). */
extern bool se_etcd_lease_keepalive(SeEtcd *c, int64 lease_id,
									int64 *ttl_left, SeError *err);

/* Revoke (deletes the keys attached); revoking a gone lease is not an error. */
extern bool se_etcd_lease_revoke(SeEtcd *c, int64 lease_id, SeError *err);

/*
 * Watch: one streaming /v3/watch on a prefix from start_revision (0: from
 * now), driven without blocking (curl multi).
 */
typedef struct SeEtcdWatch SeEtcdWatch;

typedef struct SeEtcdEvent
{
	bool		is_delete;
	SeEtcdKv	kv;				/* for a delete: key and mod_revision only */
} SeEtcdEvent;

typedef enum SeEtcdWatchStatus
{
	SE_ETCD_WATCH_OK,
	SE_ETCD_WATCH_COMPACTED,
	SE_ETCD_WATCH_FAILED
} SeEtcdWatchStatus;

/*
 * Open the stream and wait for etcd's "created" acknowledgement, up to the
 * timeout on each endpoint, failing over like a unary call; returns NULL
 * and err (503 etcd_unavailable_exception, or etcd_exception when etcd
 * refused the watch) if no endpoint accepts it.  Like every call, the
 * watch asks the member to require a leader: etcd cancels it should the
 * member lose its leader (a FAILED poll).
 */
extern SeEtcdWatch *se_etcd_watch_start(SeEtcd *c, const char *prefix,
										int64 start_revision, SeError *err);

/*
 * Wait up to timeout_ms (0: just look) for events.  OK: *events gets a
 * palloc'd array of *nevents events in revision order (NULL/0 when none
 * arrived); *revision (may be NULL) is the latest header revision the
 * watch has seen, so a new watch can start at *revision + 1.
 * COMPACTED: start_revision was compacted away; *compact_revision (may be
 * NULL) is etcd's compact revision; the caller re-reads the prefix and
 * starts a new watch.  FAILED (err: 503 etcd_unavailable_exception): the
 * stream broke, etcd cancelled it, or a unary call on this client found
 * the watch's endpoint failing and moved on; the caller stops this watch
 * and starts another (which goes to another endpoint).  Events received
 * before a terminal status are returned with OK first; once terminal, every
 * later poll answers the same.
 */
extern SeEtcdWatchStatus se_etcd_watch_poll(SeEtcdWatch *w, int timeout_ms,
											SeEtcdEvent **events, int *nevents,
											int64 *revision,
											int64 *compact_revision,
											SeError *err);

/*
 * The stream's socket for a WaitEventSet (WL_SOCKET_READABLE), -1 while
 * there is none; it may change after a poll, so ask again each time.
 */
extern int	se_etcd_watch_socket(SeEtcdWatch *w);
extern void se_etcd_watch_stop(SeEtcdWatch *w);

#endif							/* SE_CLUSTER_ETCD_H */
