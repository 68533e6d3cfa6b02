/*-------------------------------------------------------------------------
 *
 * http.c
 *	  The HTTP transport of `ingest --http URL` (POST /<index>/_bulk) and
 *	  `query --http URL` (POST /<index>/_search) with libcurl, one easy
 *	  handle (one keep-alive connection) per client.
 *
 * The body is the same NDJSON the SQL path hands to search_engine.bulk(),
 * sent as it is (application/x-ndjson, no compression: the SQL path does
 * not compress either), with refresh=false as the SQL call passes.  The
 * answer is ES's bulk response, read by lg_bulk_statuses as the SQL
 * answer is.  A whole request refused with 429 (the HTTP server's
 * http_max_in_flight / http_max_connections, or any 429 before the bulk
 * coordinator) counts as every item 429, as Elasticsearch clients treat it
 * (the Python client's streaming_bulk retries all of its items), so the
 * caller's classification and retries do not need to know the transport.
 *
 * No "Expect: 100-continue": the Python and Node clients do not send it,
 * and it would cost a round trip per request.  A request longer than
 * --timeout-ms is abandoned by the client (CURLE_OPERATION_TIMEDOUT) and
 * the connection reopened on the next request; the server finishes it
 * anyway, as a statement_timeout would not: the report's "applied anyway"
 * note covers both.  The server's own statement_timeout answers 400
 * task_cancelled_exception, also counted as a timeout.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "loadgen.h"

struct LgHttp
{
	CURL	   *curl;
	struct curl_slist *headers;
	char	   *url;			/* <base>/<index>/<endpoint> */
	char	   *resp;			/* the answer's body, grown as needed */
	size_t		resp_len;
	size_t		resp_cap;
	char		error[CURL_ERROR_SIZE];
};

static size_t
on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	LgHttp	   *h = arg;
	size_t		n = size * nmemb;

	if (h->resp_len + n + 1 > h->resp_cap)
	{
		size_t		cap = h->resp_cap ? h->resp_cap : 64 * 1024;

		while (h->resp_len + n + 1 > cap)
			cap *= 2;
		h->resp = realloc(h->resp, cap);
		if (h->resp == NULL)
			lg_die("out of memory");
		h->resp_cap = cap;
	}
	memcpy(h->resp + h->resp_len, ptr, n);
	h->resp_len += n;
	h->resp[h->resp_len] = '\0';
	return n;
}

/* Once, before any thread starts (curl_global_init is not thread-safe). */
void
lg_http_global_init(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		lg_die("curl_global_init failed");
}

/*
 * A handle for base URL o->http_url, index o->index and endpoint (with its
 * query string, e.g. "_bulk?refresh=false"), posting content_type; NULL on
 * failure.
 */
LgHttp *
lg_http_open(const LgOptions *o, const char *endpoint, const char *content_type)
{
	char		ctype[128];
	LgHttp	   *h = calloc(1, sizeof(LgHttp));
	char	   *index;
	size_t		l = strlen(o->http_url);

	if (h == NULL || (h->curl = curl_easy_init()) == NULL)
	{
		lg_log("cannot create a curl handle");
		free(h);
		return NULL;
	}
	index = curl_easy_escape(h->curl, o->index, 0);
	h->url = malloc(l + strlen(index) + strlen(endpoint) + 8);
	if (h->url == NULL)
		lg_die("out of memory");
	/* base URL with or without its trailing slash */
	sprintf(h->url, "%.*s/%s/%s",
			(int) (l > 0 && o->http_url[l - 1] == '/' ? l - 1 : l), o->http_url, index, endpoint);
	curl_free(index);
	snprintf(ctype, sizeof(ctype), "Content-Type: %s", content_type);
	h->headers = curl_slist_append(h->headers, ctype);
	h->headers = curl_slist_append(h->headers, "Expect:");
	curl_easy_setopt(h->curl, CURLOPT_URL, h->url);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->error);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);	/* threads */
	curl_easy_setopt(h->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	if (o->timeout_ms > 0)
		curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long) o->timeout_ms);
	if (o->http_user)
	{
		curl_easy_setopt(h->curl, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
		curl_easy_setopt(h->curl, CURLOPT_USERNAME, o->http_user);
		curl_easy_setopt(h->curl, CURLOPT_PASSWORD, o->http_password ? o->http_password : "");
	}
	if (o->http_insecure)
	{
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	return h;
}

void
lg_http_close(LgHttp *h)
{
	if (h == NULL)
		return;
	curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->headers);
	free(h->url);
	free(h->resp);
	free(h);
}

/* POST body once; the answer in h->resp, its status in *code */
static CURLcode
post(LgHttp *h, const char *body, size_t len, long *code)
{
	CURLcode	rc;

	h->resp_len = 0;
	if (h->resp)
		h->resp[0] = '\0';
	h->error[0] = '\0';
	*code = 0;
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
	rc = curl_easy_perform(h->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, code);
	return rc;
}

/*
 * POST an ES search body to _search once.  On LG_HTTP_OK *hits is the
 * length of hits.hits and *took_ms the answer's "took" (the server's own
 * clock, whole milliseconds as ES gives it); else a message in errbuf.
 */
LgHttpResult
lg_http_search(LgHttp *h, const char *body, size_t len, int *hits, double *took_ms,
			   char *errbuf, size_t errlen)
{
	static const char *const hits_path[] = {"hits", "hits"};
	static const char *const took_path[] = {"took"};
	CURLcode	rc;
	long		code;

	rc = post(h, body, len, &code);
	if (rc != CURLE_OK)
	{
		snprintf(errbuf, errlen, "%s", h->error[0] ? h->error : curl_easy_strerror(rc));
		return rc == CURLE_OPERATION_TIMEDOUT ? LG_HTTP_TIMEOUT : LG_HTTP_FAILED;
	}
	if (code != 200)
	{
		snprintf(errbuf, errlen, "HTTP %ld: %.300s", code, h->resp ? h->resp : "");
		return LG_HTTP_FAILED;
	}
	*hits = lg_json_array_length_at(h->resp ? h->resp : "", h->resp_len, hits_path, 2);
	if (!lg_json_number_at(h->resp ? h->resp : "", h->resp_len, took_path, 1, took_ms))
		*took_ms = 0;
	return LG_HTTP_OK;
}

/*
 * POST body (nitems items) to _bulk once; status[] gets the item statuses.
 * Returns LG_HTTP_OK when status[] was filled, else LG_HTTP_TIMEOUT or
 * LG_HTTP_FAILED with a message in errbuf.
 */
LgHttpResult
lg_http_bulk(LgHttp *h, const char *body, size_t len, int nitems, int *status,
			 char *errbuf, size_t errlen)
{
	CURLcode	rc;
	long		code = 0;
	int			n,
				i;

	rc = post(h, body, len, &code);
	if (rc != CURLE_OK)
	{
		snprintf(errbuf, errlen, "%s", h->error[0] ? h->error : curl_easy_strerror(rc));
		return rc == CURLE_OPERATION_TIMEDOUT ? LG_HTTP_TIMEOUT : LG_HTTP_FAILED;
	}
	if (code == 429)
	{
		/* the whole request refused: every item is to be retried */
		for (i = 0; i < nitems; i++)
			status[i] = 429;
		return LG_HTTP_OK;
	}
	if (code != 200)
	{
		snprintf(errbuf, errlen, "HTTP %ld: %.300s", code, h->resp ? h->resp : "");
		return code == 400 && h->resp && strstr(h->resp, "task_cancelled_exception") ?
			LG_HTTP_TIMEOUT : LG_HTTP_FAILED;
	}
	n = lg_bulk_statuses(h->resp ? h->resp : "", h->resp_len, status, nitems);
	if (n != nitems)
	{
		snprintf(errbuf, errlen, "bulk answered %d items for %d", n, nitems);
		return LG_HTTP_FAILED;
	}
	return LG_HTTP_OK;
}
