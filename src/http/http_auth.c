/*-------------------------------------------------------------------------
 *
 * http_auth.c
 *	  Who an HTTP request runs as: HTTP Basic checked against PostgreSQL's
 *	  own password verifier, or search_engine.http_anonymous_role.
 *
 * The password is checked as a password login to the server would check
 * it (get_role_password: the verifier in pg_authid and rolvaliduntil;
 * plain_crypt_verify: SCRAM or md5), and the role must have LOGIN.  Failed
 * logins are logged as the server logs them, and counted per client
 * address in shared memory (all workers together): past
 * http_auth_failure_limit in a minute that address's logins
 * are refused without being checked until the minute is over, so
 * guessing passwords over HTTP is no faster than that.
 *
 * As ES's realms cache users, a worker remembers the credentials it
 * verified (a salted SHA-256 of role and password, never the password)
 * with the verifier they were checked against: the next request with the
 * same credentials, while the role's verifier is unchanged, skips the
 * SCRAM computation (4096 PBKDF2 rounds by default) -- LOGIN and
 * rolvaliduntil are still read every time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "common/base64.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "libpq/crypt.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "parser/parse_func.h"
#include "regex/regex.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "http/http.h"
#include "http/http_int.h"

#define FAIL_SLOTS 64
#define FAIL_WINDOW_MS 60000

/*
 * Failed logins per client address, shared by the HTTP workers: they share
 * the port (SO_REUSEPORT spreads one client's connections over them), so a
 * per-worker count would let a client guess http_workers times faster.
 */
typedef struct FailSlot
{
	char		addr[NI_MAXHOST];
	int			failures;
	TimestampTz window_start;
} FailSlot;

typedef struct FailTable
{
	slock_t		mutex;
	FailSlot	slots[FAIL_SLOTS];
} FailTable;

static FailTable *fails;

Size
se_http_auth_shmem_size(void)
{
	return MAXALIGN(sizeof(FailTable));
}

void
se_http_auth_shmem_init(void)
{
	bool		found;

	fails = ShmemInitStruct("search_engine http logins", se_http_auth_shmem_size(), &found);
	if (!found)
	{
		memset(fails, 0, se_http_auth_shmem_size());
		SpinLockInit(&fails->mutex);
	}
}

/*
 * Failures of addr in the current minute, after adding add (0 or 1).  The
 * least recently started window's slot is taken for a new address.
 */
static int
fail_count(const char *addr, int add)
{
	TimestampTz now = GetCurrentTimestamp();
	FailSlot   *s = NULL;
	int			oldest = 0;
	int			n;
	int			i;

	SpinLockAcquire(&fails->mutex);
	for (i = 0; i < FAIL_SLOTS && s == NULL; i++)
	{
		if (fails->slots[i].addr[0] != '\0' && strcmp(fails->slots[i].addr, addr) == 0)
			s = &fails->slots[i];
		else if (fails->slots[i].window_start < fails->slots[oldest].window_start)
			oldest = i;
	}
	if (s == NULL && add > 0)
	{
		s = &fails->slots[oldest];
		strlcpy(s->addr, addr, sizeof(s->addr));
		s->failures = 0;
		s->window_start = now;
	}
	if (s != NULL && TimestampDifferenceExceeds(s->window_start, now, FAIL_WINDOW_MS))
	{
		s->failures = 0;
		s->window_start = now;
	}
	if (s != NULL)
		s->failures += add;
	n = s ? s->failures : 0;
	SpinLockRelease(&fails->mutex);
	return n;
}

#define CRED_SLOTS 32

/* credentials this worker verified */
static struct
{
	char		role[NAMEDATALEN];
	char	   *verifier;		/* malloc'd copy of the verifier then */
	uint8		hash[PG_SHA256_DIGEST_LENGTH];
	TimestampTz used;
}			creds[CRED_SLOTS];
static uint8 cred_salt[32];
static bool cred_salted = false;

/* salt, role, NUL, password: false if hashing failed (no caching then) */
static bool
cred_hash(const char *role, const char *password, uint8 *out)
{
	pg_cryptohash_ctx *ctx;
	bool		ok;

	if (!cred_salted)
	{
		if (!pg_strong_random(cred_salt, sizeof(cred_salt)))
			return false;
		cred_salted = true;
	}
	ctx = pg_cryptohash_create(PG_SHA256);
	ok = ctx != NULL &&
		pg_cryptohash_init(ctx) == 0 &&
		pg_cryptohash_update(ctx, cred_salt, sizeof(cred_salt)) == 0 &&
		pg_cryptohash_update(ctx, (const uint8 *) role, strlen(role) + 1) == 0 &&
		pg_cryptohash_update(ctx, (const uint8 *) password, strlen(password)) == 0 &&
		pg_cryptohash_final(ctx, out, PG_SHA256_DIGEST_LENGTH) == 0;
	pg_cryptohash_free(ctx);
	return ok;
}

/* Were these credentials verified against this very verifier? */
static bool
cred_cached(const char *role, const char *verifier, const uint8 *hash)
{
	int			i;

	for (i = 0; i < CRED_SLOTS; i++)
	{
		int			diff = 0;
		int			k;

		if (creds[i].verifier == NULL || strcmp(creds[i].role, role) != 0 ||
			strcmp(creds[i].verifier, verifier) != 0)
			continue;
		for (k = 0; k < PG_SHA256_DIGEST_LENGTH; k++)
			diff |= creds[i].hash[k] ^ hash[k];
		if (diff == 0)
		{
			creds[i].used = GetCurrentTimestamp();
			return true;
		}
	}
	return false;
}

/* Remember verified credentials, in place of the least recently used. */
static void
cred_remember(const char *role, const char *verifier, const uint8 *hash)
{
	int			victim = 0;
	int			i;
	char	   *copy = strdup(verifier);

	if (copy == NULL || strlen(role) >= NAMEDATALEN)
	{
		free(copy);
		return;
	}
	for (i = 0; i < CRED_SLOTS; i++)
	{
		if (creds[i].verifier != NULL && strcmp(creds[i].role, role) == 0)
		{
			victim = i;			/* one entry per role: a new password replaces */
			break;
		}
		if (creds[i].used < creds[victim].used)
			victim = i;
	}
	free(creds[victim].verifier);
	strlcpy(creds[victim].role, role, NAMEDATALEN);
	creds[victim].verifier = copy;
	memcpy(creds[victim].hash, hash, PG_SHA256_DIGEST_LENGTH);
	creds[victim].used = GetCurrentTimestamp();
}

/* The request's path without its query string, for messages */
static char *
request_path(const HttpReq *req)
{
	return pnstrdup(req->uri, strcspn(req->uri, "?"));
}

static Oid
refuse(HttpReq *req, SeError *err, bool *challenge, const char *user)
{
	*challenge = true;
	if (user)
		se_error_set(err, 401, "security_exception",
					 "unable to authenticate user [%s] for REST request [%s]", user,
					 request_path(req));
	else
		se_error_set(err, 401, "security_exception",
					 "missing authentication credentials for REST request [%s]",
					 request_path(req));
	return InvalidOid;
}

/* The role named name if it may log in, else InvalidOid (and *logdetail). */
static Oid
login_role(const char *name, const char **logdetail)
{
	HeapTuple	tup = SearchSysCache1(AUTHNAME, CStringGetDatum(name));
	Oid			role = InvalidOid;

	if (!HeapTupleIsValid(tup))
	{
		*logdetail = psprintf("Role \"%s\" does not exist.", name);
		return InvalidOid;
	}
	if (((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin)
		role = ((Form_pg_authid) GETSTRUCT(tup))->oid;
	else
		*logdetail = psprintf("Role \"%s\" is not permitted to log in.", name);
	ReleaseSysCache(tup);
	return role;
}

/*
 * The client certificate of a TLS connection (http_ssl_ca_file set):
 * verified against those CAs (chain, dates), its common name is the user,
 * as PostgreSQL's cert authentication takes it.  No certificate: nothing.
 */
void
se_http_client_cert(struct MHD_Connection *mc, HttpReq *req)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t session;
	const gnutls_datum_t *peers;
	unsigned int npeers = 0;
	unsigned int status = 0;
	gnutls_x509_crt_t crt;
	char		cn[NAMEDATALEN * 4];
	size_t		cnlen = sizeof(cn);

	if (ci == NULL || ci->tls_session == NULL)
		return;
	session = (gnutls_session_t) ci->tls_session;
	peers = gnutls_certificate_get_peers(session, &npeers);
	if (peers == NULL || npeers == 0)
		return;
	if (gnutls_certificate_verify_peers2(session, &status) != GNUTLS_E_SUCCESS || status != 0)
	{
		req->cert_invalid = true;
		return;
	}
	if (gnutls_x509_crt_init(&crt) != GNUTLS_E_SUCCESS)
	{
		req->cert_invalid = true;
		return;
	}
	if (gnutls_x509_crt_import(crt, &peers[0], GNUTLS_X509_FMT_DER) == GNUTLS_E_SUCCESS &&
		gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cnlen) ==
		GNUTLS_E_SUCCESS && cnlen > 0 && cnlen < NAMEDATALEN && strlen(cn) == cnlen)
		req->cert_user = strdup(cn);
	else
		req->cert_invalid = true;	/* no usable common name */
	gnutls_x509_crt_deinit(crt);
}

/*
 * The role a line of pg_ident.conf maps cn to, or NULL: PostgreSQL's
 * check_ident_usermap rules -- sys_name equal to cn, or a '/' regular
 * expression (ARE, as hba.c compiles it) matching it, \1 in pg_username
 * replaced by its first parenthesised subexpression.
 */
static char *
ident_line_role(const char *sys_name, const char *pg_username, const char *cn,
				const char **logdetail)
{
	pg_wchar   *wre,
			   *wcn;
	int			wrelen,
				wcnlen;
	regex_t		re;
	regmatch_t	m[2];
	int			rc;
	const char *ref;
	char	   *role = NULL;

	if (sys_name[0] != '/')
		return strcmp(sys_name, cn) == 0 ? pstrdup(pg_username) : NULL;
	wre = palloc((strlen(sys_name) + 1) * sizeof(pg_wchar));
	wrelen = pg_mb2wchar_with_len(sys_name + 1, wre, strlen(sys_name + 1));
	rc = pg_regcomp(&re, wre, wrelen, REG_ADVANCED, C_COLLATION_OID);
	if (rc != REG_OKAY)
	{
		*logdetail = psprintf("invalid regular expression \"%s\" in pg_ident.conf", sys_name + 1);
		return NULL;
	}
	wcn = palloc((strlen(cn) + 1) * sizeof(pg_wchar));
	wcnlen = pg_mb2wchar_with_len(cn, wcn, strlen(cn));
	rc = pg_regexec(&re, wcn, wcnlen, 0, NULL, 2, m, 0);
	if (rc == REG_OKAY)
	{
		ref = strstr(pg_username, "\\1");
		if (ref == NULL)
			role = pstrdup(pg_username);
		else if (re.re_nsub < 1 || m[1].rm_so < 0)
			*logdetail = psprintf("regular expression \"%s\" has no subexpressions as requested by backreference in \"%s\"",
								  sys_name + 1, pg_username);
		else
		{
			char	   *sub = palloc((m[1].rm_eo - m[1].rm_so) * MAX_MULTIBYTE_CHAR_LEN + 1);

			pg_wchar2mb_with_len(wcn + m[1].rm_so, sub, m[1].rm_eo - m[1].rm_so);
			role = psprintf("%.*s%s%s", (int) (ref - pg_username), pg_username, sub, ref + 2);
		}
	}
	pg_regfree(&re);
	return role;
}

/*
 * search_engine.http_ssl_cert_map: the role a verified certificate's
 * common name may log in as, by the pg_ident.conf map of that name, as
 * PostgreSQL's `cert` authentication with map= checks it.  The client may
 * name the role (es-security-runas-user, the header ES clients send to
 * run as another user): the map must then map cn to it; otherwise the
 * first line of the map that matches cn gives it.  NULL with *logdetail
 * when the map allows none.
 *
 * The map is read through pg_ident_file_mappings (the file as it is now,
 * parsed by PostgreSQL's own tokenizer), not PostgreSQL's check_usermap():
 * that walks the lines the postmaster parsed, whose memory a background
 * worker no longer has (PostmasterContext is freed when a worker starts,
 * and load_ident() would free those dangling lines again).
 */
static char *
cert_map_role(const char *map, const char *cn, const char *wanted, const char **logdetail)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	char	   *role = NULL;
	uint64		i;

	values[0] = CStringGetTextDatum(map);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT sys_name, pg_username FROM pg_catalog.pg_ident_file_mappings"
							  " WHERE map_name = $1 AND error IS NULL ORDER BY line_number",
							  1, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "reading pg_ident_file_mappings failed");
	for (i = 0; i < SPI_processed && role == NULL; i++)
	{
		char	   *sys_name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *pg_username = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		char	   *r;

		if (sys_name == NULL || pg_username == NULL)
			continue;
		r = ident_line_role(sys_name, pg_username, cn, logdetail);
		if (r && (wanted == NULL || strcmp(r, wanted) == 0))
			role = MemoryContextStrdup(CurTransactionContext, r);
	}
	/* what SPI's context holds goes with SPI_finish */
	if (*logdetail)
		*logdetail = MemoryContextStrdup(CurTransactionContext, *logdetail);
	SPI_finish();
	if (role == NULL && *logdetail == NULL)
		*logdetail = wanted ?
			psprintf("No line of user name map \"%s\" maps certificate user \"%s\" to role \"%s\".",
					 map, cn, wanted) :
			psprintf("No line of user name map \"%s\" matches certificate user \"%s\".", map, cn);
	return role;
}

Oid
se_http_authenticate(HttpReq *req, SeError *err, bool *challenge)
{
	char	   *cred;
	int			len;
	char	   *colon;
	const char *logdetail = NULL;
	char	   *shadow;
	bool		ok;
	Oid			role = InvalidOid;
	int			failures;
	uint8		hash[PG_SHA256_DIGEST_LENGTH];
	bool		hashed;

	*challenge = false;
	/* a client certificate when no Authorization header says otherwise */
	if (req->auth == NULL && (req->cert_user || req->cert_invalid))
	{
		if (req->cert_user && se_http_ssl_cert_map[0] != '\0')
		{
			char	   *name = cert_map_role(se_http_ssl_cert_map, req->cert_user, req->runas,
											 &logdetail);

			if (name)
				role = login_role(name, &logdetail);
		}
		else if (req->cert_user)
			role = login_role(req->cert_user, &logdetail);
		else
			logdetail = "The client certificate did not verify against search_engine.http_ssl_ca_file or has no common name.";
		if (OidIsValid(role))
			return role;
		(void) fail_count(req->addr, 1);
		ereport(LOG,
				(errmsg("search_engine http: certificate authentication failed for user \"%s\" from %s",
						req->cert_user ? req->cert_user : "", req->addr),
				 errdetail_log("%s", logdetail)));
		return refuse(req, err, challenge, req->cert_user ? req->cert_user : "");
	}
	if (req->auth == NULL)
	{
		if (se_http_anonymous_role[0] != '\0')
		{
			role = get_role_oid(se_http_anonymous_role, true);
			if (!OidIsValid(role))
				ereport(LOG,
						(errmsg("search_engine http: search_engine.http_anonymous_role \"%s\" does not exist",
								se_http_anonymous_role)));
			else
				return role;
		}
		return refuse(req, err, challenge, NULL);
	}
	if (pg_strncasecmp(req->auth, "Basic ", 6) != 0)
		return refuse(req, err, challenge, NULL);
	len = strlen(req->auth + 6);
	cred = palloc(pg_b64_dec_len(len) + 1);
	len = pg_b64_decode(req->auth + 6, len, cred, pg_b64_dec_len(len));
	if (len < 0 || (colon = memchr(cred, ':', len)) == NULL)
		return refuse(req, err, challenge, NULL);
	cred[len] = '\0';
	*colon = '\0';

	failures = fail_count(req->addr, 0);
	if (failures >= se_http_auth_failure_limit)
	{
		explicit_bzero(colon + 1, strlen(colon + 1));	/* the user stays, to log */
		ereport(LOG,
				(errmsg("search_engine http: login of user \"%s\" from %s refused unchecked: %d failed logins from there in the last minute",
						cred, req->addr, failures)));
		return refuse(req, err, challenge, cred);
	}

	shadow = get_role_password(cred, &logdetail);
	hashed = cred_hash(cred, colon + 1, hash);
	ok = shadow != NULL &&
		((hashed && cred_cached(cred, shadow, hash)) ||
		 plain_crypt_verify(cred, shadow, colon + 1, &logdetail) == STATUS_OK);
	explicit_bzero(colon + 1, strlen(colon + 1));
	if (ok && hashed)
		cred_remember(cred, shadow, hash);
	if (ok)
		role = login_role(cred, &logdetail);
	if (OidIsValid(role))
		return role;
	(void) fail_count(req->addr, 1);
	ereport(LOG,
			(errmsg("search_engine http: password authentication failed for user \"%s\" from %s",
					cred, req->addr),
			 logdetail ? errdetail_log("%s", logdetail) : 0));
	return refuse(req, err, challenge, cred);
}

/*
 * May role use the REST API at all?  Exactly who may call
 * search_engine.request() through SQL (EXECUTE, held by the members of
 * search_engine_user): the index-level checks then apply inside.
 */
bool
se_http_may_request(HttpReq *req, Oid role, SeError *err)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Oid			fn;

	/* the extension's schema is fixed (search_engine.control) */
	fn = LookupFuncName(list_make2(makeString("search_engine"), makeString("request")),
						3, argtypes, true);
	if (!OidIsValid(fn))
	{
		se_error_set(err, 503, "illegal_state_exception",
					 "the search_engine extension is not installed in database \"%s\"",
					 get_database_name(MyDatabaseId));
		return false;
	}
	if (pg_proc_aclcheck(fn, role, ACL_EXECUTE) != ACLCHECK_OK)
	{
		se_error_set(err, 403, "security_exception",
					 "action [%s %s] is unauthorized for user [%s]: it may not call search_engine.request()",
					 req->method, request_path(req), GetUserNameFromId(role, false));
		return false;
	}
	return true;
}
