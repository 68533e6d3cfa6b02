/*-------------------------------------------------------------------------
 *
 * names.c
 *	  The names a request brings: index names, document ids, routing values.
 *
 * None of them ever becomes a file name (indices live under their uuid,
 * tasks under their number), but all of them travel as C strings.  A JSON
 * string may hold a NUL (\u0000), which a C string would cut short, so the
 * request would act on another index or document than the one it names:
 * such names are refused where they leave the JSON, with a 400.  (A %00 in
 * a REST path or parameter is refused by the router.)  Ids also have ES's
 * length limit.  The other index-name rules are cluster/'s.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "api/api.h"

/* MAX_DOCUMENT_ID_LENGTH_IN_BYTES of ES's IndexRequest */
#define SE_MAX_ID_BYTES 512

/* s[0..len) with each NUL written as with; *outlen (if given) its length */
char *
se_nuls_replaced(const char *s, int len, const char *with, int *outlen)
{
	StringInfoData out;
	int			i;

	initStringInfo(&out);
	for (i = 0; i < len; i++)
	{
		if (s[i] == '\0')
			appendStringInfoString(&out, with);
		else
			appendStringInfoChar(&out, s[i]);
	}
	if (outlen)
		*outlen = out.len;
	return out.data;
}

bool
se_name_check_json(const SeJson *v, SeNameKind kind, SeError *err)
{
	char	   *shown;

	if (v->type != SE_JSON_STRING || strlen(v->u.s.str) == (size_t) v->u.s.len)
		return true;
	/* for messages: each NUL as the six characters \u0000 */
	shown = se_nuls_replaced(v->u.s.str, v->u.s.len, "\\u0000", NULL);
	if (kind == SE_NAME_INDEX)
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [%s], must not contain the NUL character \\u0000", shown);
	else
		se_error_set(err, 400, "illegal_argument_exception",
					 "%s [%s] must not contain the NUL character \\u0000",
					 kind == SE_NAME_ID ? "id" : "routing", shown);
	return false;
}

bool
se_doc_id_check(const char *id, SeError *err)
{
	size_t		len = strlen(id);

	if (len <= SE_MAX_ID_BYTES)
		return true;
	se_error_set(err, 400, "action_request_validation_exception",
				 "Validation Failed: 1: id [%s] is too long, must be no longer than %d bytes but was: %d;",
				 id, SE_MAX_ID_BYTES, (int) len);
	return false;
}
