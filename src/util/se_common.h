/*-------------------------------------------------------------------------
 *
 * se_common.h
 *	  Common prelude for every search_engine source file.
 *
 * Pure modules (util, analysis, index codec, search) are written in the
 * PostgreSQL idiom (palloc, StringInfo, uint32, pg_crc32c) and compile both
 * inside the server and as standalone frontend programs for unit tests and
 * sanitizers.  The standalone build defines SE_FRONTEND and links against
 * libpgcommon/libpgport, which provide palloc, StringInfo and CRC32C there.
 *
 * Pure modules never call ereport: they report failures through SeError so
 * that a caller (SQL function, REST router, worker) decides whether the
 * failure is an ES error body, a per-item bulk error or a PostgreSQL ERROR.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_COMMON_H
#define SE_COMMON_H

#ifdef SE_FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "lib/stringinfo.h"

/*
 * An Elasticsearch-shaped error: HTTP status, ES error type and reason.
 * type == NULL means "no error".
 */
typedef struct SeError
{
	int			status;			/* HTTP status ES would answer, e.g. 400 */
	const char *type;			/* ES error type, e.g. "parsing_exception" */
	char	   *reason;			/* palloc'd human-readable reason */
} SeError;

static inline void
se_error_init(SeError *err)
{
	err->status = 0;
	err->type = NULL;
	err->reason = NULL;
}

static inline bool
se_error_is_set(const SeError *err)
{
	return err->type != NULL;
}

/* in util/error.c */
extern void se_error_set(SeError *err, int status, const char *type,
						 const char *fmt,...) pg_attribute_printf(4, 5);

#ifndef SE_FRONTEND
/* in util/error.c: SQLSTATE for an ES error type */
extern int	se_error_sqlstate(const char *type);
extern void se_error_raise(const SeError *err) pg_attribute_noreturn();
#endif

#endif							/* SE_COMMON_H */
