/*-------------------------------------------------------------------------
 *
 * http_cbor.c
 *	  CBOR request and response bodies (application/cbor, ES's
 *	  XContentType.CBOR), translated to and from the JSON the router
 *	  speaks, with libcbor.
 *
 * ES parses a CBOR body with the same XContent parser as JSON, so a CBOR
 * body means exactly the JSON document of the same items; the router
 * here reads JSON, so the body is turned into that JSON text once, before
 * dispatch.  An answer the client asked for in CBOR (Accept) is the
 * router's JSON answer encoded item for item: objects as maps with text
 * keys in the router's order, integers as CBOR integers, other numbers as
 * 64-bit floats (as Jackson's CBOR generator writes doubles), strings as
 * text strings.  Byte strings in a request (JSON has none) become base64
 * text, as Jackson reads binary values as text; tags are skipped to their
 * item.
 *
 * Both run in the worker's main loop (palloc is fine); libcbor's own items
 * are malloc'd and freed here, also when an error unwinds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include <cbor.h>

#include "common/base64.h"
#include "lib/stringinfo.h"

#include "http/http_int.h"
#include "util/json.h"

static bool cbor_item_json(cbor_item_t *item, StringInfo out, int depth, SeError *err);

/* The text or byte string item's bytes (chunks joined when indefinite). */
static void
string_bytes(cbor_item_t *item, StringInfo out)
{
	bool		text = cbor_isa_string(item);

	if (text ? cbor_string_is_definite(item) : cbor_bytestring_is_definite(item))
	{
		if ((text ? cbor_string_length(item) : cbor_bytestring_length(item)) == 0)
			return;
		appendBinaryStringInfo(out, (const char *) (text ? cbor_string_handle(item) :
													 cbor_bytestring_handle(item)),
							   text ? cbor_string_length(item) : cbor_bytestring_length(item));
		return;
	}
	{
		size_t		n = text ? cbor_string_chunk_count(item) : cbor_bytestring_chunk_count(item);
		cbor_item_t **chunks = text ? cbor_string_chunks_handle(item) :
			cbor_bytestring_chunks_handle(item);
		size_t		i;

		for (i = 0; i < n; i++)
			string_bytes(chunks[i], out);
	}
}

static bool
cbor_item_json(cbor_item_t *item, StringInfo out, int depth, SeError *err)
{
	size_t		i;

	if (depth > SE_JSON_MAX_DEPTH)
	{
		se_error_set(err, 400, "parse_exception", "CBOR body nested deeper than %d",
					 SE_JSON_MAX_DEPTH);
		return false;
	}
	switch (cbor_typeof(item))
	{
		case CBOR_TYPE_UINT:
			appendStringInfo(out, UINT64_FORMAT, (uint64) cbor_get_int(item));
			return true;
		case CBOR_TYPE_NEGINT:
			/* -1 - n, without overflowing for n up to 2^64 - 1 */
			{
				uint64		n = cbor_get_int(item);

				if (n == PG_UINT64_MAX)
					appendStringInfoString(out, "-18446744073709551616");
				else
					appendStringInfo(out, "-" UINT64_FORMAT, n + 1);
			}
			return true;
		case CBOR_TYPE_STRING:
			{
				StringInfoData s;

				initStringInfo(&s);
				string_bytes(item, &s);
				if (se_utf8_validate(s.data, s.len) >= 0)
				{
					se_error_set(err, 400, "parse_exception",
								 "invalid UTF-8 in a CBOR text string");
					return false;
				}
				se_json_write_string(out, s.data, s.len);
				return true;
			}
		case CBOR_TYPE_BYTESTRING:
			{
				StringInfoData s;
				char	   *b64;
				int			n;

				initStringInfo(&s);
				string_bytes(item, &s);
				b64 = palloc(pg_b64_enc_len(s.len) + 1);
				n = pg_b64_encode(s.data, s.len, b64, pg_b64_enc_len(s.len));
				se_json_write_string(out, b64, Max(n, 0));
				return true;
			}
		case CBOR_TYPE_ARRAY:
			{
				cbor_item_t **items = cbor_array_handle(item);
				size_t		n = cbor_array_size(item);

				appendStringInfoChar(out, '[');
				for (i = 0; i < n; i++)
				{
					if (i > 0)
						appendStringInfoChar(out, ',');
					if (!cbor_item_json(items[i], out, depth + 1, err))
						return false;
				}
				appendStringInfoChar(out, ']');
				return true;
			}
		case CBOR_TYPE_MAP:
			{
				struct cbor_pair *pairs = cbor_map_handle(item);
				size_t		n = cbor_map_size(item);

				appendStringInfoChar(out, '{');
				for (i = 0; i < n; i++)
				{
					cbor_item_t *key = pairs[i].key;

					while (cbor_isa_tag(key))
						key = cbor_tag_item(key);
					if (!cbor_isa_string(key))
					{
						se_error_set(err, 400, "parse_exception",
									 "a CBOR map key that is not a text string");
						return false;
					}
					if (i > 0)
						appendStringInfoChar(out, ',');
					if (!cbor_item_json(key, out, depth + 1, err))
						return false;
					appendStringInfoChar(out, ':');
					if (!cbor_item_json(pairs[i].value, out, depth + 1, err))
						return false;
				}
				appendStringInfoChar(out, '}');
				return true;
			}
		case CBOR_TYPE_TAG:
			return cbor_item_json(cbor_tag_item(item), out, depth + 1, err);
		case CBOR_TYPE_FLOAT_CTRL:
			if (cbor_float_ctrl_is_ctrl(item))
			{
				switch (cbor_ctrl_value(item))
				{
					case CBOR_CTRL_FALSE:
						appendStringInfoString(out, "false");
						return true;
					case CBOR_CTRL_TRUE:
						appendStringInfoString(out, "true");
						return true;
					case CBOR_CTRL_NULL:
					case CBOR_CTRL_UNDEF:
						appendStringInfoString(out, "null");
						return true;
					default:
						se_error_set(err, 400, "parse_exception",
									 "unsupported CBOR simple value %d", cbor_ctrl_value(item));
						return false;
				}
			}
			{
				double		d = cbor_float_get_float(item);

				if (!isfinite(d))
				{
					se_error_set(err, 400, "parse_exception",
								 "a CBOR number that is not finite");
					return false;
				}
				/* enough digits to read back the same double */
				appendStringInfo(out, "%.17g", d);
			}
			return true;
	}
	se_error_set(err, 400, "parse_exception", "unsupported CBOR item");
	return false;
}

/*
 * The JSON text of a CBOR body (one data item, nothing after it), palloc'd,
 * or NULL with err set (ES's 400 parse_exception).
 */
char *
se_http_cbor_to_json(const char *data, size_t len, size_t *out_len, SeError *err)
{
	struct cbor_load_result res;
	cbor_item_t *item = cbor_load((cbor_data) data, len, &res);
	StringInfoData out;
	bool		ok = false;

	if (item == NULL || res.error.code != CBOR_ERR_NONE)
	{
		if (item)
			cbor_decref(&item);
		se_error_set(err, 400, "parse_exception", "malformed CBOR body at byte %zu",
					 res.error.position);
		return NULL;
	}
	if (res.read != len)
	{
		cbor_decref(&item);
		se_error_set(err, 400, "parse_exception",
					 "CBOR body: %zu bytes after its data item", len - res.read);
		return NULL;
	}
	initStringInfo(&out);
	PG_TRY();
	{
		ok = cbor_item_json(item, &out, 0, err);
	}
	PG_FINALLY();
	{
		cbor_decref(&item);
	}
	PG_END_TRY();
	if (!ok)
		return NULL;
	*out_len = out.len;
	return out.data;
}

/* Room for n more bytes at the end of out (a CBOR head takes at most 9). */
static unsigned char *
reserve(StringInfo out, size_t n)
{
	enlargeStringInfo(out, n);
	return (unsigned char *) out->data + out->len;
}

static void
json_cbor(const SeJson *v, StringInfo out)
{
	unsigned char *p;
	int			i;

	p = reserve(out, 9);
	switch (v->type)
	{
		case SE_JSON_NULL:
			out->len += cbor_encode_null(p, 9);
			break;
		case SE_JSON_FALSE:
		case SE_JSON_TRUE:
			out->len += cbor_encode_bool(v->type == SE_JSON_TRUE, p, 9);
			break;
		case SE_JSON_NUMBER:
			if (v->u.n.is_int && v->u.n.i >= 0)
				out->len += cbor_encode_uint((uint64) v->u.n.i, p, 9);
			else if (v->u.n.is_int)
				out->len += cbor_encode_negint((uint64) (-(v->u.n.i + 1)), p, 9);
			else
				out->len += cbor_encode_double(v->u.n.d, p, 9);
			break;
		case SE_JSON_STRING:
			out->len += cbor_encode_string_start(v->u.s.len, p, 9);
			appendBinaryStringInfo(out, v->u.s.str, v->u.s.len);
			break;
		case SE_JSON_ARRAY:
			out->len += cbor_encode_array_start(v->u.a.count, p, 9);
			for (i = 0; i < v->u.a.count; i++)
				json_cbor(v->u.a.items[i], out);
			break;
		case SE_JSON_OBJECT:
			out->len += cbor_encode_map_start(v->u.o.count, p, 9);
			for (i = 0; i < v->u.o.count; i++)
			{
				const SeJsonMember *m = &v->u.o.members[i];

				p = reserve(out, 9);
				out->len += cbor_encode_string_start(m->keylen, p, 9);
				appendBinaryStringInfo(out, m->key, m->keylen);
				json_cbor(m->value, out);
			}
			break;
	}
	out->data[out->len] = '\0';
}

/*
 * The CBOR encoding of a JSON answer, palloc'd, or NULL if it is not JSON
 * (then it is sent as it is).
 */
char *
se_http_json_to_cbor(const char *json, size_t len, size_t *out_len)
{
	SeJsonParseOptions opts = {0};
	SeError		err;
	SeJson	   *v;
	StringInfoData out;

	se_error_init(&err);
	v = se_json_parse(json, len, &opts, &err);
	if (v == NULL)
		return NULL;
	initStringInfo(&out);
	json_cbor(v, &out);
	*out_len = out.len;
	return out.data;
}
