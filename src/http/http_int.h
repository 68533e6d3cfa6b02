/*-------------------------------------------------------------------------
 *
 * http_int.h
 *	  Inside the HTTP server: one request as MHD's callbacks gather it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_HTTP_INT_H
#define SE_HTTP_INT_H

#include <netdb.h>
#include <zlib.h>

#include "util/se_common.h"

struct HttpConn;
struct MHD_Connection;
struct MHD_Response;

/*
 * A request, malloc'd when its request line arrives and freed when MHD
 * says it completed: it lives across MHD's callbacks, outside any memory
 * context.
 */
typedef struct HttpReq
{
	struct HttpReq *next;		/* in the worker's queue */
	struct HttpConn *conn;
	struct MHD_Connection *mc;
	char	   *uri;			/* raw: path and query string, %-encoded */
	char	   *method;
	char	   *auth;			/* Authorization header, or NULL */
	char	   *cert_user;		/* a verified client certificate's CN, or NULL */
	bool		cert_invalid;	/* a client certificate that did not verify */
	char	   *runas;			/* es-security-runas-user: the role a mapped
								 * certificate asks for, or NULL */
	char	   *opaque_id;		/* X-Opaque-Id, echoed as ES does, or NULL */
	char	   *content_type;	/* Content-Type header, or NULL */
	char		addr[NI_MAXHOST];	/* the client's address */
	bool		started;		/* headers read */
	bool		accept_gzip;
	int			compat_version; /* compatible-with=7|8 asked, or 0 */
	bool		body_cbor;		/* Content-Type: CBOR (translated to JSON) */
	bool		accept_cbor;	/* Accept: CBOR */
	bool		answer_cbor;	/* the response body is CBOR */
	/* the body, gunzipped as it arrives when Content-Encoding says so */
	char	   *body;
	size_t		len;
	size_t		cap;
	size_t		held;			/* bytes allocated, counted in held_bytes */
	size_t		received;		/* body bytes as sent (before inflating) */
	bool		inflating;
	bool		inflated;		/* the gzip stream ended */
	z_stream	zs;
	/* an error found in the body, answered once the body is in */
	int			fail_status;
	const char *fail_type;
	const char *fail_reason;
	/* the answer */
	bool		ran;			/* the main loop ran it (response set unless OOM) */
	bool		answered;		/* queued to MHD */
	int			status;
	struct MHD_Response *response;
} HttpReq;

/* http_auth.c: the role a request runs as, or InvalidOid with err set */
extern Oid	se_http_authenticate(HttpReq *req, SeError *err, bool *challenge);
extern bool se_http_may_request(HttpReq *req, Oid role, SeError *err);
/* the TLS client certificate of req's connection: cert_user or cert_invalid */
extern void se_http_client_cert(struct MHD_Connection *mc, HttpReq *req);

/* CBOR bodies to and from the router's JSON (http_cbor.c) */
extern char *se_http_cbor_to_json(const char *data, size_t len, size_t *out_len, SeError *err);
extern char *se_http_json_to_cbor(const char *json, size_t len, size_t *out_len);

#endif							/* SE_HTTP_INT_H */
