/*-------------------------------------------------------------------------
 *
 * yaml.c
 *	  ?format=yaml: a JSON answer written as ES writes YAML (Jackson's
 *	  YAML generator: a "---" document start, block style, strings
 *	  double-quoted, empty containers as {} and []).
 *
 * Every answer is built as JSON first; this turns the finished body
 * into YAML, so each API gets the format without knowing of it.  A
 * double-quoted YAML scalar takes JSON's escapes, so strings are written
 * as JSON strings.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "api/api.h"

static void yaml_value(const SeJson *v, int indent, StringInfo out);

static bool
plain_key(const char *k)
{
	const char *p;

	if (k[0] == '\0' || strchr("-?:,[]{}#&*!|>'\"%@`~ ", k[0]) != NULL)
		return false;
	for (p = k; *p; p++)
		if (!(isalnum((unsigned char) *p) || *p == '_' || *p == '.' || *p == '-'))
			return false;
	return strcmp(k, "true") != 0 && strcmp(k, "false") != 0 && strcmp(k, "null") != 0;
}

static bool
is_block(const SeJson *v)
{
	return (v->type == SE_JSON_OBJECT && v->u.o.count > 0) ||
		(v->type == SE_JSON_ARRAY && v->u.a.count > 0);
}

static void
scalar(const SeJson *v, StringInfo out)
{
	if (v->type == SE_JSON_OBJECT)
		appendStringInfoString(out, "{}");
	else if (v->type == SE_JSON_ARRAY)
		appendStringInfoString(out, "[]");
	else
		se_json_write(out, v);
}

/* the members of an object; the first one's indent already written if first_inline */
static void
yaml_members(const SeJson *v, int indent, bool first_inline, StringInfo out)
{
	int			i;

	for (i = 0; i < v->u.o.count; i++)
	{
		const SeJsonMember *m = &v->u.o.members[i];

		if (i > 0 || !first_inline)
			appendStringInfoSpaces(out, indent);
		if (plain_key(m->key))
			appendStringInfoString(out, m->key);
		else
			se_json_write_string(out, m->key, m->keylen);
		appendStringInfoChar(out, ':');
		if (is_block(m->value))
		{
			appendStringInfoChar(out, '\n');
			yaml_value(m->value, indent + 2, out);
		}
		else
		{
			appendStringInfoChar(out, ' ');
			scalar(m->value, out);
			appendStringInfoChar(out, '\n');
		}
	}
}

static void
yaml_value(const SeJson *v, int indent, StringInfo out)
{
	int			i;

	if (v->type == SE_JSON_OBJECT && v->u.o.count > 0)
		yaml_members(v, indent, false, out);
	else if (v->type == SE_JSON_ARRAY && v->u.a.count > 0)
	{
		for (i = 0; i < v->u.a.count; i++)
		{
			const SeJson *x = v->u.a.items[i];

			appendStringInfoSpaces(out, indent);
			appendStringInfoString(out, "- ");
			if (x->type == SE_JSON_OBJECT && x->u.o.count > 0)
				yaml_members(x, indent + 2, true, out);
			else if (is_block(x))
			{
				appendStringInfoChar(out, '\n');
				yaml_value(x, indent + 2, out);
			}
			else
			{
				scalar(x, out);
				appendStringInfoChar(out, '\n');
			}
		}
	}
	else
	{
		appendStringInfoSpaces(out, indent);
		scalar(v, out);
		appendStringInfoChar(out, '\n');
	}
}

/* r's JSON body (text or jsonb) rewritten as YAML; false if it is not JSON */
bool
se_response_to_yaml(SeResponse *r)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeError		err;
	SeJson	   *v;
	const char *text = r->body.data;
	size_t		len = r->body.len;
	StringInfoData out;

	if (r->jsonb)
		text = se_text_from_jsonb(JsonbPGetDatum(r->jsonb), &len);
	se_error_init(&err);
	if ((v = se_json_parse(text, len, &opts, &err)) == NULL)
		return false;
	initStringInfo(&out);
	appendStringInfoString(&out, "---\n");
	yaml_value(v, 0, &out);
	r->body = out;
	r->jsonb = NULL;
	r->is_text = true;
	r->is_yaml = true;
	return true;
}
