/*-------------------------------------------------------------------------
 *
 * etcd_selftest.c
 *	  SQL-callable checks of the etcd client inside a backend (test only).
 *
 * The unit test runs the client standalone; these run the server build,
 * with its memory contexts, interrupt handling and context-reset cleanup.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <dirent.h>

#include "fmgr.h"
#include "utils/builtins.h"

#include "api/api.h"
#include "cluster/etcd.h"

PG_MODULE_MAGIC;

static SeEtcd *
connect_or_raise(text *endpoints, int timeout_ms)
{
	SeError		err;
	SeEtcd	   *c;

	se_error_init(&err);
	if (!se_etcd_global_init(&err) ||
		(c = se_etcd_connect(text_to_cstring(endpoints), timeout_ms, &err)) == NULL)
		se_raise(&err);
	return c;
}

#define CHECK(call) do { if (!(call)) se_raise(&err); } while (0)

/*
 * etcd_selftest_run(endpoints, prefix, n): put n keys under prefix, read
 * them back, claim a key by compare-and-swap twice, lease one key, watch
 * the prefix; returns what it saw, e.g. "range=10 cas=t,f lease=30,0 events=2".
 */
PG_FUNCTION_INFO_V1(etcd_selftest_run);
Datum
etcd_selftest_run(PG_FUNCTION_ARGS)
{
	SeEtcd	   *c = connect_or_raise(PG_GETARG_TEXT_PP(0), 2000);
	char	   *prefix = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int			n = PG_GETARG_INT32(2);
	SeError		err;
	SeEtcdKv   *kvs;
	int			nkvs,
				nev,
				got = 0;
	int64		rev,
				lease,
				ttl1,
				ttl2,
				crev;
	bool		first,
				second;
	char	   *leader = psprintf("%sleader", prefix);
	SeEtcdCmp	absent = {.key = leader, .target = SE_ETCD_CREATE, .op = SE_ETCD_EQUAL};
	SeEtcdOp	claim = {.kind = SE_ETCD_OP_PUT, .key = leader, .value = "me", .value_len = 2};
	SeEtcdOp	read = {.kind = SE_ETCD_OP_RANGE, .key = leader};
	SeEtcdWatch *w;
	SeEtcdEvent *evs;

	se_error_init(&err);
	CHECK(se_etcd_delete(c, prefix, true, NULL, NULL, &err));
	for (int i = 0; i < n; i++)
	{
		char	   *key = psprintf("%s%04d", prefix, i);

		CHECK(se_etcd_put(c, key, key, strlen(key), 0, NULL, &err));
	}
	CHECK(se_etcd_range(c, prefix, true, &kvs, &nkvs, &rev, &err));
	for (int i = 0; i < nkvs; i++)
		if (strcmp(kvs[i].key, kvs[i].value) != 0)
			elog(ERROR, "key %s holds %s", kvs[i].key, kvs[i].value);
	CHECK(se_etcd_txn(c, &absent, 1, &claim, 1, &read, 1, &first, NULL, NULL, NULL, &err));
	CHECK(se_etcd_txn(c, &absent, 1, &claim, 1, &read, 1, &second, NULL, &kvs, &nev, &err));
	if (nev != 1 || strcmp(kvs[0].value, "me") != 0)
		elog(ERROR, "the losing claim did not read the leader");
	CHECK(se_etcd_lease_grant(c, 30, &lease, &err));
	CHECK(se_etcd_lease_keepalive(c, lease, &ttl1, &err));
	CHECK(se_etcd_lease_revoke(c, lease, &err));
	CHECK(se_etcd_lease_keepalive(c, lease, &ttl2, &err));

	w = se_etcd_watch_start(c, prefix, rev + 1, &err);
	if (w == NULL)
		se_raise(&err);
	for (int tries = 0; got < 1 && tries < 20; tries++)
	{
		if (se_etcd_watch_poll(w, 250, &evs, &nev, NULL, &crev, &err) != SE_ETCD_WATCH_OK)
			se_raise(&err);
		got += nev;
	}
	se_etcd_watch_stop(w);
	se_etcd_close(c);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("range=%d cas=%s,%s lease=" INT64_FORMAT ","
											  INT64_FORMAT " events=%d", nkvs,
											  first ? "t" : "f", second ? "t" : "f",
											  ttl1, ttl2, got)));
}

/* etcd_selftest_range(endpoints, timeout_ms, key): one read, its value or NULL. */
PG_FUNCTION_INFO_V1(etcd_selftest_range);
Datum
etcd_selftest_range(PG_FUNCTION_ARGS)
{
	SeEtcd	   *c = connect_or_raise(PG_GETARG_TEXT_PP(0), PG_GETARG_INT32(1));
	SeError		err;
	SeEtcdKv   *kvs;
	int			n;

	se_error_init(&err);
	CHECK(se_etcd_range(c, text_to_cstring(PG_GETARG_TEXT_PP(2)), false, &kvs, &n, NULL, &err));
	se_etcd_close(c);
	if (n == 0)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text_with_len(kvs[0].value, kvs[0].value_len));
}

/*
 * etcd_selftest_abandon(endpoints, prefix): open a client and a watch, then
 * fail; the aborted query's context takes them, and their sockets, away.
 */
PG_FUNCTION_INFO_V1(etcd_selftest_abandon);
Datum
etcd_selftest_abandon(PG_FUNCTION_ARGS)
{
	SeEtcd	   *c = connect_or_raise(PG_GETARG_TEXT_PP(0), 2000);
	SeError		err;

	se_error_init(&err);
	if (se_etcd_watch_start(c, text_to_cstring(PG_GETARG_TEXT_PP(1)), 0, &err) == NULL)
		se_raise(&err);
	CHECK(se_etcd_put(c, "/abandon", "x", 1, 0, NULL, &err));
	elog(ERROR, "abandoning an etcd client and its watch");
	PG_RETURN_VOID();
}

/* etcd_selftest_sockets(): how many sockets this backend holds open. */
PG_FUNCTION_INFO_V1(etcd_selftest_sockets);
Datum
etcd_selftest_sockets(PG_FUNCTION_ARGS)
{
	DIR		   *d = opendir("/proc/self/fd");
	struct dirent *de;
	int			n = 0;

	if (d == NULL)
		elog(ERROR, "cannot list /proc/self/fd: %m");
	while ((de = readdir(d)) != NULL)
	{
		char		target[64];
		ssize_t		len = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);

		if (len > 0 && strncmp(target, "socket:", 7) == 0)
			n++;
	}
	closedir(d);
	PG_RETURN_INT32(n);
}
