/*-------------------------------------------------------------------------
 *
 * mustache.c
 *	  Mustache templates with Elasticsearch's search template semantics.
 *
 * What ES's search templates (mustache.java + CustomMustacheFactory) do:
 * {{x}} writes x escaped as the content of a JSON string (Jackson's
 * escapes), {{{x}}} and {{& x}} write it as is; a value prints as Java's
 * toString would (strings bare, 1.5, 1.0E10, {k=v}; a list as ES's map of
 * its indexes, {0=a, 1=b}), a missing or null one as nothing.  Names are dotted paths looked up from the
 * innermost section outwards (the first segment decides the scope, the
 * rest descend from there); a list segment takes an index ({{x.0}}) or
 * size.  Sections {{#x}} skip null, false, "" and empty lists, repeat over
 * a list's elements and enter anything else once; inverted sections
 * {{^x}} render exactly when a section would not.  Comments {{! }}, set
 * delimiters {{=<% %>=}}, and ES's functions (names in any case):
 * {{#toJson}}name{{/toJson}} (a list or object as JSON, anything else as
 * its toString), {{#join}}name{{/join}} and {{#join delimiter='||'}}name{{/join
 * delimiter='||'}} (a list's elements joined, "," by default; for anything
 * else ES writes the body's text), {{#url}}...{{/url}} (the rendered body
 * URL-encoded as Java's URLEncoder does).  Function output is written unescaped, as ES
 * writes it.  Partials are refused.
 *
 * Errors are ES's script_exception with mustache.java's wording and the
 * template's line ("query-template:N").  Nesting is bounded at compile
 * time; rendering is bounded in output bytes and in steps, so a template
 * that nests loops over big lists fails instead of running for ever.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#ifndef SE_FRONTEND
#include "miscadmin.h"
#endif

#include "script/mustache.h"
#include "script/script_int.h"

/* nodes a render may visit (one per node per pass, one per list element) */
#define RENDER_STEPS	10000000
#define MAX_DELIM		16

typedef enum MKind
{
	MK_TEXT,
	MK_VAR,						/* {{x}}: escaped */
	MK_RAW,						/* {{{x}}}, {{& x}} */
	MK_SECTION,
	MK_INVERTED,
	MK_TOJSON,
	MK_JOIN,
	MK_URL
} MKind;

typedef struct MNode MNode;
struct MNode
{
	MKind		kind;
	const char *text;			/* MK_TEXT: the text; else the tag's name */
	int			len;
	char	  **path;			/* dotted name split; npath 0 is "." */
	int			npath;
	const char *delim;			/* MK_JOIN */
	const char *body;			/* MK_JOIN: its body as written */
	int			line;
	MNode	   *child;			/* sections: first node of the body */
	MNode	   *next;
};

struct SeMustache
{
	MNode	   *root;
};

/* ---------------------------------------------------------------------
 * Compile
 * ---------------------------------------------------------------------
 */

typedef struct Parser
{
	const char *src;
	size_t		len;
	size_t		pos;
	int			line;
	char		otag[MAX_DELIM + 1];
	char		ctag[MAX_DELIM + 1];
	/* open sections: the node and the tail of its body list */
	MNode	   *open[SE_MUSTACHE_MAX_DEPTH + 1];
	MNode	  **tail[SE_MUSTACHE_MAX_DEPTH + 1];
	int			depth;
	SeError    *err;
} Parser;

/* A script_exception naming the template line, as mustache.java's do. */
static bool fail(Parser *p, const char *fmt,...) pg_attribute_printf(2, 3);

static bool
fail(Parser *p, const char *fmt,...)
{
	char		msg[512];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	se_error_set(p->err, 400, "script_exception", "%s @[query-template:%d]", msg, p->line);
	return false;
}

static void
count_lines(Parser *p, size_t from, size_t to)
{
	for (; from < to; from++)
		if (p->src[from] == '\n')
			p->line++;
}

/* Offset of needle in src[from..len), or -1. */
static ssize_t
find(const Parser *p, size_t from, const char *needle)
{
	size_t		nl = strlen(needle);

	for (; from + nl <= p->len; from++)
		if (memcmp(p->src + from, needle, nl) == 0)
			return (ssize_t) from;
	return -1;
}

/* s[0..len) without surrounding white space, as a palloc'd string */
static char *
trimmed(const char *s, size_t len)
{
	while (len > 0 && isspace((unsigned char) *s))
		s++, len--;
	while (len > 0 && isspace((unsigned char) s[len - 1]))
		len--;
	return pnstrdup(s, len);
}

static void
set_path(MNode *n, const char *name)
{
	const char *s = name;
	int			cap = 1;

	n->text = name;
	n->len = (int) strlen(name);
	n->npath = 0;
	if (strcmp(name, ".") == 0)
		return;
	for (; *s; s++)
		if (*s == '.')
			cap++;
	n->path = palloc(sizeof(char *) * cap);
	s = name;
	for (;;)
	{
		const char *dot = strchr(s, '.');
		size_t		l = dot ? (size_t) (dot - s) : strlen(s);

		n->path[n->npath++] = pnstrdup(s, l);
		if (!dot)
			break;
		s = dot + 1;
	}
}

static MNode *
add(Parser *p, MKind kind)
{
	MNode	   *n = palloc0(sizeof(MNode));

	n->kind = kind;
	n->line = p->line;
	*p->tail[p->depth] = n;
	p->tail[p->depth] = &n->next;
	return n;
}

/* "join delimiter='x'" (ES's pattern, exactly): the delimiter, else NULL */
static char *
join_delimiter(const char *name)
{
	size_t		len = strlen(name);

	if (strncmp(name, "join delimiter='", 16) != 0 || len < 17 || name[len - 1] != '\'')
		return NULL;
	return pnstrdup(name + 16, len - 17);
}

static bool
open_section(Parser *p, char sigil, char *name)
{
	MNode	   *n;
	char	   *delim = NULL;

	if (p->depth >= SE_MUSTACHE_MAX_DEPTH)
	{
		return fail(p, "Sections nest deeper than %d levels", SE_MUSTACHE_MAX_DEPTH);
	}
	if (sigil == '^')
		n = add(p, MK_INVERTED);
	else if (pg_strcasecmp(name, "toJson") == 0)
		n = add(p, MK_TOJSON);
	else if (pg_strcasecmp(name, "join") == 0 || (delim = join_delimiter(name)) != NULL)
	{
		n = add(p, MK_JOIN);
		n->delim = delim ? delim : ",";
	}
	else if (pg_strcasecmp(name, "url") == 0)
		n = add(p, MK_URL);
	else
		n = add(p, MK_SECTION);
	set_path(n, name);
	p->depth++;
	p->open[p->depth] = n;
	p->tail[p->depth] = &n->child;
	return true;
}

/* toJson and join take one identifier as their whole body */
static bool
check_function(Parser *p, MNode *n)
{
	const char *fname = n->kind == MK_TOJSON ? "toJson" : "join";
	char	   *name;

	if (n->child == NULL || n->child->next != NULL || n->child->kind != MK_TEXT ||
		(name = trimmed(n->child->text, n->child->len))[0] == '\0')
		return fail(p, "Mustache function [%s] must contain one and only one identifier", fname);
	n->body = pnstrdup(n->child->text, n->child->len);
	n->child = NULL;
	set_path(n, name);
	return true;
}

static bool
close_section(Parser *p, char *name)
{
	MNode	   *n;

	if (p->depth == 0)
		return fail(p, "Closing tag '%s' has no matching opening tag", name);
	n = p->open[p->depth];
	if (strcmp(n->text, name) != 0)
		return fail(p, "Mismatched start/end tags: %s != %s", n->text, name);
	p->depth--;
	if (n->kind == MK_TOJSON || n->kind == MK_JOIN)
		return check_function(p, n);
	return true;
}

/* {{=<% %>=}}: two delimiters, separated by white space, neither with '=' */
static bool
set_delimiters(Parser *p, const char *spec)
{
	const char *s = spec;
	const char *a,
			   *b;
	size_t		al,
				bl;

	while (isspace((unsigned char) *s))
		s++;
	a = s;
	while (*s && !isspace((unsigned char) *s))
		s++;
	al = s - a;
	while (isspace((unsigned char) *s))
		s++;
	b = s;
	while (*s && !isspace((unsigned char) *s))
		s++;
	bl = s - b;
	while (isspace((unsigned char) *s))
		s++;
	if (al == 0 || bl == 0 || *s != '\0' || al > MAX_DELIM || bl > MAX_DELIM ||
		memchr(a, '=', al) || memchr(b, '=', bl))
		return fail(p, "Invalid delimiter specification [%s]", spec);
	memcpy(p->otag, a, al);
	p->otag[al] = '\0';
	memcpy(p->ctag, b, bl);
	p->ctag[bl] = '\0';
	return true;
}

/* One tag at p->pos (just after the open delimiter). */
static bool
parse_tag(Parser *p)
{
	char		sigil = p->pos < p->len ? p->src[p->pos] : '\0';
	char		close[MAX_DELIM + 2];
	ssize_t		end;
	char	   *name;
	size_t		start;

	if (sigil == '{' || sigil == '=')
	{
		close[0] = sigil == '{' ? '}' : '=';
		strcpy(close + 1, p->ctag);
	}
	else
		strcpy(close, p->ctag);
	if (sigil == '{' || sigil == '&' || sigil == '#' || sigil == '^' || sigil == '/' ||
		sigil == '!' || sigil == '=' || sigil == '>' || sigil == '<' || sigil == '$')
		start = p->pos + 1;
	else
		start = p->pos;
	end = find(p, start, close);
	if (end < 0)
		return fail(p, "Improperly closed tag, missing '%s'", close);
	count_lines(p, p->pos, end);
	p->pos = end + strlen(close);
	if (sigil == '!')
		return true;
	name = trimmed(p->src + start, end - start);
	if (sigil == '=')
		return set_delimiters(p, name);
	if (name[0] == '\0')
		return fail(p, "Empty mustache tag");
	switch (sigil)
	{
		case '#':
		case '^':
			return open_section(p, sigil, name);
		case '/':
			return close_section(p, name);
		case '>':
		case '<':
		case '$':
			return fail(p, "Template [%s] not found: partials and template inheritance are not supported",
						name);
		case '{':
		case '&':
			set_path(add(p, MK_RAW), name);
			return true;
		default:
			set_path(add(p, MK_VAR), name);
			return true;
	}
}

SeMustache *
se_mustache_compile(const char *src, size_t len, SeError *err)
{
	SeMustache *m = palloc0(sizeof(SeMustache));
	Parser		p;

	memset(&p, 0, sizeof(p));
	p.src = src;
	p.len = len;
	p.line = 1;
	p.err = err;
	strcpy(p.otag, "{{");
	strcpy(p.ctag, "}}");
	p.tail[0] = &m->root;
	while (p.pos < p.len)
	{
		ssize_t		at = find(&p, p.pos, p.otag);
		size_t		stop = at < 0 ? p.len : (size_t) at;

		if (stop > p.pos)
		{
			MNode	   *t = add(&p, MK_TEXT);

			t->text = src + p.pos;
			t->len = (int) (stop - p.pos);
			count_lines(&p, p.pos, stop);
		}
		if (at < 0)
			break;
		p.pos = stop + strlen(p.otag);
		if (!parse_tag(&p))
			return NULL;
	}
	if (p.depth > 0)
	{
		fail(&p, "Failed to close '%s' tag", p.open[p.depth]->text);
		return NULL;
	}
	return m;
}

/* ---------------------------------------------------------------------
 * Render
 * ---------------------------------------------------------------------
 */

typedef struct Render
{
	const SeJson *stack[SE_MUSTACHE_MAX_DEPTH + 2];
	int			depth;
	size_t		max_bytes;
	int64		steps;
	SeError    *err;
} Render;

static bool render_list(Render *r, const MNode *n, StringInfo out);

/* A list's element by index, or its size */
static const SeJson *
list_member(const SeJson *list, const char *seg)
{
	char	   *end;
	long		i;

	if (strcmp(seg, "size") == 0)
		return se_json_make_number_int(list->u.a.count);
	if (!isdigit((unsigned char) seg[0]))
		return NULL;
	errno = 0;
	i = strtol(seg, &end, 10);
	if (*end != '\0' || errno != 0 || i >= list->u.a.count)
		return NULL;
	return list->u.a.items[i];
}

static const SeJson *
member(const SeJson *v, const char *seg)
{
	if (v == NULL)
		return NULL;
	if (v->type == SE_JSON_OBJECT)
		return se_json_get(v, seg);
	if (v->type == SE_JSON_ARRAY)
		return list_member(v, seg);
	return NULL;
}

/* The value a name stands for in the current scopes (NULL: none). */
static const SeJson *
lookup(const Render *r, const MNode *n)
{
	const SeJson *v = NULL;
	int			i;

	if (n->npath == 0)
		return r->stack[r->depth];
	for (i = r->depth; i >= 0 && v == NULL; i--)
		v = member(r->stack[i], n->path[0]);
	for (i = 1; i < n->npath && v != NULL; i++)
		v = member(v, n->path[i]);
	return v;
}

/* v as Java's toString prints the value Jackson read (null: nothing) */
static void
append_java(StringInfo out, const SeJson *v, int depth)
{
	int			i;

	if (depth > SE_JSON_MAX_DEPTH)
		return;
	switch (v->type)
	{
		case SE_JSON_NULL:
			if (depth > 0)
				appendStringInfoString(out, "null");
			break;
		case SE_JSON_TRUE:
			appendStringInfoString(out, "true");
			break;
		case SE_JSON_FALSE:
			appendStringInfoString(out, "false");
			break;
		case SE_JSON_STRING:
			appendBinaryStringInfo(out, v->u.s.str, v->u.s.len);
			break;
		case SE_JSON_NUMBER:
			{
				bool		integral = true;

				for (i = 0; i < v->u.n.len; i++)
					if (strchr(".eE", v->u.n.text[i]))
						integral = false;
				/* Jackson: Integer, Long or BigInteger print their digits */
				if (integral)
					appendBinaryStringInfo(out, v->u.n.text, v->u.n.len);
				else
					sc_append_java_double(out, v->u.n.d, false);
				break;
			}
		case SE_JSON_ARRAY:
			appendStringInfoChar(out, '[');
			for (i = 0; i < v->u.a.count; i++)
			{
				if (i > 0)
					appendStringInfoString(out, ", ");
				append_java(out, v->u.a.items[i], depth + 1);
			}
			appendStringInfoChar(out, ']');
			break;
		case SE_JSON_OBJECT:
			appendStringInfoChar(out, '{');
			for (i = 0; i < v->u.o.count; i++)
			{
				if (i > 0)
					appendStringInfoString(out, ", ");
				appendBinaryStringInfo(out, v->u.o.members[i].key, v->u.o.members[i].keylen);
				appendStringInfoChar(out, '=');
				append_java(out, v->u.o.members[i].value, depth + 1);
			}
			appendStringInfoChar(out, '}');
			break;
	}
}

/*
 * A {{x}} value: ES hands mustache a list wrapped as a map of its indexes
 * (CustomReflectionObjectHandler's CollectionMap), which prints as one:
 * {0=a, 1=b}; what it holds prints as Java's toString.
 */
static void
append_value(StringInfo out, const SeJson *v)
{
	int			i;

	if (v->type != SE_JSON_ARRAY)
	{
		append_java(out, v, 0);
		return;
	}
	appendStringInfoChar(out, '{');
	for (i = 0; i < v->u.a.count; i++)
	{
		appendStringInfo(out, "%s%d=", i ? ", " : "", i);
		append_java(out, v->u.a.items[i], 1);
	}
	appendStringInfoChar(out, '}');
}

/* s escaped as Jackson's quoteAsString escapes a JSON string's content */
static void
append_json_escaped(StringInfo out, const char *s, int len)
{
	static const char hex[] = "0123456789ABCDEF";
	int			i;

	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c == '"' || c == '\\')
		{
			appendStringInfoChar(out, '\\');
			appendStringInfoChar(out, (char) c);
		}
		else if (c >= 0x20)
			appendStringInfoChar(out, (char) c);
		else if (c == '\n')
			appendStringInfoString(out, "\\n");
		else if (c == '\r')
			appendStringInfoString(out, "\\r");
		else if (c == '\t')
			appendStringInfoString(out, "\\t");
		else if (c == '\b')
			appendStringInfoString(out, "\\b");
		else if (c == '\f')
			appendStringInfoString(out, "\\f");
		else
		{
			appendStringInfoString(out, "\\u00");
			appendStringInfoChar(out, hex[c >> 4]);
			appendStringInfoChar(out, hex[c & 15]);
		}
	}
}

/* Java's URLEncoder.encode(s, UTF-8) */
static void
append_url_encoded(StringInfo out, const char *s, int len)
{
	static const char hex[] = "0123456789ABCDEF";
	int			i;

	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (isalnum(c) || c == '.' || c == '-' || c == '*' || c == '_')
			appendStringInfoChar(out, (char) c);
		else if (c == ' ')
			appendStringInfoChar(out, '+');
		else
		{
			appendStringInfoChar(out, '%');
			appendStringInfoChar(out, hex[c >> 4]);
			appendStringInfoChar(out, hex[c & 15]);
		}
	}
}

/* Would {{#x}} render its body (for a list: at least once)? */
static bool
truthy(const SeJson *v)
{
	if (v == NULL)
		return false;
	switch (v->type)
	{
		case SE_JSON_NULL:
		case SE_JSON_FALSE:
			return false;
		case SE_JSON_STRING:
			return v->u.s.len > 0;
		case SE_JSON_ARRAY:
			return v->u.a.count > 0;
		default:
			return true;
	}
}

static bool
step(Render *r, StringInfo out)
{
#ifndef SE_FRONTEND
	CHECK_FOR_INTERRUPTS();
#endif
	if (++r->steps > RENDER_STEPS)
	{
		se_error_set(r->err, 400, "script_exception",
					 "rendering the template took more than %d steps", RENDER_STEPS);
		return false;
	}
	if (out->len > r->max_bytes)
	{
		se_error_set(r->err, 400, "script_exception",
					 "the rendered template is longer than %zu bytes", r->max_bytes);
		return false;
	}
	return true;
}

static bool
render_body(Render *r, const MNode *n, const SeJson *scope, StringInfo out)
{
	bool		ok;

	r->stack[++r->depth] = scope;
	ok = render_list(r, n->child, out);
	r->depth--;
	return ok;
}

static bool
render_node(Render *r, const MNode *n, StringInfo out)
{
	const SeJson *v;
	StringInfoData tmp;
	int			i;

	switch (n->kind)
	{
		case MK_TEXT:
			appendBinaryStringInfo(out, n->text, n->len);
			return true;
		case MK_VAR:
		case MK_RAW:
			if ((v = lookup(r, n)) == NULL)
				return true;
			initStringInfo(&tmp);
			append_value(&tmp, v);
			if (n->kind == MK_RAW)
			{
				appendBinaryStringInfo(out, tmp.data, tmp.len);
				pfree(tmp.data);
				return true;
			}
			append_json_escaped(out, tmp.data, tmp.len);
			pfree(tmp.data);
			return true;
		case MK_SECTION:
			v = lookup(r, n);
			if (!truthy(v))
				return true;
			if (v->type != SE_JSON_ARRAY)
				return render_body(r, n, v, out);
			for (i = 0; i < v->u.a.count; i++)
				if (!step(r, out) || !render_body(r, n, v->u.a.items[i], out))
					return false;
			return true;
		case MK_INVERTED:
			if (truthy(lookup(r, n)))
				return true;
			return render_body(r, n, r->stack[r->depth], out);
		case MK_TOJSON:
			/* lists and objects as JSON; anything else as its toString */
			if ((v = lookup(r, n)) == NULL || v->type == SE_JSON_NULL)
				return true;
			if (v->type == SE_JSON_ARRAY || v->type == SE_JSON_OBJECT)
				se_json_write(out, v);
			else
				append_java(out, v, 0);
			return true;
		case MK_JOIN:
			/* a list's elements joined; anything else: the body's text */
			if ((v = lookup(r, n)) == NULL || v->type != SE_JSON_ARRAY)
			{
				appendStringInfoString(out, n->body);
				return true;
			}
			for (i = 0; i < v->u.a.count; i++)
			{
				if (i > 0)
					appendStringInfoString(out, n->delim);
				append_java(out, v->u.a.items[i], 1);
			}
			return true;
		case MK_URL:
			initStringInfo(&tmp);
			if (!render_body(r, n, r->stack[r->depth], &tmp))
				return false;
			append_url_encoded(out, tmp.data, tmp.len);
			pfree(tmp.data);
			return true;
	}
	return true;
}

static bool
render_list(Render *r, const MNode *n, StringInfo out)
{
	for (; n != NULL; n = n->next)
		if (!step(r, out) || !render_node(r, n, out))
			return false;
	return true;
}

bool
se_mustache_render(const SeMustache *m, const SeJson *params, size_t max_bytes,
				   StringInfo out, SeError *err)
{
	Render		r;

	memset(&r, 0, sizeof(r));
	r.stack[0] = params;
	r.max_bytes = max_bytes;
	r.err = err;
	if (!render_list(&r, m->root, out))
		return false;
	if (out->len > max_bytes)
		return step(&r, out);
	return true;
}
