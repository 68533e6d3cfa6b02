/*-------------------------------------------------------------------------
 *
 * etcd.c
 *	  A client for etcd's v3 JSON gateway over libcurl.
 *
 * Unary calls (range, put, delete, txn, lease) POST one JSON body on a
 * reused easy handle (so the connection is kept alive) and parse the
 * answer; they try the endpoints in turn, starting from the last one that
 * answered, moving on after a connect failure, a timeout or a 5xx.  A
 * mutation that timed out may have been applied before the client moved
 * on: the retry on the next endpoint then runs it again, so a transaction
 * must be written to recognise its own earlier success (compare on a value
 * only this node writes, read the key in the else branch).
 *
 * The gateway speaks proto3 JSON: keys and values are base64, int64s are
 * strings, and fields with their zero value (false, 0, empty lists) are
 * left out, so every absent field reads as zero here.
 *
 * The watch is one streaming POST /v3/watch driven by a curl multi handle,
 * so polling never blocks longer than asked.  The gateway sends a stream of
 * JSON objects, {"result": {...}} each (or {"error": {...}}); they are cut
 * out of the byte stream by tracking nesting depth and strings, so an
 * object split across chunks or several objects in one chunk read the same.
 *
 * Memory: each SeEtcd (and SeEtcdWatch) owns a memory context in the
 * server; request bodies, answers and their JSON trees go to a scratch
 * context reset at the start of the next call, and results are copied into
 * the caller's context.  The standalone build (unit tests) has no memory
 * contexts and simply leaks the scratch allocations.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <curl/curl.h>
#include <time.h>
#include <unistd.h>

#include "cluster/etcd.h"
#include "common/base64.h"
#include "util/json.h"

#ifndef SE_FRONTEND
#include "miscadmin.h"
#include "utils/memutils.h"
#endif

/* Largest answer or unparsed watch backlog accepted (the cluster state is far smaller). */
#define MAX_RESPONSE	((size_t) 64 * 1024 * 1024)

/*
 * Where a scan for the end of a JSON value stopped: resumable, so a value
 * arriving in many pieces is scanned once.
 */
typedef struct ValueScan
{
	int			offset;			/* next byte to look at */
	int			depth;			/* nesting depth */
	bool		in_string;
	bool		escape;			/* after a backslash in a string */
} ValueScan;

struct SeEtcd
{
	int			nendpoints;
	char	  **endpoints;		/* base URLs without a trailing '/' */
	int			current;		/* index of the endpoint to try first */
	int			timeout_ms;
	CURL	   *easy;			/* reused: keeps the connection alive */
	struct curl_slist *headers;
	StringInfoData resp;		/* the answer being received */
	char		curl_error[CURL_ERROR_SIZE];
#ifndef SE_FRONTEND
	MemoryContext cxt;			/* this struct, endpoints */
	MemoryContext scratch;		/* one call's body, answer and JSON */
#endif
};

struct SeEtcdWatch
{
	SeEtcd	   *c;
	int			endpoint;		/* index of the endpoint streaming */
	CURLM	   *multi;
	CURL	   *easy;
	char	   *url;
	char	   *body;
	StringInfoData buf;			/* received bytes not parsed yet */
	ValueScan	scan;			/* for the next message in buf */
	int64		revision;		/* latest header revision seen */
	bool		created;		/* etcd acknowledged the watch */
	bool		ended;			/* the transfer finished (any reason) */
	bool		overflow;		/* backlog passed MAX_RESPONSE */
	CURLcode	result;			/* how it finished */
	int			sock;			/* the stream's socket, -1 when none */
	char		curl_error[CURL_ERROR_SIZE];
	/* a terminal state reached while events were pending, told next poll */
	SeEtcdWatchStatus pending_status;
	int64		pending_compact;
	char	   *pending_reason;
#ifndef SE_FRONTEND
	MemoryContext cxt;
#endif
};

/* ---------------------------------------------------------------------
 * memory
 * ---------------------------------------------------------------------
 */

/* Enter c's scratch context, emptied of the previous call; returns the caller's. */
static void *
scratch_begin(SeEtcd *c)
{
#ifndef SE_FRONTEND
	MemoryContextReset(c->scratch);
	return MemoryContextSwitchTo(c->scratch);
#else
	return NULL;
#endif
}

static void
scratch_end(void *caller)
{
#ifndef SE_FRONTEND
	MemoryContextSwitchTo((MemoryContext) caller);
#endif
}

/* ---------------------------------------------------------------------
 * small helpers
 * ---------------------------------------------------------------------
 */

static int64
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Append bytes as a base64 JSON string. */
static void
append_b64(StringInfo out, const char *s, int len)
{
	int			enc_len = pg_b64_enc_len(len);
	char	   *enc = palloc(enc_len + 1);
	int			n;

	n = pg_b64_encode(s, len, enc, enc_len);
	if (n < 0)
		n = 0;					/* cannot happen: the buffer is sized */
	enc[n] = '\0';
	se_json_write_string(out, enc, n);
	pfree(enc);
}

/* Append "name":"<base64>" with a leading comma unless first. */
static void
append_b64_field(StringInfo out, bool *first, const char *name,
				 const char *s, int len)
{
	if (!*first)
		appendStringInfoChar(out, ',');
	*first = false;
	se_json_write_string(out, name, -1);
	appendStringInfoChar(out, ':');
	append_b64(out, s, len);
}

/* Append "name":"<int64>" (proto3 JSON writes int64 as a string). */
static void
append_int_field(StringInfo out, bool *first, const char *name, int64 v)
{
	if (!*first)
		appendStringInfoChar(out, ',');
	*first = false;
	se_json_write_string(out, name, -1);
	appendStringInfo(out, ":\"" INT64_FORMAT "\"", v);
}

/*
 * The range_end that makes key a prefix: key with its last byte below 0xff
 * incremented and what follows dropped; "\0" (every key) when there is none.
 */
static void
append_prefix_end(StringInfo out, bool *first, const char *key)
{
	int			len = strlen(key);
	char	   *end = pnstrdup(key, len);

	while (len > 0 && (unsigned char) end[len - 1] == 0xff)
		len--;
	if (len == 0)
		append_b64_field(out, first, "range_end", "\0", 1);
	else
	{
		end[len - 1]++;
		append_b64_field(out, first, "range_end", end, len);
	}
	pfree(end);
}

/*
 * Append "key" and, for a prefix, "range_end"; the empty prefix is every
 * key, which etcd spells key "\0" .. range_end "\0".
 */
static void
append_key_range(StringInfo out, bool *first, const char *key, bool prefix)
{
	if (prefix && key[0] == '\0')
		append_b64_field(out, first, "key", "\0", 1);
	else
		append_b64_field(out, first, "key", key, strlen(key));
	if (prefix)
		append_prefix_end(out, first, key);
}

/* An int64 field written as a string or a number; 0 when absent or bad. */
static int64
json_int64(const SeJson *obj, const char *name)
{
	SeJson	   *v = se_json_get(obj, name);

	if (v == NULL)
		return 0;
	if (v->type == SE_JSON_NUMBER && v->u.n.is_int)
		return v->u.n.i;
	if (v->type == SE_JSON_STRING)
	{
		char	   *end;
		long long	r = strtoll(v->u.s.str, &end, 10);

		if (end != v->u.s.str && *end == '\0')
			return (int64) r;
	}
	return 0;
}

static bool
json_bool(const SeJson *obj, const char *name)
{
	SeJson	   *v = se_json_get(obj, name);

	return v != NULL && v->type == SE_JSON_TRUE;
}

/* Decode a base64 string field into a palloc'd NUL-terminated buffer. */
static bool
json_b64(const SeJson *obj, const char *name, char **out, int *out_len)
{
	SeJson	   *v = se_json_get(obj, name);
	char	   *dec;
	int			n;

	if (v == NULL)
	{
		*out = pstrdup("");
		*out_len = 0;
		return true;
	}
	if (v->type != SE_JSON_STRING)
		return false;
	dec = palloc(pg_b64_dec_len(v->u.s.len) + 1);
	n = pg_b64_decode(v->u.s.str, v->u.s.len, dec, pg_b64_dec_len(v->u.s.len));
	if (n < 0)
		return false;
	dec[n] = '\0';
	*out = dec;
	*out_len = n;
	return true;
}

/* Fill kv from a mvccpb.KeyValue object; false if its base64 is bad. */
static bool
kv_from_json(const SeJson *o, SeEtcdKv *kv)
{
	int			key_len;

	memset(kv, 0, sizeof(*kv));
	if (o == NULL || o->type != SE_JSON_OBJECT)
		return false;
	if (!json_b64(o, "key", &kv->key, &key_len) ||
		!json_b64(o, "value", &kv->value, &kv->value_len))
		return false;
	kv->create_revision = json_int64(o, "create_revision");
	kv->mod_revision = json_int64(o, "mod_revision");
	kv->version = json_int64(o, "version");
	kv->lease = json_int64(o, "lease");
	return true;
}

/*
 * Append the kvs array of a RangeResponse to (*arr)[*n..], growing *arr;
 * the array is made in the caller's context.
 */
static bool
append_kvs(const SeJson *range_resp, SeEtcdKv **arr, int *n, int *cap,
		   void *caller)
{
	SeJson	   *kvs = se_json_get(range_resp, "kvs");
	int			i;
	bool		ok = true;
#ifndef SE_FRONTEND
	MemoryContext scratch;
#endif

	if (kvs == NULL)
		return true;
	if (kvs->type != SE_JSON_ARRAY)
		return false;
#ifndef SE_FRONTEND
	scratch = MemoryContextSwitchTo((MemoryContext) caller);
#endif
	for (i = 0; i < kvs->u.a.count && ok; i++)
	{
		if (*n == *cap)
		{
			*cap = Max(8, *cap * 2);
			*arr = *arr ? repalloc(*arr, *cap * sizeof(SeEtcdKv))
				: palloc(*cap * sizeof(SeEtcdKv));
		}
		ok = kv_from_json(kvs->u.a.items[i], &(*arr)[*n]);
		if (ok)
			(*n)++;
	}
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(scratch);
#endif
	return ok;
}

/* The message of a gateway error body ({"error": ..., "message": ...}). */
static const char *
error_message(const SeJson *body)
{
	SeJson	   *m;

	if (body == NULL || body->type != SE_JSON_OBJECT)
		return NULL;
	m = se_json_get(body, "message");
	if (m == NULL || m->type != SE_JSON_STRING)
		m = se_json_get(body, "error");
	if (m != NULL && m->type == SE_JSON_OBJECT)	/* stream error wrapper */
		return error_message(m);
	return (m != NULL && m->type == SE_JSON_STRING) ? m->u.s.str : NULL;
}

/*
 * Continue scanning s[0..len) for the end of the JSON object or array that
 * starts it (after any whitespace); returns the offset just past it, or -1
 * when it is not complete yet.  Whitespace and scalars between values are
 * skipped over: the watch stream puts a newline after each message.
 */
static int
scan_value_end(ValueScan *st, const char *s, int len)
{
	for (; st->offset < len; st->offset++)
	{
		char		ch = s[st->offset];

		if (st->in_string)
		{
			if (st->escape)
				st->escape = false;
			else if (ch == '\\')
				st->escape = true;
			else if (ch == '"')
				st->in_string = false;
		}
		else if (ch == '"')
			st->in_string = true;
		else if (ch == '{' || ch == '[')
			st->depth++;
		else if ((ch == '}' || ch == ']') && st->depth > 0 && --st->depth == 0)
			return ++st->offset;
	}
	return -1;
}

/* Length of the first complete JSON object of s[0..len), 0 if incomplete. */
static int
first_value_len(const char *s, int len)
{
	ValueScan	st = {0};
	int			end = scan_value_end(&st, s, len);

	return end < 0 ? 0 : end;
}

/* ---------------------------------------------------------------------
 * connection
 * ---------------------------------------------------------------------
 */

bool
se_etcd_global_init(SeError *err)
{
	static bool done = false;
	CURLcode	rc;

	if (done)
		return true;
	rc = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK)
	{
		se_error_set(err, 500, SE_ETCD_ERROR, "could not initialize libcurl: %s",
					 curl_easy_strerror(rc));
		return false;
	}
	done = true;
	return true;
}

/* Abort a transfer when the backend is asked to stop (server only). */
static int
progress_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow,
			curl_off_t ultotal, curl_off_t ulnow)
{
#ifndef SE_FRONTEND
	if (ProcDiePending || QueryCancelPending)
		return 1;
#endif
	return 0;
}

/* Common options of every easy handle. */
static void
setup_easy(CURL *easy, SeEtcd *c, char *errbuf)
{
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long) c->timeout_ms);
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 5L);
	curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, progress_cb);
	/* no proxy from the environment: etcd is reached directly */
	curl_easy_setopt(easy, CURLOPT_NOPROXY, "*");
}

/*
 * Request headers: JSON; no "Expect: 100-continue" round trip for large
 * bodies; and, as etcd's own client does, gRPC metadata asking the member
 * to refuse the call (503 "no leader", so we fail over) or cancel the watch
 * when it has no leader, so a partitioned member cannot serve stale reads
 * or keep a watch silently stalled.
 */
static struct curl_slist *
make_headers(void)
{
	static const char *const lines[] = {"Content-Type: application/json", "Expect:",
	"Grpc-Metadata-hasleader: true"};
	struct curl_slist *h = NULL;
	int			i;

	for (i = 0; i < lengthof(lines); i++)
	{
		struct curl_slist *t = curl_slist_append(h, lines[i]);

		if (t == NULL)
		{
			curl_slist_free_all(h);
			return NULL;
		}
		h = t;
	}
	return h;
}

/* curl write callback for unary answers: append to c->resp. */
static size_t
unary_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	SeEtcd	   *c = arg;
	size_t		n = size * nmemb;

	if (c->resp.len + n > MAX_RESPONSE)
		return 0;				/* curl fails the transfer */
	appendBinaryStringInfo(&c->resp, ptr, (int) n);
	return n;
}

/* Free the curl side of c (its memory goes with its context). */
static void
client_release(void *arg)
{
	SeEtcd	   *c = arg;

	if (c->easy != NULL)
		curl_easy_cleanup(c->easy);
	curl_slist_free_all(c->headers);
	c->easy = NULL;
	c->headers = NULL;
}

/*
 * In the server, run release(arg) when cxt is reset or deleted, so an error
 * that unwinds past the owner (resetting its context) closes the sockets.
 */
static void
on_context_reset(void *cxt, void (*release) (void *), void *arg)
{
#ifndef SE_FRONTEND
	MemoryContextCallback *cb = MemoryContextAlloc((MemoryContext) cxt,
												   sizeof(MemoryContextCallback));

	cb->func = release;
	cb->arg = arg;
	MemoryContextRegisterResetCallback((MemoryContext) cxt, cb);
#endif
}

SeEtcd *
se_etcd_connect(const char *endpoints, int timeout_ms, SeError *err)
{
	SeEtcd	   *c;
	char	   *list,
			   *tok,
			   *save = NULL;
	int			cap = 4;
	SeError		e;
	void	   *cxt = NULL;
#ifndef SE_FRONTEND
	MemoryContext old;
#endif

	if (endpoints == NULL || timeout_ms <= 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "etcd endpoints and a positive timeout are required");
		return NULL;
	}
#ifndef SE_FRONTEND
	cxt = AllocSetContextCreate(CurrentMemoryContext, "search_engine etcd client",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
#endif
	se_error_init(&e);
	c = palloc0(sizeof(SeEtcd));
	c->timeout_ms = timeout_ms;
	c->endpoints = palloc(cap * sizeof(char *));
	list = pstrdup(endpoints);
	for (tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
	{
		int			len = strlen(tok);

		while (len > 0 && tok[len - 1] == '/')
			len--;
		if (len == 0 || (strncmp(tok, "http://", 7) != 0 &&
						 strncmp(tok, "https://", 8) != 0))
		{
			se_error_set(&e, 400, "illegal_argument_exception",
						 "etcd endpoint [%s] is not an http:// or https:// URL", tok);
			break;
		}
		if (c->nendpoints == cap)
		{
			cap *= 2;
			c->endpoints = repalloc(c->endpoints, cap * sizeof(char *));
		}
		c->endpoints[c->nendpoints++] = pnstrdup(tok, len);
	}
	pfree(list);
	if (!se_error_is_set(&e) && c->nendpoints == 0)
		se_error_set(&e, 400, "illegal_argument_exception",
					 "no etcd endpoint in [%s]", endpoints);
	if (!se_error_is_set(&e))
	{
		c->easy = curl_easy_init();
		c->headers = make_headers();
		if (c->easy == NULL || c->headers == NULL)
			se_error_set(&e, 500, SE_ETCD_ERROR, "could not create a curl handle");
	}
#ifndef SE_FRONTEND
	c->cxt = cxt;
	c->scratch = AllocSetContextCreate(cxt, "search_engine etcd call",
									   ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(old);
#endif
	on_context_reset(cxt, client_release, c);
	if (se_error_is_set(&e))
	{
		se_error_set(err, e.status, e.type, "%s", e.reason);
		se_etcd_close(c);
		return NULL;
	}
	setup_easy(c->easy, c, c->curl_error);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, unary_write_cb);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, (long) timeout_ms);
	return c;
}

void
se_etcd_close(SeEtcd *c)
{
	if (c == NULL)
		return;
#ifndef SE_FRONTEND
	MemoryContextDelete(c->cxt);	/* runs client_release */
#else
	client_release(c);			/* standalone, like the scratch, its memory leaks */
#endif
}

const char *
se_etcd_current_endpoint(const SeEtcd *c)
{
	return c->endpoints[c->current];
}

/* ---------------------------------------------------------------------
 * unary calls
 * ---------------------------------------------------------------------
 */

/*
 * POST body to path, failing over across the endpoints; returns the parsed
 * answer (the first JSON object of a streamed answer, unwrapped from its
 * "result") or NULL with err set.  Runs in the scratch context.
 */
static SeJson *
request(SeEtcd *c, const char *path, const char *body, SeError *err)
{
	StringInfoData tried;
	int			i;

	initStringInfo(&tried);
	for (i = 0; i < c->nendpoints; i++)
	{
		int			idx = (c->current + i) % c->nendpoints;
		char	   *url = psprintf("%s%s", c->endpoints[idx], path);
		CURLcode	rc;
		long		status = 0;
		SeJson	   *resp;
		SeError		perr;
		int			vlen;

		initStringInfo(&c->resp);
		c->curl_error[0] = '\0';
		curl_easy_setopt(c->easy, CURLOPT_URL, url);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE, (long) strlen(body));
		rc = curl_easy_perform(c->easy);
#ifndef SE_FRONTEND
		CHECK_FOR_INTERRUPTS();
#endif
		if (rc != CURLE_OK)
		{
			appendStringInfo(&tried, "%s[%s]: %s", tried.len ? "; " : "",
							 c->endpoints[idx],
							 c->curl_error[0] ? c->curl_error : curl_easy_strerror(rc));
			continue;
		}
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);

		/* a streamed answer (lease keepalive) may hold several objects */
		vlen = first_value_len(c->resp.data, c->resp.len);
		se_error_init(&perr);
		resp = se_json_parse(c->resp.data, vlen > 0 ? vlen : c->resp.len, NULL, &perr);
		if (status >= 500)
		{
			const char *msg = error_message(resp);

			appendStringInfo(&tried, "%s[%s]: HTTP %ld%s%s", tried.len ? "; " : "",
							 c->endpoints[idx], status, msg ? ": " : "", msg ? msg : "");
			continue;
		}
		c->current = idx;		/* it answered: start from it next time */
		if (status != 200 || resp == NULL || resp->type != SE_JSON_OBJECT ||
			se_json_get(resp, "error") != NULL)
		{
			const char *msg = error_message(resp);

			se_error_set(err, 500, SE_ETCD_ERROR, "etcd [%s] answered %s with HTTP %ld: %s",
						 c->endpoints[idx], path, status,
						 msg ? msg : (resp == NULL ? pnstrdup(c->resp.data, Min(c->resp.len, 200)) :
									  "no error message"));
			return NULL;
		}
		if (se_json_get(resp, "result") != NULL)
			resp = se_json_get(resp, "result");
		if (resp->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 500, SE_ETCD_ERROR, "etcd [%s] answered %s with a %s",
						 c->endpoints[idx], path, se_json_type_name(resp->type));
			return NULL;
		}
		return resp;
	}
	/* every endpoint failed: the next call starts from the one after */
	c->current = (c->current + 1) % c->nendpoints;
	se_error_set(err, 503, SE_ETCD_UNAVAILABLE, "no etcd endpoint answered %s: %s",
				 path, tried.data);
	return NULL;
}

/* Set err (in the caller's context) from the scratch error e. */
static bool
finish(void *caller, SeError *e, SeError *err)
{
	scratch_end(caller);
	if (se_error_is_set(e))
	{
		se_error_set(err, e->status, e->type, "%s", e->reason);
		return false;
	}
	return true;
}

static bool
bad_answer(SeEtcd *c, const char *what, SeError *e)
{
	se_error_set(e, 500, SE_ETCD_ERROR, "etcd [%s] sent a malformed %s",
				 c->endpoints[c->current], what);
	return false;
}

/* The body {"key": ..., "range_end": ...} of a range or a delete. */
static char *
key_range_body(const char *key, bool prefix)
{
	StringInfoData body;
	bool		first = true;

	initStringInfo(&body);
	appendStringInfoChar(&body, '{');
	append_key_range(&body, &first, key, prefix);
	appendStringInfoChar(&body, '}');
	return body.data;
}

static int64
header_revision(const SeJson *resp)
{
	return json_int64(se_json_get(resp, "header"), "revision");
}

bool
se_etcd_range(SeEtcd *c, const char *key, bool prefix,
			  SeEtcdKv **kvs, int *nkvs, int64 *revision, SeError *err)
{
	void	   *caller = scratch_begin(c);
	SeError		e;
	SeJson	   *resp;
	int			cap = 0;

	se_error_init(&e);
	*kvs = NULL;
	*nkvs = 0;
	resp = request(c, "/v3/kv/range", key_range_body(key, prefix), &e);
	if (resp != NULL)
	{
		if (!append_kvs(resp, kvs, nkvs, &cap, caller))
			bad_answer(c, "range answer", &e);
		if (revision)
			*revision = header_revision(resp);
	}
	return finish(caller, &e, err);
}

bool
se_etcd_put(SeEtcd *c, const char *key, const char *value, int value_len,
			int64 lease, int64 *revision, SeError *err)
{
	void	   *caller = scratch_begin(c);
	StringInfoData body;
	SeError		e;
	SeJson	   *resp;
	bool		first = true;

	se_error_init(&e);
	initStringInfo(&body);
	appendStringInfoChar(&body, '{');
	append_b64_field(&body, &first, "key", key, strlen(key));
	append_b64_field(&body, &first, "value", value, value_len);
	if (lease != 0)
		append_int_field(&body, &first, "lease", lease);
	appendStringInfoChar(&body, '}');
	resp = request(c, "/v3/kv/put", body.data, &e);
	if (resp != NULL && revision)
		*revision = header_revision(resp);
	return finish(caller, &e, err);
}

bool
se_etcd_delete(SeEtcd *c, const char *key, bool prefix, int64 *deleted,
			   int64 *revision, SeError *err)
{
	void	   *caller = scratch_begin(c);
	SeError		e;
	SeJson	   *resp;

	se_error_init(&e);
	resp = request(c, "/v3/kv/deleterange", key_range_body(key, prefix), &e);
	if (resp != NULL)
	{
		if (deleted)
			*deleted = json_int64(resp, "deleted");
		if (revision)
			*revision = header_revision(resp);
	}
	return finish(caller, &e, err);
}

/* Append one RequestOp of a transaction. */
static void
append_op(StringInfo body, const SeEtcdOp *op)
{
	bool		first = true;

	switch (op->kind)
	{
		case SE_ETCD_OP_PUT:
			appendStringInfoString(body, "{\"request_put\":{");
			append_b64_field(body, &first, "key", op->key, strlen(op->key));
			append_b64_field(body, &first, "value", op->value ? op->value : "",
							 op->value ? op->value_len : 0);
			if (op->lease != 0)
				append_int_field(body, &first, "lease", op->lease);
			break;
		case SE_ETCD_OP_DELETE:
		case SE_ETCD_OP_RANGE:
			appendStringInfoString(body, op->kind == SE_ETCD_OP_DELETE ?
								   "{\"request_delete_range\":{" : "{\"request_range\":{");
			append_key_range(body, &first, op->key, op->prefix);
			break;
	}
	appendStringInfoString(body, "}}");
}

static void
append_ops(StringInfo body, const char *name, const SeEtcdOp *ops, int n)
{
	int			i;

	appendStringInfo(body, ",\"%s\":[", name);
	for (i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(body, ',');
		append_op(body, &ops[i]);
	}
	appendStringInfoChar(body, ']');
}

bool
se_etcd_txn(SeEtcd *c, const SeEtcdCmp *cmps, int ncmp,
			const SeEtcdOp *then_ops, int nthen,
			const SeEtcdOp *else_ops, int nelse,
			bool *succeeded, int64 *revision,
			SeEtcdKv **range_kvs, int *nrange_kvs, SeError *err)
{
	static const char *const targets[] = {"CREATE", "MOD", "VERSION", "VALUE", "LEASE"};
	static const char *const fields[] = {"create_revision", "mod_revision", "version",
	"value", "lease"};
	static const char *const ops[] = {"EQUAL", "NOT_EQUAL", "GREATER", "LESS"};
	void	   *caller = scratch_begin(c);
	StringInfoData body;
	SeError		e;
	SeJson	   *resp;
	int			i;

	se_error_init(&e);
	*succeeded = false;
	if (range_kvs)
	{
		*range_kvs = NULL;
		*nrange_kvs = 0;
	}
	initStringInfo(&body);
	appendStringInfoString(&body, "{\"compare\":[");
	for (i = 0; i < ncmp; i++)
	{
		const SeEtcdCmp *cmp = &cmps[i];
		bool		first = false;

		appendStringInfo(&body, "%s{\"result\":\"%s\",\"target\":\"%s\"",
						 i > 0 ? "," : "", ops[cmp->op], targets[cmp->target]);
		append_b64_field(&body, &first, "key", cmp->key, strlen(cmp->key));
		if (cmp->target == SE_ETCD_VALUE)
			append_b64_field(&body, &first, fields[cmp->target],
							 cmp->value ? cmp->value : "", cmp->value ? cmp->value_len : 0);
		else
			append_int_field(&body, &first, fields[cmp->target], cmp->number);
		appendStringInfoChar(&body, '}');
	}
	appendStringInfoChar(&body, ']');
	append_ops(&body, "success", then_ops, nthen);
	append_ops(&body, "failure", else_ops, nelse);
	appendStringInfoChar(&body, '}');

	resp = request(c, "/v3/kv/txn", body.data, &e);
	if (resp != NULL)
	{
		SeJson	   *responses = se_json_get(resp, "responses");
		int			cap = 0;

		*succeeded = json_bool(resp, "succeeded");
		if (revision)
			*revision = header_revision(resp);
		if (responses != NULL && responses->type != SE_JSON_ARRAY)
			bad_answer(c, "txn answer", &e);
		else if (responses != NULL && range_kvs != NULL)
		{
			for (i = 0; i < responses->u.a.count; i++)
			{
				SeJson	   *r = se_json_get(responses->u.a.items[i], "response_range");

				if (r != NULL &&
					!append_kvs(r, range_kvs, nrange_kvs, &cap, caller))
				{
					bad_answer(c, "txn range answer", &e);
					break;
				}
			}
		}
	}
	return finish(caller, &e, err);
}

bool
se_etcd_lease_grant(SeEtcd *c, int ttl_s, int64 *lease_id, SeError *err)
{
	void	   *caller = scratch_begin(c);
	char	   *body = psprintf("{\"TTL\":\"%d\"}", ttl_s);
	SeError		e;
	SeJson	   *resp;

	se_error_init(&e);
	*lease_id = 0;
	resp = request(c, "/v3/lease/grant", body, &e);
	if (resp != NULL)
	{
		SeJson	   *msg = se_json_get(resp, "error");

		*lease_id = json_int64(resp, "ID");
		if (*lease_id == 0)
			se_error_set(&e, 500, SE_ETCD_ERROR, "etcd [%s] granted no lease: %s",
						 c->endpoints[c->current],
						 msg && msg->type == SE_JSON_STRING ? msg->u.s.str : "no lease id");
	}
	return finish(caller, &e, err);
}

bool
se_etcd_lease_keepalive(SeEtcd *c, int64 lease_id, int64 *ttl_left, SeError *err)
{
	void	   *caller = scratch_begin(c);
	char	   *body = psprintf("{\"ID\":\"" INT64_FORMAT "\"}", lease_id);
	SeError		e;
	SeJson	   *resp;

	se_error_init(&e);
	*ttl_left = 0;
	resp = request(c, "/v3/lease/keepalive", body, &e);
	if (resp != NULL)
		*ttl_left = Max(json_int64(resp, "TTL"), 0);
	return finish(caller, &e, err);
}

bool
se_etcd_lease_revoke(SeEtcd *c, int64 lease_id, SeError *err)
{
	void	   *caller = scratch_begin(c);
	char	   *body = psprintf("{\"ID\":\"" INT64_FORMAT "\"}", lease_id);
	SeError		e;

	se_error_init(&e);
	(void) request(c, "/v3/lease/revoke", body, &e);
	/* already expired or revoked: what the caller wanted */
	if (se_error_is_set(&e) && strstr(e.reason, "lease not found") != NULL)
		se_error_init(&e);
	return finish(caller, &e, err);
}

/* ---------------------------------------------------------------------
 * watch
 * ---------------------------------------------------------------------
 */

/* curl write callback of the watch stream: append to the backlog. */
static size_t
watch_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	SeEtcdWatch *w = arg;
	size_t		n = size * nmemb;
#ifndef SE_FRONTEND
	MemoryContext old;
#endif

	if (w->buf.len + n > MAX_RESPONSE)
	{
		w->overflow = true;
		return 0;
	}
#ifndef SE_FRONTEND
	old = MemoryContextSwitchTo(w->cxt);
#endif
	appendBinaryStringInfo(&w->buf, ptr, (int) n);
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
	return n;
}

/* Free the transfer of w (not w itself). */
static void
watch_release(void *arg)
{
	SeEtcdWatch *w = arg;

	if (w->multi != NULL)
	{
		if (w->easy != NULL)
			curl_multi_remove_handle(w->multi, w->easy);
		curl_multi_cleanup(w->multi);
		w->multi = NULL;
	}
	if (w->easy != NULL)
	{
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
	}
}

/* curl made the stream's socket: remember it for se_etcd_watch_socket. */
static int
watch_sockopt_cb(void *arg, curl_socket_t fd, curlsocktype purpose)
{
	((SeEtcdWatch *) arg)->sock = (int) fd;
	return CURL_SOCKOPT_OK;
}

/* curl closes a socket of the stream (we then do it ourselves). */
static int
watch_closesocket_cb(void *arg, curl_socket_t fd)
{
	SeEtcdWatch *w = arg;

	if (w->sock == (int) fd)
		w->sock = -1;
	return close(fd);
}

/* Start the transfer of w on endpoint idx; false if curl refuses. */
static bool
watch_open(SeEtcdWatch *w, int idx)
{
	SeEtcd	   *c = w->c;
#ifndef SE_FRONTEND
	MemoryContext old = MemoryContextSwitchTo(w->cxt);
#endif

	watch_release(w);
	w->endpoint = idx;
	if (w->url)
		pfree(w->url);
	w->url = psprintf("%s/v3/watch", c->endpoints[idx]);
	resetStringInfo(&w->buf);
	memset(&w->scan, 0, sizeof(w->scan));
	w->created = w->ended = w->overflow = false;
	w->result = CURLE_OK;
	w->sock = -1;
	w->curl_error[0] = '\0';
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
	w->multi = curl_multi_init();
	w->easy = curl_easy_init();
	if (w->multi == NULL || w->easy == NULL)
		return false;
	setup_easy(w->easy, c, w->curl_error);
	curl_easy_setopt(w->easy, CURLOPT_URL, w->url);
	curl_easy_setopt(w->easy, CURLOPT_POSTFIELDS, w->body);
	curl_easy_setopt(w->easy, CURLOPT_POSTFIELDSIZE, (long) strlen(w->body));
	curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, watch_write_cb);
	curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(w->easy, CURLOPT_SOCKOPTFUNCTION, watch_sockopt_cb);
	curl_easy_setopt(w->easy, CURLOPT_SOCKOPTDATA, w);
	curl_easy_setopt(w->easy, CURLOPT_CLOSESOCKETFUNCTION, watch_closesocket_cb);
	curl_easy_setopt(w->easy, CURLOPT_CLOSESOCKETDATA, w);
	return curl_multi_add_handle(w->multi, w->easy) == CURLM_OK;
}

/* Drive the transfer once; notes when it ended. */
static void
watch_drive(SeEtcdWatch *w)
{
	int			running = 0;
	CURLMsg    *msg;
	int			left;

	if (w->ended)
		return;
	curl_multi_perform(w->multi, &running);
	while ((msg = curl_multi_info_read(w->multi, &left)) != NULL)
	{
		if (msg->msg == CURLMSG_DONE)
		{
			w->ended = true;
			w->result = msg->data.result;
		}
	}
}

/* Wait for socket activity on w's transfer, at most ms. */
static void
watch_wait(SeEtcdWatch *w, int ms)
{
	if (ms > 0 && !w->ended)
		curl_multi_poll(w->multi, NULL, 0, ms, NULL);
}

/* Cut the next complete JSON object out of the backlog; NULL if none is. */
static char *
watch_next_object(SeEtcdWatch *w, int *len)
{
	int			end = scan_value_end(&w->scan, w->buf.data, w->buf.len);
	char	   *obj;

	if (end < 0)
		return NULL;
	obj = pnstrdup(w->buf.data, end);
	*len = end;
	memmove(w->buf.data, w->buf.data + end, w->buf.len - end);
	w->buf.len -= end;
	w->buf.data[w->buf.len] = '\0';
	memset(&w->scan, 0, sizeof(w->scan));
	return obj;
}

/* Why the stream ended, for an error reason. */
static char *
watch_end_reason(SeEtcdWatch *w)
{
	if (w->overflow)
		return psprintf("etcd watch stream from [%s] sent more than %zu bytes of unparsable data",
						w->c->endpoints[w->endpoint], MAX_RESPONSE);
	if (w->result != CURLE_OK)
		return psprintf("etcd watch stream from [%s] failed: %s",
						w->c->endpoints[w->endpoint],
						w->curl_error[0] ? w->curl_error : curl_easy_strerror(w->result));
	{
		long		status = 0;

		curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200)
			return psprintf("etcd [%s] answered the watch with HTTP %ld",
							w->c->endpoints[w->endpoint], status);
	}
	return psprintf("etcd watch stream from [%s] ended", w->c->endpoints[w->endpoint]);
}

/*
 * Process the complete messages in the backlog: events are appended to
 * (*events)[*n..] in the caller's context; returns the terminal status a
 * message brought (COMPACTED, FAILED with *reason) or OK.
 */
static SeEtcdWatchStatus
watch_consume(SeEtcdWatch *w, void *caller, SeEtcdEvent **events, int *n,
			  int *cap, int64 *compact, char **reason)
{
	char	   *text;
	int			len;

	while ((text = watch_next_object(w, &len)) != NULL)
	{
		SeError		perr;
		SeJson	   *msg,
				   *res,
				   *evs;
		int			i;

		se_error_init(&perr);
		msg = se_json_parse(text, len, NULL, &perr);
		if (msg == NULL || msg->type != SE_JSON_OBJECT)
		{
			*reason = psprintf("etcd [%s] sent a malformed watch message: %s",
							   w->c->endpoints[w->endpoint],
							   perr.reason ? perr.reason : "not an object");
			return SE_ETCD_WATCH_FAILED;
		}
		res = se_json_get(msg, "result");
		if (res == NULL || res->type != SE_JSON_OBJECT)
		{
			const char *m = error_message(msg);

			*reason = psprintf("etcd [%s] ended the watch: %s",
							   w->c->endpoints[w->endpoint], m ? m : "no result");
			return SE_ETCD_WATCH_FAILED;
		}
		if (json_bool(res, "created"))
			w->created = true;
		w->revision = Max(w->revision, header_revision(res));
		if (json_int64(res, "compact_revision") != 0)
		{
			*compact = json_int64(res, "compact_revision");
			return SE_ETCD_WATCH_COMPACTED;
		}
		if (json_bool(res, "canceled"))
		{
			SeJson	   *why = se_json_get(res, "cancel_reason");

			*reason = psprintf("etcd [%s] cancelled the watch: %s",
							   w->c->endpoints[w->endpoint],
							   why && why->type == SE_JSON_STRING ? why->u.s.str : "no reason given");
			return SE_ETCD_WATCH_FAILED;
		}
		evs = se_json_get(res, "events");
		if (evs == NULL || evs->type != SE_JSON_ARRAY)
			continue;
		for (i = 0; i < evs->u.a.count; i++)
		{
			SeJson	   *ev = evs->u.a.items[i];
			SeJson	   *type = se_json_get(ev, "type");
			SeEtcdEvent *out;
			bool		ok;

			scratch_end(caller);
			if (*n == *cap)
			{
				*cap = Max(8, *cap * 2);
				*events = *events ? repalloc(*events, *cap * sizeof(SeEtcdEvent))
					: palloc(*cap * sizeof(SeEtcdEvent));
			}
			out = &(*events)[*n];
			out->is_delete = type != NULL && type->type == SE_JSON_STRING &&
				strcmp(type->u.s.str, "DELETE") == 0;
			ok = kv_from_json(se_json_get(ev, "kv"), &out->kv);
#ifndef SE_FRONTEND
			MemoryContextSwitchTo(w->c->scratch);
#endif
			if (!ok)
			{
				*reason = psprintf("etcd [%s] sent a malformed watch event",
								   w->c->endpoints[w->endpoint]);
				return SE_ETCD_WATCH_FAILED;
			}
			(*n)++;
		}
	}
	return SE_ETCD_WATCH_OK;
}

typedef enum WatchStart
{
	WATCH_CREATED,
	WATCH_REFUSED,				/* etcd answered no: do not fail over */
	WATCH_UNAVAILABLE			/* try the next endpoint */
} WatchStart;

/*
 * Drive a just-opened watch until etcd acknowledges it, refuses it, or the
 * endpoint fails (5xx, broken, no acknowledgement within the timeout, or
 * a member without a leader); *why says what happened.  The acknowledgement
 * stays in the backlog for the first poll.
 */
static WatchStart
watch_await_created(SeEtcdWatch *w, char **why)
{
	SeEtcd	   *c = w->c;
	const char *endpoint = c->endpoints[w->endpoint];
	int64		deadline = now_ms() + c->timeout_ms;

	for (;;)
	{
		long		status = 0;
		int			vlen;
		int64		left;

		watch_drive(w);
		curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &status);
		vlen = first_value_len(w->buf.data, w->buf.len);
		if (status >= 500 || (w->ended && vlen == 0))
		{
			*why = watch_end_reason(w);
			return WATCH_UNAVAILABLE;
		}
		if (vlen > 0)
		{
			SeError		perr;
			SeJson	   *msg;
			const char *m;

			se_error_init(&perr);
			msg = se_json_parse(w->buf.data, vlen, NULL, &perr);
			if (msg != NULL && json_bool(se_json_get(msg, "result"), "created"))
			{
				w->created = true;
				return WATCH_CREATED;
			}
			m = error_message(msg);
			*why = psprintf("etcd [%s] refused the watch: %s", endpoint,
							m ? m : (msg ? "no created acknowledgement" : perr.reason));
			return m != NULL && strstr(m, "no leader") != NULL ?
				WATCH_UNAVAILABLE : WATCH_REFUSED;
		}
		left = deadline - now_ms();
		if (left <= 0)
		{
			*why = psprintf("etcd [%s] did not acknowledge the watch within %d ms",
							endpoint, c->timeout_ms);
			return WATCH_UNAVAILABLE;
		}
#ifndef SE_FRONTEND
		CHECK_FOR_INTERRUPTS();
#endif
		watch_wait(w, (int) Min(left, 100));
	}
}

SeEtcdWatch *
se_etcd_watch_start(SeEtcd *c, const char *prefix, int64 start_revision,
					SeError *err)
{
	SeEtcdWatch *w;
	StringInfoData body;
	StringInfoData tried;
	bool		first = true;
	int			i;
	void	   *caller;
	void	   *cxt = NULL;
#ifndef SE_FRONTEND
	MemoryContext old;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "search_engine etcd watch",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
#endif

	w = palloc0(sizeof(SeEtcdWatch));
	w->c = c;
#ifndef SE_FRONTEND
	w->cxt = cxt;
#endif
	on_context_reset(cxt, watch_release, w);
	initStringInfo(&w->buf);
	initStringInfo(&body);
	appendStringInfoString(&body, "{\"create_request\":{");
	append_key_range(&body, &first, prefix, true);
	if (start_revision > 0)
		append_int_field(&body, &first, "start_revision", start_revision);
	appendStringInfoString(&body, "}}");
	w->body = body.data;
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif

	/* connect and wait for the "created" acknowledgement, endpoint by endpoint */
	caller = scratch_begin(c);
	initStringInfo(&tried);
	for (i = 0; i < c->nendpoints; i++)
	{
		int			idx = (c->current + i) % c->nendpoints;
		char	   *why = NULL;
		WatchStart	res;

		if (!watch_open(w, idx))
		{
			scratch_end(caller);
			se_error_set(err, 500, SE_ETCD_ERROR, "could not create a curl handle");
			se_etcd_watch_stop(w);
			return NULL;
		}
		res = watch_await_created(w, &why);
		if (res == WATCH_CREATED)
		{
			c->current = idx;
			scratch_end(caller);
			return w;
		}
		if (res == WATCH_REFUSED)
		{
			scratch_end(caller);
			se_error_set(err, 500, SE_ETCD_ERROR, "%s", why);
			se_etcd_watch_stop(w);
			return NULL;
		}
		appendStringInfo(&tried, "%s%s", tried.len ? "; " : "", why);
	}
	c->current = (c->current + 1) % c->nendpoints;
	scratch_end(caller);
	se_error_set(err, 503, SE_ETCD_UNAVAILABLE, "no etcd endpoint accepted the watch: %s",
				 tried.data);
	se_etcd_watch_stop(w);
	return NULL;
}

SeEtcdWatchStatus
se_etcd_watch_poll(SeEtcdWatch *w, int timeout_ms, SeEtcdEvent **events,
				   int *nevents, int64 *revision, int64 *compact_revision,
				   SeError *err)
{
	SeEtcd	   *c = w->c;
	void	   *caller = scratch_begin(c);
	int64		deadline = now_ms() + Max(timeout_ms, 0);
	int			cap = 0;
	SeEtcdWatchStatus status = w->pending_status;
	char	   *reason = w->pending_reason;
	int64		compact = w->pending_compact;

	*events = NULL;
	*nevents = 0;
	while (status == SE_ETCD_WATCH_OK)
	{
		int64		left;

		watch_drive(w);
		status = watch_consume(w, caller, events, nevents, &cap, &compact, &reason);
		if (status == SE_ETCD_WATCH_OK && w->ended)
		{
			status = SE_ETCD_WATCH_FAILED;
			reason = watch_end_reason(w);
		}
		else if (status == SE_ETCD_WATCH_OK && c->current != w->endpoint)
		{
			/*
			 * A call found this endpoint failing and moved on: an idle stream
			 * cannot tell a dead server from a quiet one, so follow the call.
			 */
			status = SE_ETCD_WATCH_FAILED;
			reason = psprintf("etcd [%s] failed a call, the client moved to [%s]: the watch must follow",
							  c->endpoints[w->endpoint], c->endpoints[c->current]);
		}
		if (status != SE_ETCD_WATCH_OK || *nevents > 0)
			break;
		left = deadline - now_ms();
		if (left <= 0)
			break;
#ifndef SE_FRONTEND
		CHECK_FOR_INTERRUPTS();
#endif
		watch_wait(w, (int) Min(left, 250));
	}
	scratch_end(caller);
	if (revision)
		*revision = w->revision;

	if (status != SE_ETCD_WATCH_OK && w->pending_status == SE_ETCD_WATCH_OK)
	{
		/* terminal: every later poll answers the same */
#ifndef SE_FRONTEND
		MemoryContext old = MemoryContextSwitchTo(w->cxt);
#endif

		w->pending_status = status;
		w->pending_compact = compact;
		w->pending_reason = reason ? pstrdup(reason) : NULL;
#ifndef SE_FRONTEND
		MemoryContextSwitchTo(old);
#endif
		if (status == SE_ETCD_WATCH_FAILED && c->current == w->endpoint)
			c->current = (w->endpoint + 1) % c->nendpoints;	/* the next watch goes elsewhere */
	}
	if (status == SE_ETCD_WATCH_OK || *nevents > 0)
		return SE_ETCD_WATCH_OK;	/* events first, the terminal status next poll */
	if (status == SE_ETCD_WATCH_COMPACTED)
	{
		if (compact_revision)
			*compact_revision = compact;
	}
	else
		se_error_set(err, 503, SE_ETCD_UNAVAILABLE, "%s", reason);
	return status;
}

int
se_etcd_watch_socket(SeEtcdWatch *w)
{
	return w->ended ? -1 : w->sock;
}

void
se_etcd_watch_stop(SeEtcdWatch *w)
{
	if (w == NULL)
		return;
#ifndef SE_FRONTEND
	MemoryContextDelete(w->cxt);	/* runs watch_release */
#else
	watch_release(w);			/* standalone, its memory leaks */
#endif
}
