/*-------------------------------------------------------------------------
 *
 * http.h
 *	  The HTTP server: background workers answering ES's REST API over
 *	  HTTP/1.1 (libmicrohttpd) through the same router as request().
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_HTTP_H
#define SE_HTTP_H

#include "postgres.h"

#include "lib/stringinfo.h"

/* GUCs (search_engine.http_*) */
extern int	se_http_port;
extern char *se_http_listen_addresses;
extern int	se_http_workers;
extern int	se_http_max_content_length;
extern int	se_http_max_connections;
extern int	se_http_max_in_flight;
extern int	se_http_max_in_flight_bytes;
extern int	se_http_idle_timeout;
extern int	se_http_request_timeout;
extern char *se_http_anonymous_role;
extern char *se_http_ssl_cert_file;
extern char *se_http_ssl_key_file;
extern char *se_http_ssl_ca_file;
extern char *se_http_ssl_cert_map;
extern bool se_http_compression;
extern int	se_http_auth_failure_limit;

extern void se_http_guc_define(void);
extern void se_http_register(void);
/* failed HTTP logins per client address, shared by the workers (http_auth.c) */
extern Size se_http_auth_shmem_size(void);
extern void se_http_auth_shmem_init(void);
/* ES's _nodes/stats http section, all workers together (http_stats.c) */
extern Size se_http_stats_shmem_size(void);
extern void se_http_stats_shmem_init(void);
extern void se_http_stats_worker_start(int worker);
extern int	se_http_stats_open(int worker, const char *local_address, const char *remote_address);
extern void se_http_stats_request(int slot, const char *uri, const char *agent,
								  const char *opaque_id);
extern void se_http_stats_request_bytes(int slot, size_t body_bytes);
extern void se_http_stats_close(int worker, int slot);
extern void se_http_stats_json(StringInfo out);
extern PGDLLEXPORT void se_http_worker_main(Datum arg);

#endif							/* SE_HTTP_H */
