/* SOURCES: src/cluster/etcd.c src/util/json.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_etcd.c
 *	  Tests of the etcd v3 gateway client, against a fake and a real etcd.
 *
 * The same key-value, transaction, lease and watch checks run twice: on
 * fake_etcd.py (an in-memory gateway this program starts) and on a real
 * three-member etcd cluster started on loopback ports in a temporary
 * directory (skipped only when no `etcd` binary is on the PATH).  The fake
 * then injects what a real server will not do on demand: 5xx answers,
 * stalls past the timeout, streams cut mid-message, messages split across
 * chunks or packed two to a chunk; an endpoint nobody listens on proves
 * the failover.  Last, two real members are killed: the survivor, without
 * a leader, must cancel the client's watch and refuse its reads at once.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <curl/curl.h>
#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster/etcd.h"
#include "util/json.h"
#include "unit_test.h"

static SeError err;

#define E()		(se_error_init(&err), &err)
#define REASON	(err.reason ? err.reason : "(none)")

static double
now_s(void)
{
	return ut_clock_sec(CLOCK_MONOTONIC);
}

/* A loopback port nobody listens on (just released by the kernel). */
static int
free_port(void)
{
	int			s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {0};
	socklen_t	len = sizeof(a);

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *) &a, sizeof(a)) != 0 ||
		getsockname(s, (struct sockaddr *) &a, &len) != 0)
	{
		perror("free_port");
		exit(2);
	}
	close(s);
	return ntohs(a.sin_port);
}

/* ---- raw HTTP, for controlling the fake and compacting ---- */

static size_t
collect_cb(char *p, size_t size, size_t n, void *arg)
{
	appendBinaryStringInfo((StringInfo) arg, p, size * n);
	return size * n;
}

/* POST (or GET when body is NULL) url; returns the HTTP status, answer in out. */
static long
http(const char *url, const char *body, StringInfo out)
{
	CURL	   *h = curl_easy_init();
	long		status = 0;

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	return status;
}

static void
control(const char *base, const char *json)
{
	StringInfoData out;
	char	   *url = psprintf("%s/fake/control", base);

	initStringInfo(&out);
	if (http(url, json, &out) != 200)
	{
		fprintf(stderr, "fake etcd control %s failed\n", json);
		exit(2);
	}
}

/* The fake's counter named name. */
static int64
fake_stat(const char *base, const char *name)
{
	StringInfoData out;
	SeError		perr;
	SeJson	   *v;

	initStringInfo(&out);
	http(psprintf("%s/fake/stats", base), NULL, &out);
	se_error_init(&perr);
	v = se_json_parse(out.data, out.len, NULL, &perr);
	v = v ? se_json_get(v, name) : NULL;
	return v && v->type == SE_JSON_NUMBER ? v->u.n.i : -1;
}

static void
compact(const char *base, int64 rev)
{
	StringInfoData out;
	long		st;

	initStringInfo(&out);
	st = http(psprintf("%s/v3/kv/compaction", base),
			  psprintf("{\"revision\":\"" INT64_FORMAT "\",\"physical\":true}", rev), &out);
	UT_CHECK(st == 200, "compaction at " INT64_FORMAT ": HTTP %ld %s", rev, st, out.data);
}

/* ---- the shared checks ---- */

static SeEtcdKv *
get1(SeEtcd *c, const char *key)
{
	SeEtcdKv   *kvs;
	int			n;

	if (!se_etcd_range(c, key, false, &kvs, &n, NULL, E()))
	{
		UT_CHECK(false, "range %s: %s", key, REASON);
		return NULL;
	}
	return n == 1 ? kvs : NULL;
}

static void
check_kv(SeEtcd *c)
{
	int64		rev1,
				rev2,
				rev3,
				deleted = -1;
	SeEtcdKv   *kvs,
			   *kv;
	int			n;
	static const char binary[] = {'a', '\0', '\xff', '"', '\\', 'z'};

	UT_CHECK(se_etcd_delete(c, "/t/", true, NULL, NULL, E()), "clean: %s", REASON);
	UT_CHECK(se_etcd_put(c, "/t/a", "one", 3, 0, &rev1, E()), "put: %s", REASON);
	UT_CHECK(se_etcd_put(c, "/t/b", binary, sizeof(binary), 0, &rev2, E()), "put: %s", REASON);
	UT_CHECK(rev2 == rev1 + 1, "revisions " INT64_FORMAT " then " INT64_FORMAT, rev1, rev2);
	UT_CHECK(se_etcd_put(c, "/t/a", "two", 3, 0, &rev3, E()), "put: %s", REASON);
	UT_CHECK(se_etcd_put(c, "/tz", "outside", 7, 0, NULL, E()), "put: %s", REASON);

	kv = get1(c, "/t/a");
	UT_CHECK(kv && kv->value_len == 3 && strcmp(kv->value, "two") == 0 &&
			 kv->create_revision == rev1 && kv->mod_revision == rev3 &&
			 kv->version == 2 && kv->lease == 0, "read back /t/a");
	kv = get1(c, "/t/b");
	UT_CHECK(kv && kv->value_len == sizeof(binary) &&
			 memcmp(kv->value, binary, sizeof(binary)) == 0, "binary value round trip");
	UT_CHECK(get1(c, "/t/none") == NULL, "absent key reads as nothing");

	UT_CHECK(se_etcd_range(c, "/t/", true, &kvs, &n, &rev1, E()), "range: %s", REASON);
	UT_CHECK(n == 2 && strcmp(kvs[0].key, "/t/a") == 0 && strcmp(kvs[1].key, "/t/b") == 0,
			 "prefix range sees /t/a, /t/b and not /tz (n=%d)", n);
	UT_CHECK(rev1 >= rev3 + 1, "range revision " INT64_FORMAT, rev1);
	UT_CHECK(se_etcd_range(c, "", true, &kvs, &n, NULL, E()) && n >= 3, "range of everything");

	UT_CHECK(se_etcd_delete(c, "/t/", true, &deleted, &rev2, E()), "delete: %s", REASON);
	UT_CHECK(deleted == 2 && rev2 == rev1 + 1, "deleted " INT64_FORMAT, deleted);
	UT_CHECK(se_etcd_range(c, "/t/", true, &kvs, &n, NULL, E()) && n == 0 && kvs == NULL,
			 "prefix empty after delete");
	UT_CHECK(se_etcd_delete(c, "/tz", false, &deleted, NULL, E()) && deleted == 1,
			 "single delete");
}

/* Leader election's compare-and-swap: the first create wins, the second reads. */
static void
check_txn(SeEtcd *c)
{
	SeEtcdCmp	absent = {.key = "/t/leader", .target = SE_ETCD_CREATE, .op = SE_ETCD_EQUAL,
	.number = 0};
	SeEtcdOp	claim_n1[] = {{.kind = SE_ETCD_OP_PUT, .key = "/t/leader", .value = "n1", .value_len = 2}};
	SeEtcdOp	claim_n2[] = {{.kind = SE_ETCD_OP_PUT, .key = "/t/leader", .value = "n2", .value_len = 2}};
	SeEtcdOp	read[] = {{.kind = SE_ETCD_OP_RANGE, .key = "/t/leader"},
	{.kind = SE_ETCD_OP_RANGE, .key = "/t/", .prefix = true}};
	SeEtcdKv   *kvs;
	int			n;
	bool		ok;
	int64		rev;
	SeEtcdCmp	is_n2 = {.key = "/t/leader", .target = SE_ETCD_VALUE, .op = SE_ETCD_EQUAL,
	.value = "n2", .value_len = 2};
	SeEtcdCmp	newer = {.key = "/t/leader", .target = SE_ETCD_MOD, .op = SE_ETCD_GREATER};
	SeEtcdOp	del[] = {{.kind = SE_ETCD_OP_DELETE, .key = "/t/", .prefix = true}};

	UT_CHECK(se_etcd_txn(c, &absent, 1, claim_n1, 1, read, 2, &ok, &rev, &kvs, &n, E()),
			 "txn: %s", REASON);
	UT_CHECK(ok && n == 0, "the first claim wins (ok=%d n=%d)", ok, n);
	UT_CHECK(se_etcd_txn(c, &absent, 1, claim_n2, 1, read, 2, &ok, &rev, &kvs, &n, E()),
			 "txn: %s", REASON);
	UT_CHECK(!ok && n == 2 && strcmp(kvs[0].value, "n1") == 0 &&
			 strcmp(kvs[1].key, "/t/leader") == 0,
			 "the second claim fails and reads both ranges of the else branch (n=%d)", n);
	UT_CHECK(se_etcd_txn(c, &is_n2, 1, del, 1, NULL, 0, &ok, NULL, NULL, NULL, E()) && !ok,
			 "value compare: n1 is not n2");
	newer.number = kvs[0].mod_revision - 1;
	UT_CHECK(se_etcd_txn(c, &newer, 1, del, 1, NULL, 0, &ok, NULL, &kvs, &n, E()) && ok && n == 0,
			 "mod_revision GREATER holds and the delete runs");
	UT_CHECK(get1(c, "/t/leader") == NULL, "the then-branch delete happened");
}

static void
check_lease(SeEtcd *c)
{
	int64		lease,
				lease2,
				ttl = -1;
	SeEtcdKv   *kv;
	double		t0;

	UT_CHECK(se_etcd_lease_grant(c, 30, &lease, E()) && lease > 0, "grant: %s", REASON);
	UT_CHECK(se_etcd_put(c, "/t/node1", "up", 2, lease, NULL, E()), "leased put: %s", REASON);
	kv = get1(c, "/t/node1");
	UT_CHECK(kv && kv->lease == lease, "the key carries the lease");
	UT_CHECK(se_etcd_lease_keepalive(c, lease, &ttl, E()) && ttl == 30,
			 "keepalive ttl " INT64_FORMAT ": %s", ttl, REASON);
	UT_CHECK(se_etcd_lease_revoke(c, lease, E()), "revoke: %s", REASON);
	UT_CHECK(get1(c, "/t/node1") == NULL, "revoking deletes the leased key");
	UT_CHECK(se_etcd_lease_keepalive(c, lease, &ttl, E()) && ttl == 0,
			 "a revoked lease keeps alive to ttl 0 (" INT64_FORMAT "): %s", ttl, REASON);
	UT_CHECK(se_etcd_lease_revoke(c, lease, E()), "revoking twice is fine: %s", REASON);
	UT_CHECK(!se_etcd_put(c, "/t/node1", "up", 2, lease, NULL, E()) &&
			 err.type && strcmp(err.type, SE_ETCD_ERROR) == 0 &&
			 strstr(err.reason, "lease not found") != NULL,
			 "a put on a gone lease is etcd's error: %s", REASON);

	/* expiry: a short lease not kept alive takes its key away */
	UT_CHECK(se_etcd_lease_grant(c, 2, &lease2, E()), "grant: %s", REASON);
	UT_CHECK(se_etcd_put(c, "/t/node2", "up", 2, lease2, NULL, E()), "put: %s", REASON);
	t0 = now_s();
	while (get1(c, "/t/node2") != NULL && now_s() - t0 < 10)
		usleep(100 * 1000);
	UT_CHECK(get1(c, "/t/node2") == NULL && now_s() - t0 >= 1.0,
			 "the key expired with its lease after %.1f s", now_s() - t0);
	UT_CHECK(se_etcd_lease_keepalive(c, lease2, &ttl, E()) && ttl == 0,
			 "an expired lease keeps alive to ttl 0");
}

/* Poll until want events arrived (or 5 s passed). */
static int
collect(SeEtcdWatch *w, SeEtcdEvent *out, int want, SeEtcdWatchStatus *st)
{
	int			got = 0;
	double		t0 = now_s();
	int64		rev = 0,
				crev = 0;

	*st = SE_ETCD_WATCH_OK;
	while (got < want && now_s() - t0 < 5)
	{
		SeEtcdEvent *evs;
		int			n;

		*st = se_etcd_watch_poll(w, 200, &evs, &n, &rev, &crev, E());
		if (*st != SE_ETCD_WATCH_OK)
			break;
		for (int i = 0; i < n && got < want; i++)
			out[got++] = evs[i];
	}
	return got;
}

static void
check_watch(SeEtcd *c, const char *base)
{
	SeEtcdWatch *w;
	SeEtcdEvent ev[8];
	SeEtcdEvent *evs;
	SeEtcdWatchStatus st;
	int			n;
	int64		rev,
				before,
				start,
				crev = 0;
	double		t0;

	UT_CHECK(se_etcd_put(c, "/w/before", "x", 1, 0, &before, E()), "put: %s", REASON);
	w = se_etcd_watch_start(c, "/w/", 0, E());
	UT_CHECK(w != NULL, "watch start: %s", REASON);
	if (w == NULL)
		return;
	UT_CHECK(se_etcd_watch_socket(w) >= 0, "the watch has a socket to wait on");
	t0 = now_s();
	st = se_etcd_watch_poll(w, 300, &evs, &n, &rev, &crev, E());
	UT_CHECK(st == SE_ETCD_WATCH_OK && n == 0, "a quiet watch polls empty (st=%d n=%d)", st, n);
	UT_CHECK(now_s() - t0 >= 0.25 && now_s() - t0 < 3, "the poll waited its timeout: %.2f s",
			 now_s() - t0);

	se_etcd_put(c, "/w/a", "1", 1, 0, NULL, E());
	se_etcd_put(c, "/x/other", "1", 1, 0, NULL, E());
	se_etcd_put(c, "/w/b", "2", 1, 0, NULL, E());
	se_etcd_delete(c, "/w/a", false, NULL, &rev, E());
	n = collect(w, ev, 3, &st);
	UT_CHECK(n == 3 && st == SE_ETCD_WATCH_OK, "three events on the prefix (n=%d st=%d: %s)",
			 n, st, REASON);
	st = se_etcd_watch_poll(w, 0, &evs, &n, &start, &crev, E());
	UT_CHECK(st == SE_ETCD_WATCH_OK && start == rev, "the watch has seen revision " INT64_FORMAT
			 " (" INT64_FORMAT ")", rev, start);
	if (n == 3)
	{
		UT_CHECK(!ev[0].is_delete && strcmp(ev[0].kv.key, "/w/a") == 0 &&
				 strcmp(ev[0].kv.value, "1") == 0, "put /w/a");
		UT_CHECK(!ev[1].is_delete && strcmp(ev[1].kv.key, "/w/b") == 0, "put /w/b");
		UT_CHECK(ev[2].is_delete && strcmp(ev[2].kv.key, "/w/a") == 0 &&
				 ev[2].kv.mod_revision == rev, "delete /w/a at " INT64_FORMAT, rev);
		UT_CHECK(ev[0].kv.mod_revision < ev[1].kv.mod_revision &&
				 ev[1].kv.mod_revision < ev[2].kv.mod_revision, "in revision order");
	}
	se_etcd_watch_stop(w);

	/* history replays from start_revision */
	start = before;
	w = se_etcd_watch_start(c, "/w/", start, E());
	n = w ? collect(w, ev, 4, &st) : 0;
	UT_CHECK(n == 4 && strcmp(ev[0].kv.key, "/w/before") == 0 && ev[3].is_delete,
			 "a watch from revision " INT64_FORMAT " replays 4 events (n=%d)", start, n);
	se_etcd_watch_stop(w);

	/* compaction: the old revision is gone, the caller must re-read */
	se_etcd_put(c, "/w/c", "3", 1, 0, &rev, E());
	compact(base, rev);
	w = se_etcd_watch_start(c, "/w/", start, E());
	UT_CHECK(w != NULL, "a compacted watch still starts: %s", REASON);
	if (w)
	{
		t0 = now_s();
		do
			st = se_etcd_watch_poll(w, 200, &evs, &n, NULL, &crev, E());
		while (st == SE_ETCD_WATCH_OK && now_s() - t0 < 5);
		UT_CHECK(st == SE_ETCD_WATCH_COMPACTED && crev == rev,
				 "COMPACTED at " INT64_FORMAT " (st=%d crev=" INT64_FORMAT ")", rev, st, crev);
		crev = 0;
		st = se_etcd_watch_poll(w, 0, &evs, &n, NULL, &crev, E());
		UT_CHECK(st == SE_ETCD_WATCH_COMPACTED && crev == rev, "and stays so");
		se_etcd_watch_stop(w);
	}
	se_etcd_delete(c, "/w/", true, NULL, NULL, E());
}

static void
check_all(const char *endpoints, const char *base)
{
	SeEtcd	   *c = se_etcd_connect(endpoints, 2000, E());

	UT_CHECK(c != NULL, "connect %s: %s", endpoints, REASON);
	if (c == NULL)
		return;
	check_kv(c);
	check_txn(c);
	check_lease(c);
	check_watch(c, base);
	se_etcd_close(c);
}

/* ---- fault injection on the fake ---- */

static void
check_connect_args(void)
{
	UT_CHECK(se_etcd_connect("", 1000, E()) == NULL &&
			 strcmp(err.type, "illegal_argument_exception") == 0, "no endpoint");
	UT_CHECK(se_etcd_connect("127.0.0.1:2379", 1000, E()) == NULL &&
			 strstr(err.reason, "127.0.0.1:2379") != NULL, "no scheme: %s", REASON);
	UT_CHECK(se_etcd_connect("http://a", 0, E()) == NULL, "no timeout");
}

static void
check_faults(const char *base, int port)
{
	int			down = free_port();
	char	   *down_url = psprintf("http://127.0.0.1:%d", down);
	char	   *twice = psprintf("%s,http://localhost:%d", base, port);
	SeEtcd	   *c;
	int64		reqs,
				conns;
	double		t0;
	SeEtcdWatch *w;
	SeEtcdEvent ev[8];
	SeEtcdWatchStatus st;
	int64		rev;
	int			n;

	/* failover past a dead endpoint, then start from the one that worked */
	c = se_etcd_connect(psprintf("%s,%s", down_url, base), 1000, E());
	UT_CHECK(se_etcd_put(c, "/f/a", "1", 1, 0, NULL, E()), "put past a dead endpoint: %s", REASON);
	UT_CHECK(strcmp(se_etcd_current_endpoint(c), base) == 0, "now on %s",
			 se_etcd_current_endpoint(c));
	conns = fake_stat(base, "connections");
	for (int i = 0; i < 10; i++)
		se_etcd_range(c, "/f/a", false, &(SeEtcdKv *) {NULL}, &n, NULL, E());
	/* the one new connection is fake_stat's own */
	UT_CHECK((n = fake_stat(base, "connections")) == conns + 1,
			 "ten calls reuse one kept-alive connection (" INT64_FORMAT " new)", n - conns - 1);
	se_etcd_close(c);

	/* nothing up: unavailable, naming every endpoint */
	c = se_etcd_connect(psprintf("%s,http://127.0.0.1:%d", down_url, free_port()), 1000, E());
	UT_CHECK(!se_etcd_put(c, "/f/a", "1", 1, 0, NULL, E()) && err.status == 503 &&
			 strcmp(err.type, SE_ETCD_UNAVAILABLE) == 0 && strstr(err.reason, down_url),
			 "all down: %s", REASON);
	se_etcd_close(c);

	/* a 500 moves on; alone it is unavailable */
	c = se_etcd_connect(twice, 1000, E());
	reqs = fake_stat(base, "requests");
	control(base, "{\"fail\": 1, \"status\": 500}");
	UT_CHECK(se_etcd_put(c, "/f/a", "2", 1, 0, NULL, E()), "a 500 fails over: %s", REASON);
	UT_CHECK(fake_stat(base, "requests") == reqs + 2, "two requests for one put");
	UT_CHECK(strstr(se_etcd_current_endpoint(c), "localhost") != NULL, "on the second endpoint");
	se_etcd_close(c);
	c = se_etcd_connect(base, 1000, E());
	control(base, "{\"fail\": 1, \"status\": 503}");
	UT_CHECK(!se_etcd_range(c, "/f/a", false, &(SeEtcdKv *) {NULL}, &n, NULL, E()) &&
			 strcmp(err.type, SE_ETCD_UNAVAILABLE) == 0 && strstr(err.reason, "HTTP 503") &&
			 strstr(err.reason, "injected failure"), "503 alone: %s", REASON);

	/* a 4xx is etcd's answer: no failover, etcd's message kept */
	control(base, "{\"fail\": 1, \"status\": 400}");
	UT_CHECK(!se_etcd_put(c, "/f/a", "1", 1, 0, NULL, E()) &&
			 strcmp(err.type, SE_ETCD_ERROR) == 0 && strstr(err.reason, "HTTP 400") &&
			 strstr(err.reason, "injected failure"), "4xx: %s", REASON);
	se_etcd_close(c);

	/* a stall past the timeout: bounded, then the next endpoint */
	c = se_etcd_connect(base, 500, E());
	control(base, "{\"hang\": 1, \"ms\": 3000}");
	t0 = now_s();
	UT_CHECK(!se_etcd_put(c, "/f/a", "1", 1, 0, NULL, E()) &&
			 strcmp(err.type, SE_ETCD_UNAVAILABLE) == 0 && strstr(err.reason, "timed out"),
			 "a stall times out: %s", REASON);
	/* 0.5 s, well before the 3 s stall ends (slack for a loaded machine) */
	UT_CHECK(now_s() - t0 < 2.5, "within the timeout: %.2f s", now_s() - t0);
	se_etcd_close(c);
	c = se_etcd_connect(twice, 500, E());
	control(base, "{\"hang\": 1, \"ms\": 3000}");
	t0 = now_s();
	UT_CHECK(se_etcd_put(c, "/f/a", "1", 1, 0, NULL, E()), "a stall fails over: %s", REASON);
	UT_CHECK(now_s() - t0 < 2.5, "after one timeout: %.2f s", now_s() - t0);

	/* watch: failover at start, when the stream stalls, or answers 5xx */
	se_etcd_close(c);
	c = se_etcd_connect(psprintf("%s,%s", down_url, base), 500, E());
	w = se_etcd_watch_start(c, "/f/", 0, E());
	UT_CHECK(w != NULL, "the watch starts past a dead endpoint: %s", REASON);
	se_etcd_watch_stop(w);
	se_etcd_close(c);
	c = se_etcd_connect(twice, 500, E());
	control(base, "{\"hang\": 1, \"ms\": 2000}");
	w = se_etcd_watch_start(c, "/f/", 0, E());
	UT_CHECK(w != NULL && strstr(se_etcd_current_endpoint(c), "localhost"),
			 "the watch starts past a stalled endpoint: %s", REASON);
	se_etcd_watch_stop(w);
	control(base, "{\"fail\": 2, \"status\": 503}");
	w = se_etcd_watch_start(c, "/f/", 0, E());
	UT_CHECK(w == NULL && strcmp(err.type, SE_ETCD_UNAVAILABLE) == 0 &&
			 strstr(err.reason, "HTTP 503"), "no endpoint accepts the watch: %s", REASON);

	/* a refusal is etcd's answer, unless the member has no leader */
	control(base, "{\"watch\": \"error:etcdserver: no leader\"}");
	w = se_etcd_watch_start(c, "/f/", 0, E());
	UT_CHECK(w == NULL && strcmp(err.type, SE_ETCD_UNAVAILABLE) == 0 &&
			 strstr(err.reason, "[http://localhost") && strstr(err.reason, "[http://127.0.0.1") &&
			 strstr(err.reason, "no leader"), "members without a leader are passed over: %s",
			 REASON);
	control(base, "{\"watch\": \"error:etcdserver: permission denied\"}");
	w = se_etcd_watch_start(c, "/f/", 0, E());
	UT_CHECK(w == NULL && strcmp(err.type, SE_ETCD_ERROR) == 0 &&
			 strstr(err.reason, "permission denied"), "a refused watch: %s", REASON);
	control(base, "{\"watch\": \"normal\"}");
	se_etcd_close(c);

	/* framing: split messages, two per chunk */
	c = se_etcd_connect(base, 1000, E());
	se_etcd_delete(c, "/f/", true, NULL, NULL, E());
	se_etcd_put(c, "/f/1", "a", 1, 0, &rev, E());
	control(base, "{\"watch\": \"split\"}");
	w = se_etcd_watch_start(c, "/f/", rev, E());
	UT_CHECK(w != NULL, "split watch: %s", REASON);
	se_etcd_put(c, "/f/2", "b", 1, 0, NULL, E());
	n = w ? collect(w, ev, 2, &st) : 0;
	UT_CHECK(n == 2 && strcmp(ev[0].kv.key, "/f/1") == 0 && strcmp(ev[1].kv.key, "/f/2") == 0,
			 "messages split across chunks read whole (n=%d)", n);
	se_etcd_watch_stop(w);

	control(base, "{\"watch\": \"pair\"}");
	se_etcd_put(c, "/f/3", "c", 1, 0, NULL, E());
	w = se_etcd_watch_start(c, "/f/", rev, E());
	UT_CHECK(w != NULL, "paired watch: %s", REASON);
	n = w ? collect(w, ev, 3, &st) : 0;
	UT_CHECK(n == 3 && strcmp(ev[2].kv.key, "/f/3") == 0,
			 "two messages per chunk are both read (n=%d)", n);
	se_etcd_watch_stop(w);

	/* a stream cut mid-message fails the watch and moves the client on */
	se_etcd_close(c);
	c = se_etcd_connect(twice, 1000, E());
	control(base, "{\"watch\": \"close\"}");
	w = se_etcd_watch_start(c, "/f/", 0, E());
	UT_CHECK(w != NULL, "watch: %s", REASON);
	n = w ? collect(w, ev, 1, &st) : 0;
	UT_CHECK(n == 0 && st == SE_ETCD_WATCH_FAILED && strcmp(err.type, SE_ETCD_UNAVAILABLE) == 0,
			 "a cut stream fails the watch (st=%d): %s", st, REASON);
	UT_CHECK(strstr(se_etcd_current_endpoint(c), "localhost") != NULL,
			 "the next watch goes to the other endpoint");
	st = se_etcd_watch_poll(w, 0, &(SeEtcdEvent *) {NULL}, &n, NULL, NULL, E());
	UT_CHECK(st == SE_ETCD_WATCH_FAILED, "a failed watch stays failed");
	se_etcd_watch_stop(w);

	/* a quiet watch follows the client off an endpoint a call found failing */
	control(base, "{\"watch\": \"normal\"}");
	w = se_etcd_watch_start(c, "/f/", 0, E());
	UT_CHECK(w != NULL && strstr(se_etcd_current_endpoint(c), "localhost"), "watch on localhost");
	control(base, "{\"fail\": 1, \"status\": 503}");
	UT_CHECK(se_etcd_put(c, "/f/moved", "1", 1, 0, NULL, E()), "put: %s", REASON);
	/*
	 * The put's event arrives before the watch notices the move when the
	 * endpoint is quick, or not at all when the poll sees the move first (a
	 * loaded machine): either way the watch then fails, and its caller
	 * starts it again from its revision on the new endpoint, losing nothing.
	 */
	n = w ? collect(w, ev, 1, &st) : 0;
	if (n == 1)
	{
		UT_CHECK(strcmp(ev[0].kv.key, "/f/moved") == 0, "the put's event arrived first");
		n = w ? collect(w, ev, 1, &st) : 0;
	}
	UT_CHECK(n == 0 && st == SE_ETCD_WATCH_FAILED && strstr(REASON, "must follow"),
			 "then the watch fails: %s", REASON);
	se_etcd_watch_stop(w);
	UT_CHECK(fake_stat(base, "watches") >= 8 && fake_stat(base, "no_hasleader") == 0,
			 "every call and watch asks for a member with a leader");
	control(base, "{\"watch\": \"normal\"}");
	se_etcd_close(c);
}

/* ---- servers ---- */

static pid_t
spawn(char *const argv[], int *stdin_fd, int *stdout_fd, const char *log)
{
	int			in[2],
				out[2];
	pid_t		pid;

	if (pipe(in) != 0 || pipe(out) != 0)
		exit(2);
	pid = fork();
	if (pid == 0)
	{
		dup2(in[0], 0);
		if (log)
		{
			FILE	   *f = freopen(log, "w", stdout);

			(void) f;
			dup2(1, 2);
		}
		else
			dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*stdin_fd = in[1];
	*stdout_fd = out[0];
	return pid;
}

static bool
command_exists(const char *name)
{
	char	   *path = getenv("PATH") ? strdup(getenv("PATH")) : strdup("/usr/bin");
	bool		found = false;

	for (char *dir = strtok(path, ":"); dir && !found; dir = strtok(NULL, ":"))
		found = access(psprintf("%s/%s", dir, name), X_OK) == 0;
	free(path);
	return found;
}

#define MEMBERS 3

/* Start a cluster of MEMBERS etcd members under dir; wait until each serves. */
static void
start_etcd(const char *dir, pid_t *pids, char **urls)
{
	char	   *peers[MEMBERS];
	StringInfoData cluster;
	double		t0 = now_s();

	initStringInfo(&cluster);
	for (int i = 0; i < MEMBERS; i++)
	{
		urls[i] = psprintf("http://127.0.0.1:%d", free_port());
		peers[i] = psprintf("http://127.0.0.1:%d", free_port());
		appendStringInfo(&cluster, "%sm%d=%s", i ? "," : "", i, peers[i]);
	}
	for (int i = 0; i < MEMBERS; i++)
	{
		char	   *argv[] = {"etcd", "--name", psprintf("m%d", i),
			"--data-dir", psprintf("%s/m%d", dir, i),
			"--listen-client-urls", urls[i], "--advertise-client-urls", urls[i],
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", cluster.data, "--initial-cluster-token", "se-test",
		"--initial-cluster-state", "new", NULL};
		int			in_fd,
					out_fd;

		pids[i] = spawn(argv, &in_fd, &out_fd, psprintf("%s/m%d.log", dir, i));
		close(out_fd);
	}
	/* a range is linearizable: it answers once the cluster has a leader */
	for (int i = 0; i < MEMBERS; i++)
	{
		StringInfoData out;

		initStringInfo(&out);
		while (http(psprintf("%s/v3/kv/range", urls[i]), "{\"key\":\"AA==\"}", &out) != 200 &&
			   now_s() - t0 < 30)
			usleep(100 * 1000);
	}
}

/*
 * A member that lost its quorum: a watch on it is cancelled and a read
 * refused at once ("no leader"), because the client requires a leader;
 * without that the watch would stay silent and the read wait out its
 * timeout.
 */
static void
check_leader_loss(char **urls, pid_t *pids)
{
	SeEtcd	   *c = se_etcd_connect(urls[0], 3000, E());
	SeEtcdWatch *w;
	SeEtcdEvent *evs;
	SeEtcdWatchStatus st = SE_ETCD_WATCH_OK;
	int			n;
	double		t0;
	bool		ok;

	UT_CHECK(se_etcd_put(c, "/lost/a", "1", 1, 0, NULL, E()), "put: %s", REASON);
	w = se_etcd_watch_start(c, "/lost/", 0, E());
	UT_CHECK(w != NULL, "watch: %s", REASON);
	for (int i = 1; i < MEMBERS; i++)
	{
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	t0 = now_s();
	while (w && st == SE_ETCD_WATCH_OK && now_s() - t0 < 30)
		st = se_etcd_watch_poll(w, 500, &evs, &n, NULL, NULL, E());
	UT_CHECK(st == SE_ETCD_WATCH_FAILED && strstr(REASON, "no leader"),
			 "the watch on a member without a leader is cancelled after %.1f s (st=%d): %s",
			 now_s() - t0, st, REASON);
	se_etcd_watch_stop(w);
	t0 = now_s();
	ok = se_etcd_range(c, "/lost/a", false, &(SeEtcdKv *) {NULL}, &n, NULL, E());
	UT_CHECK(!ok && strcmp(err.type, SE_ETCD_UNAVAILABLE) == 0 && strstr(REASON, "no leader") &&
			 now_s() - t0 < 2.5, "a read is refused at once (%.1f s): %s", now_s() - t0, REASON);
	se_etcd_close(c);
}

int
main(int argc, char **argv)
{
	char	   *script = psprintf("%s/fake_etcd.py", dirname(pstrdup(argv[0])));
	char	   *pyargv[] = {"python3", script, NULL};
	int			in_fd,
				out_fd,
				port = 0;
	char		line[32] = {0};
	pid_t		fake;
	char	   *base;

	signal(SIGPIPE, SIG_IGN);
	if (!se_etcd_global_init(E()))
		return 2;
	check_connect_args();

	/* the fake gateway */
	fake = spawn(pyargv, &in_fd, &out_fd, NULL);
	if (read(out_fd, line, sizeof(line) - 1) <= 0 || (port = atoi(line)) <= 0)
	{
		fprintf(stderr, "fake_etcd.py did not start\n");
		return 2;
	}
	base = psprintf("http://127.0.0.1:%d", port);
	check_all(base, base);
	check_faults(base, port);
	close(in_fd);
	waitpid(fake, NULL, 0);

	/* a real etcd */
	if (!command_exists("etcd"))
		printf("test_etcd: SKIP the real-etcd checks: no etcd binary on PATH\n");
	else
	{
		char		tmpl[] = "/tmp/se-etcd-test.XXXXXX";
		char	   *dir = mkdtemp(tmpl);
		pid_t		pids[MEMBERS];
		char	   *urls[MEMBERS];

		start_etcd(dir, pids, urls);
		check_all(psprintf("http://127.0.0.1:%d,%s,%s", free_port(), urls[1], urls[2]), urls[1]);
		check_leader_loss(urls, pids);
		kill(pids[0], SIGTERM);
		waitpid(pids[0], NULL, 0);
		if (ut_failed > 0)
			fprintf(stderr, "etcd logs kept in %s\n", dir);
		else
			system(psprintf("rm -rf '%s'", dir));
	}
	return ut_finish("test_etcd");
}
