/*-------------------------------------------------------------------------
 *
 * http_server.c
 *	  Background workers serving ES's REST API over HTTP/1.1.
 *
 * Each worker runs libmicrohttpd (MHD) in external-select mode with epoll:
 * MHD never starts a thread, its epoll descriptor joins the worker's
 * WaitEventSet beside the latch and postmaster death, and MHD_run is called
 * from the worker's main loop.  MHD's callbacks (run inside MHD_run, on the
 * worker's only thread) only parse HTTP and gather bodies into malloc'd
 * buffers -- they never palloc or ereport, so no PostgreSQL error can
 * unwind through MHD's frames.  A complete request is queued and its
 * connection suspended; the main loop then runs each queued request in its
 * own transaction, as the authenticated role, through se_rest_dispatch --
 * the router search_engine.request() uses -- catching any ERROR into ES's
 * error body (a bad request never ends the worker), and resumes the
 * connection with the answer.  See src/http/README.md for why this and not
 * MHD's own threads.
 *
 * Several workers share the port with SO_REUSEPORT; the kernel spreads
 * connections over them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <zlib.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "api/api.h"
#include "http/http.h"
#include "http/http_int.h"
#include "node/node.h"

int			se_http_port = 0;
char	   *se_http_listen_addresses = NULL;
int			se_http_workers = 1;
int			se_http_max_content_length = 100 * 1024 * 1024;
int			se_http_max_connections = 512;
int			se_http_max_in_flight = 128;
int			se_http_idle_timeout = 60;
int			se_http_request_timeout = 60;
char	   *se_http_anonymous_role = NULL;
char	   *se_http_ssl_cert_file = NULL;
char	   *se_http_ssl_key_file = NULL;
char	   *se_http_ssl_ca_file = NULL;
char	   *se_http_ssl_cert_map = NULL;

/* http_ssl_ca_file's PEM, or NULL: client certificates are not asked for */
static char *client_ca = NULL;
bool		se_http_compression = true;
int			se_http_auth_failure_limit = 5;
int			se_http_max_in_flight_bytes = 512 * 1024;	/* kB */

#define MAX_DAEMONS 16
/* MHD's per-connection pool: request line and headers must fit (ES: 16kb) */
#define CONNECTION_MEMORY (64 * 1024)
/* ES's http.compression_level */
#define GZIP_LEVEL 3

/* Connection phases, for the timeouts */
typedef enum ConnPhase
{
	CONN_IDLE,					/* between requests (or before the first) */
	CONN_RECEIVING,				/* request line seen, request not complete */
	CONN_PROCESSING				/* queued or being answered: no timeout */
} ConnPhase;

typedef struct HttpConn
{
	struct HttpConn *prev;
	struct HttpConn *next;
	struct MHD_Connection *mc;
	ConnPhase	phase;
	TimestampTz since;			/* start of the phase */
	bool		over_limit;		/* opened past http_max_connections */
	bool		shut;			/* timed out: shutdown() asked */
	char		addr[NI_MAXHOST];
	int			stats_slot;		/* in _nodes/stats http.clients (http_stats.c) */
} HttpConn;

static struct MHD_Daemon *daemons[MAX_DAEMONS];
static int	ndaemons = 0;
static HttpConn *conns = NULL;
static int	nconns = 0;
static HttpReq *queue_head = NULL;
static HttpReq *queue_tail = NULL;
/* requests begun (request line in) and not yet answered: bodies in memory */
static int	ninflight = 0;
/* bytes allocated for their bodies */
static size_t held_bytes = 0;
static Oid	worker_user = InvalidOid;
static int	worker_no = 0;
static MemoryContext request_cxt = NULL;

void
se_http_guc_define(void)
{
	DefineCustomStringVariable("search_engine.http_anonymous_role",
							   "Role that HTTP requests without credentials run as; empty: they get 401.",
							   NULL,
							   &se_http_anonymous_role, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_auth_failure_limit",
							"Failed HTTP logins per client address and minute before its logins are refused unchecked.",
							NULL,
							&se_http_auth_failure_limit, 5, 1, 1000000,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("search_engine.http_compression",
							 "Gzip HTTP responses for clients that accept it (ES's http.compression).",
							 NULL,
							 &se_http_compression, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_idle_timeout",
							"Close an HTTP connection idle this long between requests.",
							NULL,
							&se_http_idle_timeout, 60, 1, 86400,
							PGC_POSTMASTER, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomStringVariable("search_engine.http_listen_addresses",
							   "Addresses the HTTP server listens on: a comma-separated list of host names or IP addresses, * for all.",
							   NULL,
							   &se_http_listen_addresses, "localhost",
							   PGC_POSTMASTER, GUC_LIST_INPUT, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_max_connections",
							"Open HTTP connections per HTTP worker; a request on a connection past it gets 429.",
							NULL,
							&se_http_max_connections, 512, 1, 65536,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_max_content_length",
							"Largest HTTP request body (after gunzip); larger ones get 413 (ES's http.max_content_length).",
							NULL,
							&se_http_max_content_length, 100 * 1024 * 1024, 1024, MaxAllocSize,
							PGC_SIGHUP, GUC_UNIT_BYTE, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_max_in_flight_bytes",
							"Bytes of request bodies an HTTP worker holds for requests in flight; past it 429 (ES's in_flight_requests breaker).",
							NULL,
							&se_http_max_in_flight_bytes, 512 * 1024, 64, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_max_in_flight",
							"HTTP requests received and not yet answered per HTTP worker; past it 429.",
							NULL,
							&se_http_max_in_flight, 128, 1, 65536,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_port",
							"TCP port of the HTTP server (ES's REST API); 0 turns it off.",
							NULL,
							&se_http_port, 0, 0, 65535,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_request_timeout",
							"Time a client has to send a whole request (headers and body) once it began.",
							"A slow client is disconnected past it, so it cannot hold a connection slot.",
							&se_http_request_timeout, 60, 1, 86400,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomStringVariable("search_engine.http_ssl_cert_file",
							   "PEM certificate (chain) of the HTTP server; with http_ssl_key_file it serves HTTPS only.",
							   NULL,
							   &se_http_ssl_cert_file, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("search_engine.http_ssl_key_file",
							   "PEM private key of the HTTP server's certificate.",
							   NULL,
							   &se_http_ssl_key_file, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("search_engine.http_ssl_ca_file",
							   "PEM certificate authorities whose client certificates log in as the role their CN names.",
							   "As PostgreSQL's cert authentication: the certificate must verify against these CAs "
							   "and its common name is the role (which needs LOGIN). Empty: no client certificates.",
							   &se_http_ssl_ca_file, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("search_engine.http_ssl_cert_map",
							   "pg_ident.conf map that says which roles a client certificate's CN may log in as.",
							   "As PostgreSQL's cert authentication with map=: the role is the one the client names "
							   "in es-security-runas-user, if the map allows it, else the first the map gives the CN. "
							   "Empty: the CN is the role.",
							   &se_http_ssl_cert_map, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("search_engine.http_workers",
							"Background workers serving HTTP; they share the port (SO_REUSEPORT).",
							NULL,
							&se_http_workers, 1, 1, 64,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);
}

void
se_http_register(void)
{
	if (se_http_port != 0)
		se_bgw_register("se_http_worker_main", "search_engine http", se_http_workers, true);
}

/* ---------------------------------------------------------------------
 * Responses (also built inside MHD's callbacks: malloc only, no palloc)
 * ---------------------------------------------------------------------
 */

/* Headers every response carries; the content type clients asked for. */
static void
add_common_headers(struct MHD_Response *resp, const HttpReq *req, bool text)
{
	MHD_add_response_header(resp, "X-Elastic-Product", "Elasticsearch");
	if (req && req->opaque_id)
		MHD_add_response_header(resp, "X-Opaque-Id", req->opaque_id);
	if (text)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=UTF-8");
	else if (req && req->answer_cbor && !req->compat_version)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/cbor");
	else if (req && req->compat_version)
	{
		char		ct[80];

		snprintf(ct, sizeof(ct), "application/vnd.elasticsearch+%s;compatible-with=%d",
				 req->answer_cbor ? "cbor" : "json", req->compat_version);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	}
	else
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
}

/* gzip data into a malloc'd buffer; NULL if zlib fails (then sent plain) */
static char *
gzip_body(const char *data, size_t len, size_t *out_len)
{
	z_stream	zs;
	size_t		cap;
	char	   *out;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	cap = deflateBound(&zs, len) + 32;
	out = malloc(cap);
	if (out == NULL)
	{
		deflateEnd(&zs);
		return NULL;
	}
	zs.next_in = (Bytef *) data;
	zs.avail_in = len;
	zs.next_out = (Bytef *) out;
	zs.avail_out = cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
	{
		deflateEnd(&zs);
		free(out);
		return NULL;
	}
	*out_len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

/*
 * A response with body data[0..len) (copied or compressed: MHD owns the
 * result).  Gzipped when the client accepts it and compression is on.
 */
static struct MHD_Response *
make_response(HttpReq *req, const char *data, size_t len, bool text)
{
	struct MHD_Response *resp = NULL;

	if (len > 0 && req && req->accept_gzip && se_http_compression)
	{
		size_t		zlen;
		char	   *z = gzip_body(data, len, &zlen);

		if (z)
		{
			resp = MHD_create_response_from_buffer(zlen, z, MHD_RESPMEM_MUST_FREE);
			if (resp == NULL)
				free(z);
			else
				MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
		}
	}
	if (resp == NULL)
		resp = MHD_create_response_from_buffer(len, (void *) data, MHD_RESPMEM_MUST_COPY);
	if (resp == NULL)
		return NULL;
	if (req && req->accept_gzip)
		MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	add_common_headers(resp, req, text);
	return resp;
}

/*
 * ES's error body for an error the server itself answers (413, 429, bad
 * body): reason is our own text, with nothing to escape.
 */
static struct MHD_Response *
se_http_error_response(HttpReq *req, int status, const char *type, const char *reason)
{
	char		body[1024];
	int			n;

	n = snprintf(body, sizeof(body),
				 "{\"error\":{\"root_cause\":[{\"type\":\"%s\",\"reason\":\"%s\"}],"
				 "\"type\":\"%s\",\"reason\":\"%s\"},\"status\":%d}",
				 type, reason, type, reason, status);
	return make_response(req, body, Min(n, (int) sizeof(body) - 1), false);
}

/* Answer req now from inside an MHD callback; the connection then closes
 * if its body was not read (MHD's rule). */
static enum MHD_Result
answer_now(struct MHD_Connection *mc, HttpReq *req, int status, const char *type,
		   const char *reason)
{
	struct MHD_Response *resp = se_http_error_response(req, status, type, reason);
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	/* a connection past the limit is closed, not kept to be refused again */
	if (req->conn && req->conn->over_limit)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(mc, status, resp);
	MHD_destroy_response(resp);
	req->answered = true;
	return ret;
}

/* Is the media type of ct (a header's first, parameters aside) in types? */
static bool
media_type_in(const char *ct, const char *const *types)
{
	size_t		len;
	int			i;

	if (ct == NULL)
		return false;
	while (*ct == ' ')
		ct++;
	len = strcspn(ct, "; ,");
	for (i = 0; types[i]; i++)
		if (len == strlen(types[i]) && pg_strncasecmp(ct, types[i], len) == 0)
			return true;
	return false;
}

/* ES's CBOR media types (XContentType.CBOR and its vendor type) */
static const char *const cbor_types[] = {"application/cbor", "application/vnd.elasticsearch+cbor",
NULL};

/*
 * Can a body of this Content-Type be read?  ES's strict content-type check
 * (since 6.0) takes its XContent media types; of them the router parses
 * JSON and NDJSON, and CBOR is translated to JSON first (http_cbor.c),
 * plain or as ES's vendor types (parameters such as charset or
 * compatible-with aside).  Anything else -- text/plain, a form, no header
 * at all -- is refused with 406, as ES does, rather than parsed as if it
 * were JSON.  (Smile, ES's fourth, has no Debian library: 406.)
 */
static bool
body_media_type_ok(const char *ct)
{
	static const char *const ok[] = {"application/json", "application/x-ndjson",
		"application/vnd.elasticsearch+json", "application/vnd.elasticsearch+x-ndjson",
	"application/cbor", "application/vnd.elasticsearch+cbor", NULL};

	return media_type_in(ct, ok);
}

/* ES's 406 for a body it cannot read: a bare {"error": text, "status": 406} */
static enum MHD_Result
answer_not_acceptable(struct MHD_Connection *mc, HttpReq *req)
{
	char		body[600];
	int			n = 0;
	const char *c;
	struct MHD_Response *resp;
	enum MHD_Result ret;

	n = snprintf(body, sizeof(body), "{\"error\":\"Content-Type header [");
	/* the header as sent, JSON-escaped and cut short */
	for (c = req->content_type ? req->content_type : ""; *c && n < 480; c++)
	{
		if (*c == '"' || *c == '\\')
			body[n++] = '\\';
		body[n++] = ((unsigned char) *c < 0x20) ? ' ' : *c;
	}
	n += snprintf(body + n, sizeof(body) - n, "] is not supported\",\"status\":406}");
	resp = make_response(req, body, n, false);
	if (resp == NULL)
		return MHD_NO;
	ret = MHD_queue_response(mc, 406, resp);
	MHD_destroy_response(resp);
	req->answered = true;
	return ret;
}

/* ---------------------------------------------------------------------
 * MHD callbacks: connections, request start and end
 * ---------------------------------------------------------------------
 */

/* A socket address as ES writes one: ip:port, [ipv6]:port */
static void
address_text(const struct sockaddr *sa, char *out, size_t outlen)
{
	char		host[NI_MAXHOST];
	char		port[NI_MAXSERV];

	if (sa == NULL ||
		getnameinfo(sa, sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					sizeof(struct sockaddr_in), host, sizeof(host), port, sizeof(port),
					NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		strlcpy(out, "?", outlen);
	else
		snprintf(out, outlen, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

/* Count a new connection in _nodes/stats http; its slot there (or -1). */
static int
stats_open(struct MHD_Connection *mc, const union MHD_ConnectionInfo *client)
{
	const union MHD_ConnectionInfo *fd = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage local;
	socklen_t	llen = sizeof(local);
	char		local_text[NI_MAXHOST + NI_MAXSERV + 4];
	char		remote_text[NI_MAXHOST + NI_MAXSERV + 4];

	if (fd == NULL || getsockname(fd->connect_fd, (struct sockaddr *) &local, &llen) != 0)
		strlcpy(local_text, "?", sizeof(local_text));
	else
		address_text((struct sockaddr *) &local, local_text, sizeof(local_text));
	address_text(client ? client->client_addr : NULL, remote_text, sizeof(remote_text));
	return se_http_stats_open(worker_no, local_text, remote_text);
}

static void
notify_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
				  enum MHD_ConnectionNotificationCode toe)
{
	HttpConn   *c;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
	{
		const union MHD_ConnectionInfo *ci;

		c = calloc(1, sizeof(HttpConn));
		if (c == NULL)
			return;
		c->mc = mc;
		c->phase = CONN_IDLE;
		c->since = GetCurrentTimestamp();
		c->over_limit = nconns >= se_http_max_connections;
		ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ci == NULL || ci->client_addr == NULL ||
			getnameinfo(ci->client_addr,
						ci->client_addr->sa_family == AF_INET6 ?
						sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
						c->addr, sizeof(c->addr), NULL, 0, NI_NUMERICHOST) != 0)
			strlcpy(c->addr, "?", sizeof(c->addr));
		c->stats_slot = stats_open(mc, ci);
		c->next = conns;
		if (conns)
			conns->prev = c;
		conns = c;
		nconns++;
		*socket_context = c;
	}
	else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context != NULL)
	{
		c = *socket_context;
		if (c->prev)
			c->prev->next = c->next;
		else
			conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		nconns--;
		se_http_stats_close(worker_no, c->stats_slot);
		free(c);
		*socket_context = NULL;
	}
}

static HttpConn *
conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? (HttpConn *) ci->socket_context : NULL;
}

/*
 * The request line is in: a request begins.  Its raw URI (path and query
 * string, still %-encoded, as the router's parse_path reads it) is kept;
 * the result becomes the request's context for the access handler.
 */
static void *
uri_logger(void *cls, const char *uri, struct MHD_Connection *mc)
{
	HttpReq    *req = calloc(1, sizeof(HttpReq));
	HttpConn   *c = conn_of(mc);

	if (req == NULL)
		return NULL;
	req->uri = strdup(uri ? uri : "/");
	if (req->uri == NULL)
	{
		free(req);
		return NULL;			/* the access handler refuses it */
	}
	req->conn = c;
	ninflight++;
	if (c)
	{
		c->phase = CONN_RECEIVING;
		c->since = GetCurrentTimestamp();
		strlcpy(req->addr, c->addr, sizeof(req->addr));
	}
	return req;
}

static void
body_release(HttpReq *req)
{
	free(req->body);
	held_bytes -= req->held;
	pg_atomic_fetch_sub_u64(&SeShmem->http_held_bytes, req->held);
	req->body = NULL;
	req->held = 0;
	req->len = req->cap = 0;
}

static size_t
in_flight_limit(void)
{
	return (size_t) se_http_max_in_flight_bytes * 1024;
}

static void
req_free(HttpReq *req)
{
	if (req->inflating)
		inflateEnd(&req->zs);
	free(req->uri);
	free(req->method);
	free(req->auth);
	free(req->cert_user);
	free(req->runas);
	free(req->opaque_id);
	free(req->content_type);
	body_release(req);
	if (req->response)
		MHD_destroy_response(req->response);
	free(req);
}

static void
request_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
				  enum MHD_RequestTerminationCode toe)
{
	HttpReq    *req = *con_cls;
	HttpConn   *c = conn_of(mc);

	if (c)
	{
		c->phase = CONN_IDLE;
		c->since = GetCurrentTimestamp();
	}
	if (req)
	{
		ninflight--;
		if (c)
			se_http_stats_request_bytes(c->stats_slot, req->received);
		req_free(req);
	}
	*con_cls = NULL;
}

static void
mhd_logger(void *cls, const char *fmt, va_list ap)
{
	char		buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	ereport(DEBUG1, (errmsg_internal("search_engine http: %s", buf)));
}

/* ---------------------------------------------------------------------
 * Request headers and body
 * ---------------------------------------------------------------------
 */

/* compatible-with=N of an ES vendor media type; 0 if none, -1 if invalid */
static int
compat_version(const char *media)
{
	const char *p;

	if (media == NULL || strstr(media, "vnd.elasticsearch+") == NULL)
		return 0;
	p = strstr(media, "compatible-with=");
	if (p == NULL)
		return -1;
	p += strlen("compatible-with=");
	if ((p[0] == '7' || p[0] == '8') && !isdigit((unsigned char) p[1]))
		return p[0] - '0';
	return -1;
}

/* Does an Accept-Encoding value accept gzip (not with q=0)? */
static bool
accepts_gzip(const char *ae)
{
	const char *p;

	for (p = ae; p && (p = strcasestr(p, "gzip")) != NULL; p += 4)
	{
		const char *q = p + 4;

		while (*q == ' ')
			q++;
		if (*q == ';')
		{
			q = strchr(q, '=');
			if (q && strtod(q + 1, NULL) == 0)
				return false;
		}
		return true;
	}
	return false;
}

/*
 * Refuse a request when its headers are read.  With a body coming and no
 * "Expect: 100-continue", answering at once would close the connection
 * while the client still sends, and the reset can destroy the answer: the
 * body is read and dropped instead, and the refusal answered at its end.
 * Always false (the caller stops reading headers).
 */
static bool
refuse(struct MHD_Connection *mc, HttpReq *req, int status, const char *type,
	   const char *reason, enum MHD_Result *ret)
{
	const char *expect = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
	const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
												 MHD_HTTP_HEADER_CONTENT_LENGTH);
	bool		body_follows = (cl && strtoull(cl, NULL, 10) > 0) ||
		MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
									MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;

	if (!body_follows || (expect && strcasestr(expect, "100-continue")))
	{
		*ret = answer_now(mc, req, status, type, reason);
		return false;
	}
	req->fail_status = status;
	req->fail_type = type;
	req->fail_reason = reason;
	*ret = MHD_YES;
	return false;
}

/* Read the headers on the first call; false if refused (see refuse). */
static bool
read_headers(struct MHD_Connection *mc, HttpReq *req, const char *method,
			 enum MHD_Result *ret)
{
	const char *v;
	int			ca,
				cc;

	req->method = strdup(method);
	if (req->method == NULL)
	{
		*ret = MHD_NO;
		return false;
	}
	v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (v)
		req->auth = strdup(v);
	if (client_ca)
	{
		se_http_client_cert(mc, req);
		v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "es-security-runas-user");
		if (v)
			req->runas = strdup(v);
	}
	v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "X-Opaque-Id");
	if (v)
		req->opaque_id = strdup(v);
	if (req->conn)
		se_http_stats_request(req->conn->stats_slot, req->uri,
							  MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
														  MHD_HTTP_HEADER_USER_AGENT),
							  req->opaque_id);
	v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (v)
		req->content_type = strdup(v);
	req->accept_gzip = accepts_gzip(MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
																MHD_HTTP_HEADER_ACCEPT_ENCODING));
	ca = compat_version(MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));
	cc = compat_version(MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
													MHD_HTTP_HEADER_CONTENT_TYPE));
	if (ca < 0 || cc < 0 || (ca > 0 && cc > 0 && ca != cc))
	{
		return refuse(mc, req, 400, "media_type_header_exception",
						  "Invalid media-type value on headers [Accept, Content-Type]: compatible-with must be 7 or 8, the same on both", ret);
	}
	req->compat_version = ca ? ca : cc;
	/* CBOR in (the body is translated to JSON) and out (Accept: its first type) */
	req->body_cbor = media_type_in(req->content_type, cbor_types);
	req->accept_cbor = media_type_in(MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
																 MHD_HTTP_HEADER_ACCEPT),
									 cbor_types);
	if (req->conn && req->conn->over_limit)
	{
		return refuse(mc, req, 429, "es_rejected_execution_exception",
						  "rejected execution of http request: this HTTP worker has search_engine.http_max_connections connections open", ret);
	}
	/*
	 * A single thread answers one request at a time, so what is bounded is
	 * the requests begun and not yet answered -- each may hold a body of
	 * up to http_max_content_length.
	 */
	if (ninflight > se_http_max_in_flight)
	{
		return refuse(mc, req, 429, "es_rejected_execution_exception",
						  "rejected execution of http request: this HTTP worker has search_engine.http_max_in_flight requests in flight", ret);
	}
	v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (v && strtoull(v, NULL, 10) > (unsigned long long) se_http_max_content_length)
	{
		return refuse(mc, req, 413, "content_too_long_exception",
						  "request body is larger than search_engine.http_max_content_length", ret);
	}
	if (v && strtoull(v, NULL, 10) > 0)
	{
		/* the one copy of the body: sized once when its length is known */
		req->cap = strtoull(v, NULL, 10);
		if (held_bytes + req->cap > in_flight_limit())
		{
			pg_atomic_fetch_add_u64(&SeShmem->http_breaker_trips, 1);
			return refuse(mc, req, 429, "circuit_breaking_exception",
							  "[in_flight_requests] Data too large: the bodies of this HTTP worker's requests in flight would pass search_engine.http_max_in_flight_bytes", ret);
		}
	}
	v = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
	if (v && (pg_strcasecmp(v, "gzip") == 0 || pg_strcasecmp(v, "deflate") == 0 ||
			  pg_strcasecmp(v, "x-gzip") == 0))
	{
		/* 15 + 32: zlib reads a gzip or a zlib header */
		if (inflateInit2(&req->zs, 15 + 32) != Z_OK)
		{
			*ret = MHD_NO;
			return false;
		}
		req->inflating = true;
		req->cap = 0;			/* the inflated size is not known */
	}
	else if (v && pg_strcasecmp(v, "identity") != 0)
	{
		return refuse(mc, req, 415, "illegal_argument_exception",
						  "unsupported Content-Encoding: gzip, deflate and identity are supported", ret);
	}
	return true;
}

/* Why a body cannot grow */
#define BODY_TOO_LONG "too_long"	/* past http_max_content_length: 413 */
#define BODY_NO_ROOM "no_room"		/* past http_max_in_flight_bytes: 429 */

/* Make room for n more body bytes: NULL, or why not */
static const char *
body_reserve(HttpReq *req, size_t n)
{
	size_t		want = req->len + n;

	if (want > (size_t) se_http_max_content_length)
		return BODY_TOO_LONG;
	if (want > req->cap || req->body == NULL)
	{
		size_t		cap = Max(Max(req->cap, want), 8192);
		char	   *b;

		if (req->body != NULL && cap < (size_t) se_http_max_content_length / 2)
			cap = Max(cap, req->cap * 2);
		cap = Min(cap, (size_t) se_http_max_content_length);
		if (held_bytes - req->held + cap + 1 > in_flight_limit())
			return BODY_NO_ROOM;
		b = realloc(req->body, cap + 1);
		if (b == NULL)
			return BODY_NO_ROOM;
		req->body = b;
		req->cap = cap;
		held_bytes += cap + 1 - req->held;
		pg_atomic_fetch_add_u64(&SeShmem->http_held_bytes, cap + 1 - req->held);
		req->held = cap + 1;
	}
	return NULL;
}

/* Append a piece of upload data (gunzipped if so encoded). */
static const char *
body_append(HttpReq *req, const char *data, size_t size)
{
	const char *why;

	req->received += size;
	if (!req->inflating)
	{
		if ((why = body_reserve(req, size)) != NULL)
			return why;
		memcpy(req->body + req->len, data, size);
		req->len += size;
		return NULL;
	}
	req->zs.next_in = (Bytef *) data;
	req->zs.avail_in = size;
	while (req->zs.avail_in > 0)
	{
		int			rc;

		if (req->inflated)
			return "trailing data after the gzip stream";
		if (body_reserve(req, Max(size * 4, 16384)) != NULL &&
			(why = body_reserve(req, 1)) != NULL)
			return why;
		req->zs.next_out = (Bytef *) req->body + req->len;
		req->zs.avail_out = req->cap - req->len;
		rc = inflate(&req->zs, Z_NO_FLUSH);
		req->len = req->cap - req->zs.avail_out;
		if (rc == Z_STREAM_END)
			req->inflated = true;
		else if (rc != Z_OK && rc != Z_BUF_ERROR)
			return "invalid";
	}
	return NULL;
}

/*
 * MHD's access handler: called when the headers are in, for each piece
 * of the body, once more at its end, and again after a resume.
 */
static enum MHD_Result
access_handler(void *cls, struct MHD_Connection *mc, const char *url,
			   const char *method, const char *version, const char *upload_data,
			   size_t *upload_data_size, void **con_cls)
{
	HttpReq    *req = *con_cls;
	enum MHD_Result ret = MHD_YES;

	if (req == NULL)
		return MHD_NO;			/* out of memory at the request line */
	if (req->answered)
	{
		/* answered early (413, 429 ...): the rest of the body is dropped */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (req->response)
	{
		/* resumed: the main loop's answer */
		ret = MHD_queue_response(mc, req->status, req->response);
		MHD_destroy_response(req->response);
		req->response = NULL;
		req->answered = true;
		return ret;
	}
	if (req->ran)
		return MHD_NO;			/* no answer could be made (out of memory): close */
	if (!req->started)
	{
		req->started = true;
		if (!read_headers(mc, req, method, &ret))
			return ret;
		return MHD_YES;
	}
	if (*upload_data_size > 0)
	{
		/*
		 * MHD cannot answer before the body is read, so a body found bad
		 * is read to its end and dropped (http_request_timeout bounds it)
		 */
		const char *bad = req->fail_status ? NULL :
			body_append(req, upload_data, *upload_data_size);

		*upload_data_size = 0;
		if (bad && strcmp(bad, BODY_TOO_LONG) == 0)
		{
			req->fail_status = 413;
			req->fail_type = "content_too_long_exception";
			req->fail_reason = "request body is larger than search_engine.http_max_content_length";
		}
		else if (bad && strcmp(bad, BODY_NO_ROOM) == 0)
		{
			req->fail_status = 429;
			pg_atomic_fetch_add_u64(&SeShmem->http_breaker_trips, 1);
			req->fail_type = "circuit_breaking_exception";
			req->fail_reason = "[in_flight_requests] Data too large: the bodies of this HTTP worker's requests in flight would pass search_engine.http_max_in_flight_bytes";
		}
		else if (bad)
		{
			req->fail_status = 400;
			req->fail_type = "parse_exception";
			req->fail_reason = "invalid gzip request body (Content-Encoding: gzip)";
		}
		if (bad)
			body_release(req);
		return MHD_YES;
	}
	/* the whole request is in */
	if (req->fail_status)
		return answer_now(mc, req, req->fail_status, req->fail_type, req->fail_reason);
	if (req->inflating && !req->inflated)
		return answer_now(mc, req, 400, "parse_exception",
						  "invalid gzip request body (Content-Encoding: gzip): truncated");
	if (req->len > 0 && !body_media_type_ok(req->content_type))
		return answer_not_acceptable(mc, req);
	if (req->body)
		req->body[req->len] = '\0';
	req->mc = mc;
	req->next = NULL;
	if (queue_tail)
		queue_tail->next = req;
	else
		queue_head = req;
	queue_tail = req;
	if (req->conn)
		req->conn->phase = CONN_PROCESSING;
	MHD_suspend_connection(mc);
	return MHD_YES;
}

/* ---------------------------------------------------------------------
 * The main loop's side: run a queued request
 * ---------------------------------------------------------------------
 */

/*
 * req's response from the router's answer: CBOR when the client's Accept
 * asked for it and the answer is JSON (text and YAML stay as they are).
 */
static void
answer(HttpReq *req, const char *data, size_t len, bool text, bool yaml)
{
	if (req->accept_cbor && !text && !yaml)
	{
		size_t		clen;
		char	   *c = se_http_json_to_cbor(data, len, &clen);

		if (c)
		{
			req->answer_cbor = true;
			data = c;
			len = clen;
		}
	}
	req->response = make_response(req, data, len, text);
}

/*
 * Run req through the router in a transaction as its role; set
 * req->response.  Any ERROR is answered as ES's error body for its
 * SQLSTATE; the worker goes on.
 */
static void
run_request(HttpReq *req)
{
	MemoryContext old = MemoryContextSwitchTo(request_cxt);
	StringInfoData activity;

	initStringInfo(&activity);
	appendStringInfo(&activity, "%s %s", req->method, req->uri);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity.data);
	/*
	 * The server's statement_timeout bounds a request as it bounds the same
	 * call through SQL (the router checks for interrupts in its loops), so a
	 * runaway request cannot hold the worker and the requests queued on it.
	 */
	if (StatementTimeout > 0)
		enable_timeout_after(STATEMENT_TIMEOUT, StatementTimeout);
	PG_TRY();
	{
		SeResponse r;
		SeError		err;
		Oid			role;
		bool		challenge = false;

		se_error_init(&err);
		role = se_http_authenticate(req, &err, &challenge);
		if (OidIsValid(role) && !se_http_may_request(req, role, &err))
			role = InvalidOid;
		if (!OidIsValid(role))
		{
			se_response_init(&r);
			r.status = err.status;
			se_error_body(&err, &r.body);
		}
		else
		{
			const char *body = req->body;
			size_t		len = req->len;

			if (req->body_cbor && len > 0)
				body = se_http_cbor_to_json(req->body, req->len, &len, &err);
			se_response_init(&r);
			if (se_error_is_set(&err))
			{
				r.status = err.status;
				se_error_body(&err, &r.body);
			}
			else
			{
				SetUserIdAndSecContext(role, SECURITY_LOCAL_USERID_CHANGE);
				se_rest_dispatch(req->method, req->uri, body, len, &r);
				SetUserIdAndSecContext(worker_user, 0);
			}
		}
		if (r.jsonb != NULL)
		{
			size_t		len;
			char	   *s = se_text_from_jsonb(JsonbPGetDatum(r.jsonb), &len);

			answer(req, s, len, false, false);
		}
		else
			answer(req, r.body.data, r.body.len, r.is_text, r.is_yaml);
		if (r.is_yaml && req->response)
		{
			MHD_del_response_header(req->response, MHD_HTTP_HEADER_CONTENT_TYPE,
									"text/plain; charset=UTF-8");
			MHD_add_response_header(req->response, MHD_HTTP_HEADER_CONTENT_TYPE,
									"application/yaml");
		}
		req->status = r.status;
		if (r.allow && req->response)
			MHD_add_response_header(req->response, "Allow", r.allow);
		if (challenge && req->response)
			MHD_add_response_header(req->response, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
									"Basic realm=\"security\" charset=\"UTF-8\"");
		disable_timeout(STATEMENT_TIMEOUT, false);
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		SeError		err;
		SeResponse	r;

		disable_timeout(STATEMENT_TIMEOUT, false);
		MemoryContextSwitchTo(request_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		SetUserIdAndSecContext(worker_user, 0);
		if (req->response)
		{
			MHD_destroy_response(req->response);
			req->response = NULL;
		}
		se_error_init(&err);
		se_error_from_edata(edata, &err);
		ereport(err.status >= 500 ? LOG : DEBUG1,
				(errmsg("search_engine http: %s %s failed: %s", req->method, req->uri,
						edata->message)));
		/* building the error body needs a transaction for nothing: plain text */
		se_response_init(&r);
		se_error_body(&err, &r.body);
		req->status = err.status;
		answer(req, r.body.data, r.body.len, false, false);
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	MemoryContextSwitchTo(old);
	MemoryContextReset(request_cxt);
}

/*
 * Has the client of a queued request closed its connection?  A suspended
 * connection is not watched by MHD, so peek at the socket: EOF or an
 * error means nobody waits for the answer.  A client that timed out on a
 * busy worker and sent its request again elsewhere would otherwise have
 * it run twice, and the wasted run delays everyone queued behind it.
 * (Pending bytes, such as a pipelined next request, mean it is there.)
 */
static bool
client_gone(HttpReq *req)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(req->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	char		c;
	ssize_t		n;

	if (ci == NULL)
		return false;
	n = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 ||
		(n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Run the queued requests and resume their connections; how many ran */
static int
run_queue(void)
{
	int			n = 0;

	while (queue_head && !se_bgw_got_sigterm)
	{
		HttpReq    *req = queue_head;

		queue_head = req->next;
		if (queue_head == NULL)
			queue_tail = NULL;
		if (client_gone(req))
		{
			/* never run: the answer only lets MHD finish and close */
			ereport(LOG,
					(errmsg("search_engine http: %s %s from %s not run: the client closed the connection while it waited",
							req->method, req->uri, req->addr)));
			req->status = 400;
			req->response = se_http_error_response(req, 400, "task_cancelled_exception",
												   "the client closed the connection before the request ran");
		}
		else
			run_request(req);
		req->ran = true;
		body_release(req);		/* answered: its memory goes back now */
		MHD_resume_connection(req->mc);
		n++;
		CHECK_FOR_INTERRUPTS();
	}
	return n;
}

/*
 * Connections past a timeout: a request begun longer than
 * http_request_timeout ago and not yet complete, or idle between requests
 * longer than http_idle_timeout (MHD's own timeout restarts at every
 * byte, so a client sending one byte at a time would never meet it).
 * shutdown() makes MHD see the end of the connection and close it.
 */
static void
sweep_timeouts(void)
{
	TimestampTz now = GetCurrentTimestamp();
	HttpConn   *c;

	for (c = conns; c; c = c->next)
	{
		int			limit_s;
		const union MHD_ConnectionInfo *ci;

		if (c->phase == CONN_PROCESSING || c->shut)
			continue;
		limit_s = c->phase == CONN_RECEIVING ? se_http_request_timeout : se_http_idle_timeout;
		if (!TimestampDifferenceExceeds(c->since, now, limit_s * 1000))
			continue;
		ci = MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci == NULL)
			continue;
		if (c->phase == CONN_RECEIVING)
			ereport(LOG,
					(errmsg("search_engine http: closing the connection of %s: its request took longer than search_engine.http_request_timeout to arrive",
							c->addr)));
		shutdown(ci->connect_fd, SHUT_RDWR);
		c->shut = true;
	}
}

/* ---------------------------------------------------------------------
 * Start-up
 * ---------------------------------------------------------------------
 */
static char *
read_pem(const char *path, const char *what)
{
	FILE	   *f = AllocateFile(path, "r");
	StringInfoData s;
	char		buf[4096];
	size_t		n;
	char	   *out;

	if (f == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open HTTP %s file \"%s\": %m", what, path)));
	initStringInfo(&s);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		appendBinaryStringInfo(&s, buf, n);
	FreeFile(f);
	/* MHD keeps the pointer: malloc'd, for the life of the worker */
	out = strdup(s.data);
	pfree(s.data);
	return out;
}

static void
start_daemon(const struct sockaddr *sa, unsigned int flags, const char *key, const char *cert,
			 const char *what)
{
	struct MHD_OptionItem opts[16];
	int			n = 0;
	struct MHD_Daemon *d;

	if (ndaemons >= MAX_DAEMONS)
		return;
#define OPT(o, v, p) (opts[n].option = (o), opts[n].value = (intptr_t) (v), opts[n].ptr_value = (p), n++)
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, se_http_idle_timeout, NULL);
	/* past max_connections a connection is answered 429; a hard cap above */
	OPT(MHD_OPTION_CONNECTION_LIMIT, se_http_max_connections + 64, NULL);
	OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONNECTION_MEMORY, NULL);
	OPT(MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL);
	OPT(MHD_OPTION_NOTIFY_CONNECTION, notify_connection, NULL);
	OPT(MHD_OPTION_NOTIFY_COMPLETED, request_completed, NULL);
	OPT(MHD_OPTION_URI_LOG_CALLBACK, uri_logger, NULL);
	OPT(MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL);
	if (sa)
		OPT(MHD_OPTION_SOCK_ADDR, 0, (void *) sa);
	if (key)
	{
		OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, (void *) key);
		OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, (void *) cert);
		/* MHD then asks clients for a certificate (optional for them) */
		if (client_ca)
			OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *) client_ca);
	}
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
	/* the MHD_OPTION_NOTIFY_* pairs take the callback as the value */
	d = MHD_start_daemon(flags | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
						 (key ? MHD_USE_TLS : 0),
						 (uint16_t) se_http_port, NULL, NULL,
						 access_handler, NULL,
						 MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (d == NULL)
	{
		ereport(LOG,
				(errmsg("search_engine http: could not listen on %s port %d", what, se_http_port)));
		return;
	}
	daemons[ndaemons++] = d;
}

/* One daemon per address of http_listen_addresses ("*": all, both families) */
static void
start_daemons(void)
{
	char	   *key = NULL;
	char	   *cert = NULL;
	char	   *list = pstrdup(se_http_listen_addresses);
	List	   *names;
	ListCell   *lc;

	if (se_http_ssl_cert_file[0] != '\0' || se_http_ssl_key_file[0] != '\0')
	{
		if (se_http_ssl_cert_file[0] == '\0' || se_http_ssl_key_file[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_CONFIG_FILE_ERROR),
					 errmsg("search_engine.http_ssl_cert_file and http_ssl_key_file must be set together")));
		cert = read_pem(se_http_ssl_cert_file, "certificate");
		key = read_pem(se_http_ssl_key_file, "key");
		if (se_http_ssl_ca_file[0] != '\0')
			client_ca = read_pem(se_http_ssl_ca_file, "CA certificate");
	}
	else if (se_http_ssl_ca_file[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("search_engine.http_ssl_ca_file needs http_ssl_cert_file and http_ssl_key_file")));
	if (!SplitGUCList(list, ',', &names))
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("invalid list syntax in search_engine.http_listen_addresses")));
	foreach(lc, names)
	{
		const char *host = lfirst(lc);
		struct addrinfo hints;
		struct addrinfo *res,
				   *ai;
		char		port[16];

		if (strcmp(host, "*") == 0)
		{
			int			before = ndaemons;

			start_daemon(NULL, MHD_USE_DUAL_STACK, key, cert, "*");
			if (ndaemons == before)
				start_daemon(NULL, 0, key, cert, "0.0.0.0");
			continue;
		}
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_PASSIVE;
		snprintf(port, sizeof(port), "%d", se_http_port);
		if (getaddrinfo(host, port, &hints, &res) != 0)
		{
			ereport(LOG,
					(errmsg("search_engine http: could not resolve \"%s\"", host)));
			continue;
		}
		for (ai = res; ai; ai = ai->ai_next)
		{
			int			i;
			bool		dup = false;

			/* localhost may list an address twice */
			for (i = 0; i < ndaemons; i++)
			{
				const union MHD_DaemonInfo *di = MHD_get_daemon_info(daemons[i], MHD_DAEMON_INFO_LISTEN_FD);
				struct sockaddr_storage ss;
				socklen_t	sl = sizeof(ss);

				if (di && getsockname(di->listen_fd, (struct sockaddr *) &ss, &sl) == 0 &&
					sl == ai->ai_addrlen && memcmp(&ss, ai->ai_addr, sl) == 0)
					dup = true;
			}
			if (!dup)
				start_daemon(ai->ai_addr, ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0,
							 key, cert, host);
		}
		freeaddrinfo(res);
	}
	if (ndaemons == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("search_engine http: could not listen on any address of search_engine.http_listen_addresses \"%s\" port %d",
						se_http_listen_addresses, se_http_port)));
}

void
se_http_worker_main(Datum arg)
{
	WaitEventSet *wes;
	WaitEvent	events[MAX_DAEMONS + 2];
	int			i;

	se_bgw_start();
	BackgroundWorkerInitializeConnection(se_database, NULL, 0);
	worker_user = GetUserId();
	worker_no = DatumGetInt32(arg);
	se_http_stats_worker_start(worker_no);
	/* requests name what they call from pg_catalog, or schema-qualified */
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, 0, false);
	request_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine http request",
										ALLOCSET_DEFAULT_SIZES);
	PG_TRY();
	{
		start_daemons();
	}
	PG_CATCH();
	{
		/* a bad setting: say so, and not again every second */
		EmitErrorReport();
		FlushErrorState();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10000,
						 PG_WAIT_EXTENSION);
		proc_exit(1);
	}
	PG_END_TRY();
	wes = CreateWaitEventSet(TopMemoryContext, ndaemons + 2);
	AddWaitEventToSet(wes, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wes, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (i = 0; i < ndaemons; i++)
	{
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(daemons[i], MHD_DAEMON_INFO_EPOLL_FD);

		AddWaitEventToSet(wes, WL_SOCKET_READABLE, di->epoll_fd, NULL, NULL);
	}
	ereport(LOG,
			(errmsg("search_engine http: worker %d serving %s on port %d (%d listening sockets)",
					DatumGetInt32(arg), se_http_ssl_cert_file[0] ? "HTTPS" : "HTTP",
					se_http_port, ndaemons)));

	while (se_bgw_loop_top())
	{
		long		timeout = 1000;
		int			ran;

		for (i = 0; i < ndaemons; i++)
			MHD_run(daemons[i]);
		ran = run_queue();
		sweep_timeouts();
		if (ran > 0)
			timeout = 0;		/* resumed connections: MHD_run again now */
		else
			for (i = 0; i < ndaemons; i++)
			{
				MHD_UNSIGNED_LONG_LONG t;

				if (MHD_get_timeout(daemons[i], &t) == MHD_YES && (long) t < timeout)
					timeout = (long) t;
			}
		(void) WaitEventSetWait(wes, timeout, events, lengthof(events), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	for (i = 0; i < ndaemons; i++)
		MHD_quiesce_daemon(daemons[i]);
	proc_exit(1);
}
