/*-------------------------------------------------------------------------
 *
 * json.c
 *	  Strict RFC 8259 JSON parser into the SeJson DOM, and a compact writer.
 *
 * Every bulk line, document and request body goes through se_json_parse, so
 * the parser is built for speed without giving up strictness:
 *
 * - it is iterative (an explicit stack of open containers), so the depth
 *   limit, not the C stack, bounds nesting;
 * - values of open containers are collected on one growable scratch stack
 *   and copied into an exactly sized items/members array when the container
 *   closes, so each array is allocated once;
 * - nodes, strings and arrays are carved from a bump arena of palloc'd
 *   chunks, which is released as a whole if the parse fails;
 * - strings are scanned eight bytes at a time until a quote, backslash,
 *   control character or non-ASCII byte shows up; UTF-8 is validated inline
 *   (so errors come out in document order, as from a streaming parser);
 * - numbers keep their text; their double value uses the exact Clinger fast
 *   path when possible and strtod otherwise.
 *
 * Error reasons follow Jackson's wording as Elasticsearch reports it:
 * x_content_parse_exception reasons start with "[line:column]",
 * json_parse_exception reasons (invalid UTF-8, duplicate keys) end with
 * "at [line:column]".  Columns count characters, not bytes.  Line and column
 * are computed only when an error is raised.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

#define DEFAULT_MAX_DEPTH	SE_JSON_MAX_DEPTH

/* objects with more members than this detect duplicates with a hash table */
#define DUP_LINEAR_MAX		16

#define ERR_SYNTAX	"x_content_parse_exception"
#define ERR_JSON	"json_parse_exception"

#define EXPECT_VALUE \
	"was expecting a value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')"

/* ---------------------------------------------------------------------
 * Character classes
 * ---------------------------------------------------------------------
 */

/* JSON whitespace: space, tab, LF, CR */
static const uint8 ws_class[256] = {
	['\t'] = 1,['\n'] = 1,['\r'] = 1,[' '] = 1
};

/*
 * Bytes that may appear unescaped inside a string without further checks:
 * printable ASCII (and DEL) other than '"' and '\\'.
 */
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const uint8 str_plain[256] = {
	R16(0), R16(0),
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x20: '"' */
	R16(1), R16(1),
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,	/* 0x50: '\\' */
	R16(1), R16(1),
	R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0)
};

/* Bytes the writer must look at: controls, '"', '\\' (1) and non-ASCII (2). */
static const uint8 write_class[256] = {
	R16(1), R16(1),
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	R16(0), R16(0),
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
	R16(0), R16(0),
	R16(2), R16(2), R16(2), R16(2), R16(2), R16(2), R16(2), R16(2)
};

#define SWAR_ONES	UINT64CONST(0x0101010101010101)
#define SWAR_HIGHS	UINT64CONST(0x8080808080808080)

/*
 * True if any of the 8 bytes in w is a quote, backslash, control character
 * or non-ASCII byte (the classic "has zero byte" / "has byte less than n"
 * tricks, which are exact as to whether such a byte exists).
 */
static inline bool
swar_has_special(uint64 w)
{
	uint64		q = w ^ (SWAR_ONES * '"');
	uint64		b = w ^ (SWAR_ONES * '\\');
	uint64		t;

	t = ((w - SWAR_ONES * 0x20) & ~w) |
		((q - SWAR_ONES) & ~q) |
		((b - SWAR_ONES) & ~b) |
		w;
	return (t & SWAR_HIGHS) != 0;
}

/* Past the plain string bytes at p: 8 at a time, then byte by byte. */
static inline const uint8 *
skip_plain(const uint8 *p, const uint8 *end)
{
	while (end - p >= 8)
	{
		uint64		w;

		memcpy(&w, p, 8);
		if (swar_has_special(w))
			break;
		p += 8;
	}
	while (p < end && str_plain[*p])
		p++;
	return p;
}

static inline int
hex_value(uint8 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static inline bool
is_ident_char(uint8 c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* ---------------------------------------------------------------------
 * UTF-8
 * ---------------------------------------------------------------------
 */

typedef enum Utf8Problem
{
	U8_BAD_START,				/* 0x80..0xBF or 0xF5..0xFF as first byte */
	U8_OVERLONG_START,			/* 0xC0, 0xC1 */
	U8_BAD_CONT,				/* continuation byte outside 0x80..0xBF */
	U8_OVERLONG,				/* E0 80..9F, F0 80..8F */
	U8_SURROGATE,				/* ED A0..BF: U+D800..U+DFFF */
	U8_TOO_BIG,					/* F4 90..BF: above U+10FFFF */
	U8_TRUNCATED				/* input ends inside the sequence */
} Utf8Problem;

/*
 * Check the multi-byte sequence at s[0..avail) (s[0] >= 0x80, avail >= 1)
 * against Unicode Table 3-7.  Returns its length, or 0 and the problem and
 * the offending byte.
 */
static int
utf8_sequence(const uint8 *s, size_t avail, Utf8Problem *why, uint8 *badbyte)
{
	uint8		c = s[0];
	uint8		lo = 0x80,
				hi = 0xBF;
	Utf8Problem range_problem = U8_BAD_CONT;
	int			need;
	int			i;

	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c >= 0xE0 && c <= 0xEF)
	{
		need = 2;
		if (c == 0xE0)
		{
			lo = 0xA0;
			range_problem = U8_OVERLONG;
		}
		else if (c == 0xED)
		{
			hi = 0x9F;
			range_problem = U8_SURROGATE;
		}
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		need = 3;
		if (c == 0xF0)
		{
			lo = 0x90;
			range_problem = U8_OVERLONG;
		}
		else if (c == 0xF4)
		{
			hi = 0x8F;
			range_problem = U8_TOO_BIG;
		}
	}
	else
	{
		*why = (c == 0xC0 || c == 0xC1) ? U8_OVERLONG_START : U8_BAD_START;
		*badbyte = c;
		return 0;
	}

	for (i = 1; i <= need; i++)
	{
		uint8		b;

		if ((size_t) i >= avail)
		{
			*why = U8_TRUNCATED;
			*badbyte = c;
			return 0;
		}
		b = s[i];
		if (b < 0x80 || b > 0xBF)
		{
			*why = U8_BAD_CONT;
			*badbyte = b;
			return 0;
		}
		if (b < lo || b > hi)
		{
			*why = range_problem;
			*badbyte = b;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return need + 1;
}

/* Decode a sequence already known to be valid. */
static uint32
utf8_decode_valid(const uint8 *s, int n)
{
	switch (n)
	{
		case 1:
			return s[0];
		case 2:
			return ((uint32) (s[0] & 0x1F) << 6) | (s[1] & 0x3F);
		case 3:
			return ((uint32) (s[0] & 0x0F) << 12) |
				((uint32) (s[1] & 0x3F) << 6) | (s[2] & 0x3F);
		default:
			return ((uint32) (s[0] & 0x07) << 18) |
				((uint32) (s[1] & 0x3F) << 12) |
				((uint32) (s[2] & 0x3F) << 6) | (s[3] & 0x3F);
	}
}

static inline int
utf8_encode(uint32 cp, uint8 *out)
{
	if (cp < 0x80)
	{
		out[0] = (uint8) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (uint8) (0xC0 | (cp >> 6));
		out[1] = (uint8) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (uint8) (0xE0 | (cp >> 12));
		out[1] = (uint8) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (uint8) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (uint8) (0xF0 | (cp >> 18));
	out[1] = (uint8) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (uint8) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (uint8) (0x80 | (cp & 0x3F));
	return 4;
}

int64
se_utf16_length(const char *s, size_t len)
{
	int64		n = 0;
	size_t		i;

	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if ((c & 0xC0) != 0x80)
			n += c >= 0xF0 ? 2 : 1;
	}
	return n;
}

/* ASCII fast path: 8 bytes at a time, then sequence by sequence. */
int
se_utf8_validate(const char *s, size_t len)
{
	const uint8 *p = (const uint8 *) s;
	const uint8 *end = p + len;

	if (s == NULL)
		return -1;
	while (p < end)
	{
		Utf8Problem why;
		uint8		bad;
		int			n;

		while (end - p >= 8)
		{
			uint64		w;

			memcpy(&w, p, 8);
			if (w & SWAR_HIGHS)
				break;
			p += 8;
		}
		while (p < end && *p < 0x80)
			p++;
		if (p >= end)
			break;
		n = utf8_sequence(p, end - p, &why, &bad);
		if (n == 0)
		{
			size_t		off = p - (const uint8 *) s;

			return off > (size_t) PG_INT32_MAX ? PG_INT32_MAX : (int) off;
		}
		p += n;
	}
	return -1;
}

/* ---------------------------------------------------------------------
 * Arena
 * ---------------------------------------------------------------------
 */

typedef struct ArenaChunk
{
	struct ArenaChunk *next;
} ArenaChunk;

#define CHUNK_HDR			MAXALIGN(sizeof(ArenaChunk))
#define ARENA_MAX_CHUNK		((Size) 1024 * 1024)

typedef struct Arena
{
	char	   *cur;
	char	   *end;
	ArenaChunk *chunks;			/* every chunk, for release on failure */
	Size		next_size;
} Arena;

static void
arena_init(Arena *a, size_t input_len)
{
	Size		first = (Size) input_len * 4 + 512;

	a->cur = a->end = NULL;
	a->chunks = NULL;
	a->next_size = Max(Min(first, (Size) 64 * 1024), (Size) 1024);
}

static void *
arena_alloc_slow(Arena *a, Size n)
{
	ArenaChunk *c;

	if (n > a->next_size / 4)
	{
		/* big requests get a chunk of their own; keep the current one */
		c = (ArenaChunk *) palloc(CHUNK_HDR + n);
		c->next = a->chunks;
		a->chunks = c;
		return (char *) c + CHUNK_HDR;
	}
	c = (ArenaChunk *) palloc(a->next_size);
	c->next = a->chunks;
	a->chunks = c;
	a->cur = (char *) c + CHUNK_HDR + n;
	a->end = (char *) c + a->next_size;
	if (a->next_size < ARENA_MAX_CHUNK)
		a->next_size *= 2;
	return (char *) c + CHUNK_HDR;
}

static inline void *
arena_alloc(Arena *a, Size n)
{
	char	   *p;

	n = MAXALIGN(n);
	if ((Size) (a->end - a->cur) >= n)
	{
		p = a->cur;
		a->cur += n;
		return p;
	}
	return arena_alloc_slow(a, n);
}

static void
arena_release(Arena *a)
{
	ArenaChunk *c = a->chunks;

	while (c != NULL)
	{
		ArenaChunk *next = c->next;

		pfree(c);
		c = next;
	}
	a->chunks = NULL;
	a->cur = a->end = NULL;
}

/* ---------------------------------------------------------------------
 * Parser state
 * ---------------------------------------------------------------------
 */

typedef struct KeyEnt
{
	const char *key;
	int			len;
} KeyEnt;

typedef struct Frame
{
	bool		is_object;
	int			vbase;			/* first value of this container in vals */
	int			kbase;			/* first key of this object in keys */
	const uint8 *open;			/* its '{' or '[' */
	int		   *htab;			/* duplicate-key hash (index+1), or NULL */
	int			hmask;
} Frame;

typedef struct Parser
{
	const uint8 *start;			/* after any BOM; positions count from here */
	const uint8 *end;
	int			max_depth;
	bool		reject_dups;
	bool		reject_nul;
	SeError    *err;
	Arena		arena;

	SeJson	  **vals;			/* values of open containers */
	int			nvals;
	int			vcap;
	KeyEnt	   *keys;			/* keys of open objects */
	int			nkeys;
	int			kcap;
	Frame	   *frames;			/* open containers */
	int			depth;
	int			fcap;
	char	   *sbuf;			/* scratch for decoding escaped strings */
	size_t		scap;
	uint64		hash_seed;
} Parser;

/* ---------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------
 */

/* 1-based line and character column of at; CR, LF and CRLF end lines. */
static void
position_of(const Parser *ps, const uint8 *at, int *line, int *col)
{
	const uint8 *q;
	const uint8 *ls = ps->start;
	int			l = 1;
	int			c = 1;

	if (at > ps->end)
		at = ps->end;
	for (q = ps->start; q < at; q++)
	{
		if (*q == '\n' || (*q == '\r' && !(q + 1 < ps->end && q[1] == '\n')))
		{
			l++;
			ls = q + 1;
		}
	}
	for (q = ls; q < at; q++)
	{
		if ((*q & 0xC0) != 0x80)
			c++;
	}
	*line = l;
	*col = c;
}

/*
 * Raise an error at 'at'.  Syntax errors get a "[line:col] " prefix,
 * json_parse_exception errors an " at [line:col]" suffix, as ES shows them.
 */
static void
parse_error(Parser *ps, const uint8 *at, const char *type, const char *fmt,...)
pg_attribute_printf(4, 5);

static void
parse_error(Parser *ps, const uint8 *at, const char *type, const char *fmt,...)
{
	StringInfoData msg;
	va_list		args;
	int			line,
				col;

	initStringInfo(&msg);
	for (;;)
	{
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}
	position_of(ps, at, &line, &col);
	if (strcmp(type, ERR_JSON) == 0)
		se_error_set(ps->err, 400, type, "%s at [%d:%d]", msg.data, line, col);
	else
		se_error_set(ps->err, 400, type, "[%d:%d] %s", line, col, msg.data);
	pfree(msg.data);
}

static void
utf8_error(Parser *ps, const uint8 *at)
{
	Utf8Problem why;
	uint8		bad;

	if (utf8_sequence(at, ps->end - at, &why, &bad) != 0)
	{
		/* can't happen: the caller saw this sequence fail */
		parse_error(ps, at, ERR_JSON, "Invalid UTF-8 sequence");
		return;
	}
	switch (why)
	{
		case U8_BAD_START:
			parse_error(ps, at, ERR_JSON, "Invalid UTF-8 start byte 0x%02x", bad);
			break;
		case U8_OVERLONG_START:
			parse_error(ps, at, ERR_JSON,
						"Invalid UTF-8 start byte 0x%02x (overlong encoding)", bad);
			break;
		case U8_BAD_CONT:
			parse_error(ps, at, ERR_JSON, "Invalid UTF-8 middle byte 0x%02x", bad);
			break;
		case U8_OVERLONG:
			parse_error(ps, at, ERR_JSON,
						"Invalid UTF-8 sequence starting with 0x%02x (overlong encoding)",
						*at);
			break;
		case U8_SURROGATE:
			parse_error(ps, at, ERR_JSON,
						"Invalid UTF-8 sequence starting with 0x%02x (encoded surrogate)",
						*at);
			break;
		case U8_TOO_BIG:
			parse_error(ps, at, ERR_JSON,
						"Invalid UTF-8 sequence starting with 0x%02x (code point above U+10FFFF)",
						*at);
			break;
		case U8_TRUNCATED:
			parse_error(ps, at, ERR_JSON,
						"Invalid UTF-8 start byte 0x%02x (truncated multi-byte sequence)",
						*at);
			break;
	}
}

/*
 * Describe the character at 'at' the way Jackson does: 'x' (code 120),
 * (CTRL-CHAR, code 10), or 'é' (code 233 / 0xe9).  Returns false (after
 * raising the UTF-8 error) if the bytes there are not valid UTF-8.
 */
static bool
describe_char(Parser *ps, const uint8 *at, StringInfo buf)
{
	uint8		c = *at;

	if (c >= 0x80)
	{
		Utf8Problem why;
		uint8		bad;
		int			n = utf8_sequence(at, ps->end - at, &why, &bad);

		if (n == 0)
		{
			utf8_error(ps, at);
			return false;
		}
		appendStringInfo(buf, "'%.*s' (code %u / 0x%x)", n, (const char *) at,
						 utf8_decode_valid(at, n), utf8_decode_valid(at, n));
	}
	else if (c < 0x20 || c == 0x7F)
		appendStringInfo(buf, "(CTRL-CHAR, code %d)", c);
	else
		appendStringInfo(buf, "'%c' (code %d)", c, c);
	return true;
}

/* "Unexpected character (X)<what>", e.g. what = ": was expecting a colon". */
static void
unexpected_char(Parser *ps, const uint8 *at, const char *what)
{
	StringInfoData d;

	initStringInfo(&d);
	if (describe_char(ps, at, &d))
		parse_error(ps, at, ERR_SYNTAX, "Unexpected character (%s)%s", d.data, what);
	pfree(d.data);
}

/*
 * End of input.  'what' names the token being read ("" when between tokens,
 * in which case the innermost open container is named instead).
 */
static void
unexpected_eoi(Parser *ps, const char *what)
{
	if (what[0] != '\0')
		parse_error(ps, ps->end, ERR_SYNTAX, "Unexpected end-of-input%s", what);
	else if (ps->depth > 0)
	{
		const Frame *f = &ps->frames[ps->depth - 1];
		int			line,
					col;

		position_of(ps, f->open, &line, &col);
		parse_error(ps, ps->end, ERR_SYNTAX,
					"Unexpected end-of-input: expected close marker for %s (start marker at [%d:%d])",
					f->is_object ? "Object" : "Array", line, col);
	}
	else
		parse_error(ps, ps->end, ERR_SYNTAX,
					"Unexpected end-of-input: " EXPECT_VALUE);
}

/* Report a bare word where a value was expected (tru, nul, NaN, foo...). */
static void
unrecognized_token(Parser *ps, const uint8 *at)
{
	const uint8 *q = at;
	int			n;

	while (q < ps->end && is_ident_char(*q) && q - at < 256)
		q++;
	n = (int) (q - at);
	if (n == 0)
	{
		unexpected_char(ps, at, ": " EXPECT_VALUE);
		return;
	}
	if ((n == 3 && memcmp(at, "NaN", 3) == 0) ||
		(n == 8 && memcmp(at, "Infinity", 8) == 0))
		parse_error(ps, at, ERR_SYNTAX,
					"Non-standard token '%.*s': non-numeric numbers are not allowed in JSON",
					n, (const char *) at);
	else
		parse_error(ps, at, ERR_SYNTAX,
					"Unrecognized token '%.*s%s': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')",
					n, (const char *) at, (q < ps->end && is_ident_char(*q)) ? "..." : "");
}

/* ---------------------------------------------------------------------
 * Scratch stacks
 * ---------------------------------------------------------------------
 */

static void
grow_vals(Parser *ps)
{
	int			ncap = ps->vcap ? ps->vcap * 2 : 64;

	if (ps->vals)
		ps->vals = (SeJson **) repalloc(ps->vals, sizeof(SeJson *) * ncap);
	else
		ps->vals = (SeJson **) palloc(sizeof(SeJson *) * ncap);
	ps->vcap = ncap;
}

static void
grow_keys(Parser *ps)
{
	int			ncap = ps->kcap ? ps->kcap * 2 : 32;

	if (ps->keys)
		ps->keys = (KeyEnt *) repalloc(ps->keys, sizeof(KeyEnt) * ncap);
	else
		ps->keys = (KeyEnt *) palloc(sizeof(KeyEnt) * ncap);
	ps->kcap = ncap;
}

/* Make sure sbuf can hold need bytes. */
static void
reserve_sbuf(Parser *ps, size_t need)
{
	size_t		ncap;

	if (need <= ps->scap)
		return;
	ncap = ps->scap ? ps->scap : 256;
	while (ncap < need)
		ncap *= 2;
	if (ps->sbuf)
		ps->sbuf = (char *) repalloc(ps->sbuf, ncap);
	else
		ps->sbuf = (char *) palloc(ncap);
	ps->scap = ncap;
}

static bool
push_frame(Parser *ps, bool is_object, const uint8 *open)
{
	Frame	   *f;

	if (ps->depth >= ps->max_depth)
	{
		parse_error(ps, open, ERR_SYNTAX,
					"Document nesting depth (%d) exceeds the maximum allowed (%d)",
					ps->depth + 1, ps->max_depth);
		return false;
	}
	if (ps->depth == ps->fcap)
	{
		int			ncap = ps->fcap ? ps->fcap * 2 : 16;

		if (ps->frames)
			ps->frames = (Frame *) repalloc(ps->frames, sizeof(Frame) * ncap);
		else
			ps->frames = (Frame *) palloc(sizeof(Frame) * ncap);
		ps->fcap = ncap;
	}
	f = &ps->frames[ps->depth++];
	f->is_object = is_object;
	f->vbase = ps->nvals;
	f->kbase = ps->nkeys;
	f->open = open;
	f->htab = NULL;
	f->hmask = 0;
	return true;
}

static inline SeJson *
new_node(Parser *ps, SeJsonType type)
{
	SeJson	   *v = (SeJson *) arena_alloc(&ps->arena, sizeof(SeJson));

	memset(v, 0, sizeof(SeJson));
	v->type = type;
	return v;
}

/* Close the innermost container: copy its values into an exact array. */
static SeJson *
close_frame(Parser *ps)
{
	Frame	   *f = &ps->frames[ps->depth - 1];
	int			count = ps->nvals - f->vbase;
	SeJson	   *v;
	int			i;

	if (f->is_object)
	{
		SeJsonMember *m = NULL;

		v = new_node(ps, SE_JSON_OBJECT);
		if (count > 0)
		{
			m = (SeJsonMember *) arena_alloc(&ps->arena,
											 sizeof(SeJsonMember) * (Size) count);
			for (i = 0; i < count; i++)
			{
				m[i].key = ps->keys[f->kbase + i].key;
				m[i].keylen = ps->keys[f->kbase + i].len;
				m[i].value = ps->vals[f->vbase + i];
			}
		}
		v->u.o.count = count;
		v->u.o.members = m;
		ps->nkeys = f->kbase;
		if (f->htab)
			pfree(f->htab);
	}
	else
	{
		SeJson	  **items = NULL;

		v = new_node(ps, SE_JSON_ARRAY);
		if (count > 0)
		{
			items = (SeJson **) arena_alloc(&ps->arena,
											sizeof(SeJson *) * (Size) count);
			memcpy(items, ps->vals + f->vbase, sizeof(SeJson *) * (Size) count);
		}
		v->u.a.count = count;
		v->u.a.items = items;
	}
	ps->nvals = f->vbase;
	ps->depth--;
	return v;
}

/* ---------------------------------------------------------------------
 * Duplicate keys
 * ---------------------------------------------------------------------
 */

/* Seeded 64-bit multiply-xorshift hash; the seed defeats crafted collisions. */
static uint32
key_hash(const char *k, int len, uint64 seed)
{
	uint64		h = seed ^ ((uint64) len * UINT64CONST(0x9E3779B97F4A7C15));
	const uint8 *p = (const uint8 *) k;

	while (len >= 8)
	{
		uint64		w;

		memcpy(&w, p, 8);
		h = (h ^ w) * UINT64CONST(0xff51afd7ed558ccd);
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	if (len > 0)
	{
		uint64		w = 0;

		memcpy(&w, p, len);
		h = (h ^ w) * UINT64CONST(0xff51afd7ed558ccd);
	}
	h ^= h >> 33;
	h *= UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return (uint32) h;
}

static inline bool
key_equal(const KeyEnt *e, const char *key, int len)
{
	return e->len == len && memcmp(e->key, key, len) == 0;
}

/* Insert key #idx (relative to the frame) into the frame's hash table. */
static void
htab_insert(Parser *ps, Frame *f, int idx)
{
	const KeyEnt *e = &ps->keys[f->kbase + idx];
	uint32		h = key_hash(e->key, e->len, ps->hash_seed) & f->hmask;

	while (f->htab[h] != 0)
		h = (h + 1) & f->hmask;
	f->htab[h] = idx + 1;
}

static void
htab_rebuild(Parser *ps, Frame *f, int nkeys)
{
	int			cap = 64;
	int			i;

	while (cap < nkeys * 2 + 2)
		cap *= 2;
	if (f->htab)
		pfree(f->htab);
	f->htab = (int *) palloc0(sizeof(int) * cap);
	f->hmask = cap - 1;
	for (i = 0; i < nkeys; i++)
		htab_insert(ps, f, i);
}

/*
 * Is key already a member of the innermost object?  Small objects scan
 * linearly; large ones use a per-object open-addressing table, so hostile
 * documents with huge objects stay O(n).
 */
static bool
is_duplicate_key(Parser *ps, const char *key, int len)
{
	Frame	   *f = &ps->frames[ps->depth - 1];
	int			n = ps->nkeys - f->kbase;
	uint32		h;

	if (n <= DUP_LINEAR_MAX && f->htab == NULL)
	{
		int			i;

		for (i = 0; i < n; i++)
		{
			if (key_equal(&ps->keys[f->kbase + i], key, len))
				return true;
		}
		return false;
	}
	if (f->htab == NULL || (n + 1) * 2 > f->hmask + 1)
		htab_rebuild(ps, f, n);
	h = key_hash(key, len, ps->hash_seed) & f->hmask;
	while (f->htab[h] != 0)
	{
		if (key_equal(&ps->keys[f->kbase + f->htab[h] - 1], key, len))
			return true;
		h = (h + 1) & f->hmask;
	}
	return false;
}

/* A key as it may appear in a message: at most ~100 bytes, no controls. */
static void
append_key_for_message(StringInfo buf, const char *key, int len)
{
	int			n = len;
	int			i;

	if (n > 100)
	{
		n = 100;
		while (n > 0 && ((uint8) key[n] & 0xC0) == 0x80)
			n--;
	}
	for (i = 0; i < n; i++)
	{
		uint8		c = (uint8) key[i];

		appendStringInfoChar(buf, c < 0x20 ? '?' : (char) c);
	}
	if (n < len)
		appendStringInfoString(buf, "...");
}

/* ---------------------------------------------------------------------
 * Strings
 * ---------------------------------------------------------------------
 */

/*
 * Decode a \uXXXX escape's four hex digits at p (p points at the 'u').
 * Returns the code unit, or -1 after raising an error.
 */
static int
parse_hex4(Parser *ps, const uint8 *p)
{
	int			v = 0;
	int			i;

	for (i = 1; i <= 4; i++)
	{
		int			h;

		if (p + i >= ps->end)
		{
			unexpected_eoi(ps, " in character escape sequence");
			return -1;
		}
		h = hex_value(p[i]);
		if (h < 0)
		{
			unexpected_char(ps, p + i,
							": expected a hex-digit for character escape sequence");
			return -1;
		}
		v = (v << 4) | h;
	}
	return v;
}

/*
 * Slow path of parse_string, entered at the first backslash: decode into
 * sbuf (which already holds the bytes before it), then copy to the arena.
 */
static const uint8 *
parse_string_escaped(Parser *ps, const uint8 *s0, const uint8 *p,
					 const char **out, int *outlen)
{
	const uint8 *end = ps->end;
	size_t		n = p - s0;
	char	   *dst;

	reserve_sbuf(ps, n + 64);
	memcpy(ps->sbuf, s0, n);

	for (;;)
	{
		const uint8 *run = p;
		uint8		c;

		for (;;)
		{
			p = skip_plain(p, end);
			if (p < end && *p >= 0x80)
			{
				Utf8Problem why;
				uint8		bad;
				int			k = utf8_sequence(p, end - p, &why, &bad);

				if (k == 0)
				{
					utf8_error(ps, p);
					return NULL;
				}
				p += k;
				continue;
			}
			break;
		}
		if (p > run)
		{
			reserve_sbuf(ps, n + (p - run) + 4);
			memcpy(ps->sbuf + n, run, p - run);
			n += p - run;
		}
		if (p >= end)
		{
			unexpected_eoi(ps, ": was expecting closing quote for a string value");
			return NULL;
		}
		c = *p;
		if (c == '"')
			break;
		if (c < 0x20)
		{
			parse_error(ps, p, ERR_SYNTAX,
						"Illegal unquoted character ((CTRL-CHAR, code %d)): has to be escaped using backslash to be included in string value",
						c);
			return NULL;
		}

		/* backslash escape */
		reserve_sbuf(ps, n + 4);
		if (p + 1 >= end)
		{
			unexpected_eoi(ps, " in character escape sequence");
			return NULL;
		}
		switch (p[1])
		{
			case '"':
				ps->sbuf[n++] = '"';
				p += 2;
				break;
			case '\\':
				ps->sbuf[n++] = '\\';
				p += 2;
				break;
			case '/':
				ps->sbuf[n++] = '/';
				p += 2;
				break;
			case 'b':
				ps->sbuf[n++] = '\b';
				p += 2;
				break;
			case 'f':
				ps->sbuf[n++] = '\f';
				p += 2;
				break;
			case 'n':
				ps->sbuf[n++] = '\n';
				p += 2;
				break;
			case 'r':
				ps->sbuf[n++] = '\r';
				p += 2;
				break;
			case 't':
				ps->sbuf[n++] = '\t';
				p += 2;
				break;
			case 'u':
				{
					int			u = parse_hex4(ps, p + 1);
					uint32		cp;

					if (u < 0)
						return NULL;
					if (u >= 0xDC00 && u <= 0xDFFF)
					{
						parse_error(ps, p, ERR_SYNTAX,
									"Invalid surrogate: lone low surrogate \\u%04X (must follow a \\u-escaped high surrogate)",
									u);
						return NULL;
					}
					if (u >= 0xD800 && u <= 0xDBFF)
					{
						int			lo;

						if (p + 7 < end && p[6] == '\\' && p[7] == 'u')
						{
							lo = parse_hex4(ps, p + 7);
							if (lo < 0)
								return NULL;
						}
						else if (p + 6 >= end ||
								 (p[6] == '\\' && p + 7 >= end))
						{
							unexpected_eoi(ps, " in character escape sequence");
							return NULL;
						}
						else
							lo = -1;
						if (lo < 0xDC00 || lo > 0xDFFF)
						{
							parse_error(ps, p, ERR_SYNTAX,
										"Invalid surrogate: lone high surrogate \\u%04X (must be followed by a \\u-escaped low surrogate)",
										u);
							return NULL;
						}
						cp = 0x10000 + (((uint32) u - 0xD800) << 10) +
							((uint32) lo - 0xDC00);
						p += 12;
					}
					else
					{
						if (u == 0 && ps->reject_nul)
						{
							parse_error(ps, p, ERR_SYNTAX,
										"The NUL character (\\u0000) is not allowed in a string: PostgreSQL's text and jsonb cannot hold it");
							return NULL;
						}
						cp = (uint32) u;
						p += 6;
					}
					n += utf8_encode(cp, (uint8 *) ps->sbuf + n);
					break;
				}
			default:
				{
					StringInfoData d;

					initStringInfo(&d);
					if (describe_char(ps, p + 1, &d))
						parse_error(ps, p + 1, ERR_SYNTAX,
									"Unrecognized character escape %s", d.data);
					pfree(d.data);
					return NULL;
				}
		}
	}

	dst = (char *) arena_alloc(&ps->arena, n + 1);
	memcpy(dst, ps->sbuf, n);
	dst[n] = '\0';
	*out = dst;
	*outlen = (int) n;
	return p + 1;
}

/*
 * Parse the string whose opening quote is at p.  Returns the position after
 * the closing quote, or NULL after raising an error.
 */
static const uint8 *
parse_string(Parser *ps, const uint8 *p, const char **out, int *outlen)
{
	const uint8 *end = ps->end;
	const uint8 *s0 = ++p;

	for (;;)
	{
		uint8		c;

		p = skip_plain(p, end);
		if (p >= end)
		{
			unexpected_eoi(ps, ": was expecting closing quote for a string value");
			return NULL;
		}
		c = *p;
		if (c == '"')
		{
			size_t		n = p - s0;
			char	   *dst = (char *) arena_alloc(&ps->arena, n + 1);

			memcpy(dst, s0, n);
			dst[n] = '\0';
			*out = dst;
			*outlen = (int) n;
			return p + 1;
		}
		if (c == '\\')
			return parse_string_escaped(ps, s0, p, out, outlen);
		if (c < 0x20)
		{
			parse_error(ps, p, ERR_SYNTAX,
						"Illegal unquoted character ((CTRL-CHAR, code %d)): has to be escaped using backslash to be included in string value",
						c);
			return NULL;
		}
		else
		{
			Utf8Problem why;
			uint8		bad;
			int			k = utf8_sequence(p, end - p, &why, &bad);

			if (k == 0)
			{
				utf8_error(ps, p);
				return NULL;
			}
			p += k;
		}
	}
}

/* ---------------------------------------------------------------------
 * Numbers
 * ---------------------------------------------------------------------
 */

static const double exact_pow10[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

static inline bool
is_digit(uint8 c)
{
	return c >= '0' && c <= '9';
}

/*
 * Parse the number at p (a '-' or digit).  Keeps the text; computes the
 * double exactly with Clinger's fast path (<= 2^53 mantissa, |exp10| <= 22)
 * or strtod, and the int64 when the number is an integer in range.
 */
static const uint8 *
parse_number(Parser *ps, const uint8 *p, SeJson **out)
{
	const uint8 *end = ps->end;
	const uint8 *start = p;
	bool		neg = false;
	bool		integral = true;
	bool		many = false;	/* more than 19 significant digits */
	uint64		mant = 0;
	int			sig = 0;
	int			scale = 0;
	int64		exp10 = 0;
	SeJson	   *v;
	char	   *text;
	size_t		len;

	if (*p == '-')
	{
		neg = true;
		p++;
		if (p >= end)
		{
			unexpected_eoi(ps, " in a Number value");
			return NULL;
		}
		if (!is_digit(*p))
		{
			if (*p == 'I')
			{
				const uint8 *q = p;

				while (q < end && is_ident_char(*q) && q - p < 64)
					q++;
				if (q - p == 8 && memcmp(p, "Infinity", 8) == 0)
				{
					parse_error(ps, start, ERR_SYNTAX,
								"Non-standard token '-Infinity': non-numeric numbers are not allowed in JSON");
					return NULL;
				}
			}
			unexpected_char(ps, p,
							" in numeric value: expected digit (0-9) to follow minus sign, for valid numeric value");
			return NULL;
		}
	}

	if (*p == '0')
	{
		p++;
		if (p < end && is_digit(*p))
		{
			parse_error(ps, p, ERR_SYNTAX,
						"Invalid numeric value: Leading zeroes not allowed");
			return NULL;
		}
	}
	else
	{
		while (p < end && is_digit(*p))
		{
			if (sig < 19)
			{
				mant = mant * 10 + (*p - '0');
				sig++;
			}
			else
				many = true;
			p++;
		}
	}

	if (p < end && *p == '.')
	{
		integral = false;
		p++;
		if (p >= end)
		{
			unexpected_eoi(ps, " in a Number value");
			return NULL;
		}
		if (!is_digit(*p))
		{
			unexpected_char(ps, p,
							" in numeric value: Decimal point not followed by a digit");
			return NULL;
		}
		while (p < end && is_digit(*p))
		{
			int			d = *p - '0';

			if (mant == 0 && d == 0)
				scale--;		/* leading zero of the fraction */
			else if (sig < 19)
			{
				mant = mant * 10 + d;
				sig++;
				scale--;
			}
			else
				many = true;
			p++;
		}
	}

	if (p < end && (*p == 'e' || *p == 'E'))
	{
		bool		eneg = false;

		integral = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
		{
			eneg = (*p == '-');
			p++;
		}
		if (p >= end)
		{
			unexpected_eoi(ps, " in a Number value");
			return NULL;
		}
		if (!is_digit(*p))
		{
			unexpected_char(ps, p,
							" in numeric value: Exponent indicator not followed by a digit");
			return NULL;
		}
		while (p < end && is_digit(*p))
		{
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (*p - '0');
			p++;
		}
		if (eneg)
			exp10 = -exp10;
	}

	len = p - start;
	text = (char *) arena_alloc(&ps->arena, len + 1);
	memcpy(text, start, len);
	text[len] = '\0';

	v = new_node(ps, SE_JSON_NUMBER);
	v->u.n.text = text;
	v->u.n.len = (int) len;

	if (integral && !many &&
		mant <= (neg ? (uint64) PG_INT64_MAX + 1 : (uint64) PG_INT64_MAX))
	{
		v->u.n.is_int = true;
		if (neg)
			v->u.n.i = (mant == (uint64) PG_INT64_MAX + 1) ? PG_INT64_MIN :
				-(int64) mant;
		else
			v->u.n.i = (int64) mant;
		v->u.n.d = (mant == 0 && neg) ? -0.0 : (double) v->u.n.i;
	}
	else if (mant == 0 && !many)
		v->u.n.d = neg ? -0.0 : 0.0;
	else
	{
		int64		e = exp10 + scale;

		if (!many && mant <= (UINT64CONST(1) << 53) && e >= -22 && e <= 22)
		{
			double		d = (double) mant;

			d = e < 0 ? d / exact_pow10[-e] : d * exact_pow10[e];
			v->u.n.d = neg ? -d : d;
		}
		else
			v->u.n.d = strtod(text, NULL);	/* +-HUGE_VAL on overflow */
	}

	*out = v;
	return p;
}

/* ---------------------------------------------------------------------
 * The document
 * ---------------------------------------------------------------------
 */

/* Parse a literal (true/false/null) at p, whose first letter matched. */
static const uint8 *
parse_literal(Parser *ps, const uint8 *p, const char *word, int wlen)
{
	if (ps->end - p >= wlen && memcmp(p, word, wlen) == 0 &&
		!(p + wlen < ps->end && is_ident_char(p[wlen])))
		return p + wlen;
	unrecognized_token(ps, p);
	return NULL;
}

#define SKIP_WS(p, end) \
	do { while ((p) < (end) && ws_class[*(p)]) (p)++; } while (0)

static SeJson *
parse_document(Parser *ps)
{
	const uint8 *p = ps->start;
	const uint8 *end = ps->end;
	SeJson	   *v;
	Frame	   *f;

value:
	SKIP_WS(p, end);
	if (p >= end)
	{
		unexpected_eoi(ps, "");
		return NULL;
	}
	switch (*p)
	{
		case '{':
			if (!push_frame(ps, true, p))
				return NULL;
			p++;
			SKIP_WS(p, end);
			if (p < end && *p == '}')
			{
				p++;
				v = close_frame(ps);
				goto have_value;
			}
			goto member;
		case '[':
			if (!push_frame(ps, false, p))
				return NULL;
			p++;
			SKIP_WS(p, end);
			if (p < end && *p == ']')
			{
				p++;
				v = close_frame(ps);
				goto have_value;
			}
			goto value;
		case '"':
			{
				const char *s;
				int			slen;

				p = parse_string(ps, p, &s, &slen);
				if (p == NULL)
					return NULL;
				v = new_node(ps, SE_JSON_STRING);
				v->u.s.str = s;
				v->u.s.len = slen;
				goto have_value;
			}
		case '-':
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7':
		case '8':
		case '9':
			p = parse_number(ps, p, &v);
			if (p == NULL)
				return NULL;
			goto have_value;
		case 't':
			p = parse_literal(ps, p, "true", 4);
			if (p == NULL)
				return NULL;
			v = new_node(ps, SE_JSON_TRUE);
			goto have_value;
		case 'f':
			p = parse_literal(ps, p, "false", 5);
			if (p == NULL)
				return NULL;
			v = new_node(ps, SE_JSON_FALSE);
			goto have_value;
		case 'n':
			p = parse_literal(ps, p, "null", 4);
			if (p == NULL)
				return NULL;
			v = new_node(ps, SE_JSON_NULL);
			goto have_value;
		default:
			if (is_ident_char(*p))
				unrecognized_token(ps, p);
			else
				unexpected_char(ps, p, ": " EXPECT_VALUE);
			return NULL;
	}

have_value:
	if (ps->depth == 0)
	{
		SKIP_WS(p, end);
		if (p < end)
		{
			unexpected_char(ps, p,
							": was expecting end of input after the root value");
			return NULL;
		}
		return v;
	}
	if (ps->nvals == ps->vcap)
		grow_vals(ps);
	ps->vals[ps->nvals++] = v;

	SKIP_WS(p, end);
	if (p >= end)
	{
		unexpected_eoi(ps, "");
		return NULL;
	}
	f = &ps->frames[ps->depth - 1];
	if (*p == ',')
	{
		p++;
		if (!f->is_object)
			goto value;
		SKIP_WS(p, end);
		goto member;
	}
	if (f->is_object)
	{
		if (*p == '}')
		{
			p++;
			v = close_frame(ps);
			goto have_value;
		}
		if (*p == ']')
		{
			int			line,
						col;

			position_of(ps, f->open, &line, &col);
			parse_error(ps, p, ERR_SYNTAX,
						"Unexpected close marker ']': expected '}' (for Object starting at [%d:%d])",
						line, col);
		}
		else
			unexpected_char(ps, p, ": was expecting comma to separate Object entries");
		return NULL;
	}
	if (*p == ']')
	{
		p++;
		v = close_frame(ps);
		goto have_value;
	}
	if (*p == '}')
	{
		int			line,
					col;

		position_of(ps, f->open, &line, &col);
		parse_error(ps, p, ERR_SYNTAX,
					"Unexpected close marker '}': expected ']' (for Array starting at [%d:%d])",
					line, col);
	}
	else
		unexpected_char(ps, p, ": was expecting comma to separate Array entries");
	return NULL;

member:
	/* whitespace already skipped; a field name must follow */
	if (p >= end)
	{
		unexpected_eoi(ps, "");
		return NULL;
	}
	if (*p != '"')
	{
		unexpected_char(ps, p, ": was expecting double-quote to start field name");
		return NULL;
	}
	{
		const uint8 *keypos = p;
		const char *key;
		int			keylen;

		p = parse_string(ps, p, &key, &keylen);
		if (p == NULL)
			return NULL;
		if (ps->reject_dups && is_duplicate_key(ps, key, keylen))
		{
			StringInfoData k;

			initStringInfo(&k);
			append_key_for_message(&k, key, keylen);
			parse_error(ps, keypos, ERR_JSON, "Duplicate field '%s'", k.data);
			pfree(k.data);
			return NULL;
		}
		if (ps->nkeys == ps->kcap)
			grow_keys(ps);
		ps->keys[ps->nkeys].key = key;
		ps->keys[ps->nkeys].len = keylen;
		ps->nkeys++;
	}
	SKIP_WS(p, end);
	if (p >= end)
	{
		unexpected_eoi(ps, "");
		return NULL;
	}
	if (*p != ':')
	{
		unexpected_char(ps, p,
						": was expecting a colon to separate field name and value");
		return NULL;
	}
	p++;
	goto value;
}

SeJson *
se_json_parse(const char *text, size_t len, const SeJsonParseOptions *opts,
			  SeError *err)
{
	Parser		ps;
	SeJson	   *result;
	int			i;

	memset(&ps, 0, sizeof(ps));
	if (text == NULL)
		len = 0;
	ps.start = (const uint8 *) (text ? text : "");
	ps.end = ps.start + len;
	ps.err = err;
	ps.max_depth = (opts && opts->max_depth > 0) ? opts->max_depth : DEFAULT_MAX_DEPTH;
	ps.reject_dups = opts ? opts->reject_duplicate_keys : false;
	ps.reject_nul = opts ? opts->reject_nul : false;
	ps.hash_seed = (uint64) (uintptr_t) &ps ^
		((uint64) (uintptr_t) text * UINT64CONST(0x9E3779B97F4A7C15));

	if (len > SE_JSON_MAX_INPUT)
	{
		se_error_set(err, 400, ERR_SYNTAX,
					 "JSON document of %zu bytes exceeds the maximum of %d bytes",
					 len, (int) SE_JSON_MAX_INPUT);
		return NULL;
	}

	/* a UTF-8 byte order mark is ignored, as Jackson does */
	if (len >= 3 && ps.start[0] == 0xEF && ps.start[1] == 0xBB && ps.start[2] == 0xBF)
		ps.start += 3;

	arena_init(&ps.arena, len);
	result = parse_document(&ps);

	for (i = 0; i < ps.depth; i++)
	{
		if (ps.frames[i].htab)
			pfree(ps.frames[i].htab);
	}
	if (ps.vals)
		pfree(ps.vals);
	if (ps.keys)
		pfree(ps.keys);
	if (ps.frames)
		pfree(ps.frames);
	if (ps.sbuf)
		pfree(ps.sbuf);
	if (result == NULL)
		arena_release(&ps.arena);
	return result;
}

/* ---------------------------------------------------------------------
 * DOM helpers
 * ---------------------------------------------------------------------
 */

SeJson *
se_json_get(const SeJson *obj, const char *key)
{
	size_t		klen;
	int			i;

	if (obj == NULL || key == NULL || obj->type != SE_JSON_OBJECT ||
		obj->u.o.members == NULL)
		return NULL;
	klen = strlen(key);
	for (i = obj->u.o.count - 1; i >= 0; i--)
	{
		const SeJsonMember *m = &obj->u.o.members[i];

		if ((size_t) m->keylen == klen && memcmp(m->key, key, klen) == 0)
			return m->value;
	}
	return NULL;
}

bool
se_json_as_double(const SeJson *v, double *out)
{
	char	   *end;

	if (v->type == SE_JSON_NUMBER)
	{
		*out = v->u.n.d;
		return true;
	}
	if (v->type == SE_JSON_STRING && v->u.s.len > 0)
	{
		*out = strtod(v->u.s.str, &end);
		return *end == '\0' && !isnan(*out);
	}
	return false;
}

bool
se_json_has_nul(const SeJson *v)
{
	int			i;

	switch (v->type)
	{
		case SE_JSON_STRING:
			return memchr(v->u.s.str, '\0', v->u.s.len) != NULL;
		case SE_JSON_ARRAY:
			for (i = 0; i < v->u.a.count; i++)
				if (se_json_has_nul(v->u.a.items[i]))
					return true;
			return false;
		case SE_JSON_OBJECT:
			for (i = 0; i < v->u.o.count; i++)
				if (memchr(v->u.o.members[i].key, '\0', v->u.o.members[i].keylen) != NULL ||
					se_json_has_nul(v->u.o.members[i].value))
					return true;
			return false;
		default:
			return false;
	}
}

SeJson *
se_json_make_string(const char *s, int len)
{
	SeJson	   *v = (SeJson *) palloc0(sizeof(SeJson));
	char	   *copy;

	if (s == NULL)
		len = 0;
	else if (len < 0)
		len = (int) strlen(s);
	copy = (char *) palloc(len + 1);
	if (len > 0)
		memcpy(copy, s, len);
	copy[len] = '\0';
	v->type = SE_JSON_STRING;
	v->u.s.str = copy;
	v->u.s.len = len;
	return v;
}

SeJson *
se_json_make_number_int(int64 val)
{
	SeJson	   *v = (SeJson *) palloc0(sizeof(SeJson));
	char		buf[32];
	int			n = snprintf(buf, sizeof(buf), INT64_FORMAT, val);

	v->type = SE_JSON_NUMBER;
	v->u.n.text = pnstrdup(buf, n);
	v->u.n.len = n;
	v->u.n.d = (double) val;
	v->u.n.is_int = true;
	v->u.n.i = val;
	return v;
}

/* Shortest of %.15g/%.16g/%.17g that reads back as the same double. */
static int
format_double(char *buf, size_t size, double d)
{
	int			prec;
	int			n = 0;

	for (prec = 15; prec <= 17; prec++)
	{
		n = snprintf(buf, size, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	return n;
}

SeJson *
se_json_make_number_double(double d)
{
	SeJson	   *v = (SeJson *) palloc0(sizeof(SeJson));
	char		buf[64];
	int			n;

	if (isnan(d) || isinf(d))
	{
		v->type = SE_JSON_NULL;
		return v;
	}
	n = format_double(buf, sizeof(buf), d);
	v->type = SE_JSON_NUMBER;
	v->u.n.text = pnstrdup(buf, n);
	v->u.n.len = n;
	v->u.n.d = d;
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
		d == floor(d) && strpbrk(buf, ".eE") == NULL)
	{
		v->u.n.is_int = true;
		v->u.n.i = (int64) d;
	}
	return v;
}

SeJson *
se_json_make_bool(bool b)
{
	SeJson	   *v = (SeJson *) palloc0(sizeof(SeJson));

	v->type = b ? SE_JSON_TRUE : SE_JSON_FALSE;
	return v;
}

SeJson *
se_json_make_null(void)
{
	SeJson	   *v = (SeJson *) palloc0(sizeof(SeJson));

	v->type = SE_JSON_NULL;
	return v;
}

const char *
se_json_type_name(SeJsonType t)
{
	switch (t)
	{
		case SE_JSON_NULL:
			return "null";
		case SE_JSON_FALSE:
		case SE_JSON_TRUE:
			return "boolean";
		case SE_JSON_NUMBER:
			return "number";
		case SE_JSON_STRING:
			return "string";
		case SE_JSON_ARRAY:
			return "array";
		case SE_JSON_OBJECT:
			return "object";
	}
	return "unknown";
}

/* ---------------------------------------------------------------------
 * Writer
 * ---------------------------------------------------------------------
 */

/* Length of the valid UTF-8 sequence at p, or 0. */
static inline int
valid_utf8_len(const uint8 *p, const uint8 *end)
{
	Utf8Problem why;
	uint8		bad;

	return utf8_sequence(p, end - p, &why, &bad);
}

/*
 * Copy runs of bytes that need no escaping in one go; escape '"', '\\' and
 * controls; pass valid UTF-8 through and replace invalid bytes with U+FFFD,
 * so the output is always valid JSON.
 */
void
se_json_write_string(StringInfo out, const char *s, int len)
{
	const uint8 *p = (const uint8 *) s;
	const uint8 *end;
	const uint8 *run;
	static const char hexdig[] = "0123456789abcdef";

	if (s == NULL)
		len = 0;
	else if (len < 0)
		len = (int) strlen(s);
	end = p + len;

	enlargeStringInfo(out, len + 2);
	appendStringInfoChar(out, '"');
	run = p;
	while (p < end)
	{
		uint8		cls = write_class[*p];
		int			k;

		if (cls == 0)
		{
			p++;
			continue;
		}
		if (cls == 2 && (k = valid_utf8_len(p, end)) > 0)
		{
			p += k;
			continue;
		}
		if (p > run)
			appendBinaryStringInfo(out, (const char *) run, p - run);
		switch (*p)
		{
			case '"':
				appendBinaryStringInfo(out, "\\\"", 2);
				break;
			case '\\':
				appendBinaryStringInfo(out, "\\\\", 2);
				break;
			case '\b':
				appendBinaryStringInfo(out, "\\b", 2);
				break;
			case '\f':
				appendBinaryStringInfo(out, "\\f", 2);
				break;
			case '\n':
				appendBinaryStringInfo(out, "\\n", 2);
				break;
			case '\r':
				appendBinaryStringInfo(out, "\\r", 2);
				break;
			case '\t':
				appendBinaryStringInfo(out, "\\t", 2);
				break;
			default:
				if (*p < 0x20)
				{
					char		esc[6] = {'\\', 'u', '0', '0', 0, 0};

					esc[4] = hexdig[*p >> 4];
					esc[5] = hexdig[*p & 0xF];
					appendBinaryStringInfo(out, esc, 6);
				}
				else
					appendBinaryStringInfo(out, "\xEF\xBF\xBD", 3);	/* U+FFFD */
				break;
		}
		p++;
		run = p;
	}
	if (p > run)
		appendBinaryStringInfo(out, (const char *) run, p - run);
	appendStringInfoChar(out, '"');
}

int64
se_json_string_size(const char *s, int len)
{
	const uint8 *p = (const uint8 *) s;
	const uint8 *end = p + len;
	int64		size = (int64) len + 2;

	while ((p = skip_plain(p, end)) < end)
	{
		int			k;

		if (write_class[*p] == 2)
		{
			if ((k = valid_utf8_len(p, end)) > 0)
			{
				p += k;
				continue;
			}
			size += 2;			/* U+FFFD */
		}
		else if (*p == '"' || *p == '\\' || *p == '\b' || *p == '\f' ||
				 *p == '\n' || *p == '\r' || *p == '\t')
			size += 1;
		else
			size += 5;			/* \u00XX */
		p++;
	}
	return size;
}

static void
write_number(StringInfo out, const SeJson *v)
{
	char		buf[64];
	int			n;

	if (v->u.n.text != NULL && v->u.n.len > 0)
	{
		appendBinaryStringInfo(out, v->u.n.text, v->u.n.len);
		return;
	}
	if (v->u.n.is_int)
	{
		n = snprintf(buf, sizeof(buf), INT64_FORMAT, v->u.n.i);
		appendBinaryStringInfo(out, buf, n);
	}
	else if (isnan(v->u.n.d) || isinf(v->u.n.d))
		appendBinaryStringInfo(out, "null", 4);
	else
	{
		n = format_double(buf, sizeof(buf), v->u.n.d);
		appendBinaryStringInfo(out, buf, n);
	}
}

typedef struct WriteFrame
{
	const SeJson *node;
	int			next;			/* index of the next member/item to write */
} WriteFrame;

static inline int
container_count(const SeJson *v)
{
	if (v->type == SE_JSON_ARRAY)
		return v->u.a.items ? Max(v->u.a.count, 0) : 0;
	return v->u.o.members ? Max(v->u.o.count, 0) : 0;
}

/* Iterative, so hand-built or very deep DOMs cannot overflow the C stack. */
void
se_json_write(StringInfo out, const SeJson *v)
{
	WriteFrame	local[32];
	WriteFrame *stack = local;
	int			cap = lengthof(local);
	int			depth = 0;

	for (;;)
	{
		/* emit v: a scalar, or the opening of a container */
		if (v == NULL)
			appendBinaryStringInfo(out, "null", 4);
		else
		{
			switch (v->type)
			{
				case SE_JSON_NULL:
					appendBinaryStringInfo(out, "null", 4);
					break;
				case SE_JSON_FALSE:
					appendBinaryStringInfo(out, "false", 5);
					break;
				case SE_JSON_TRUE:
					appendBinaryStringInfo(out, "true", 4);
					break;
				case SE_JSON_NUMBER:
					write_number(out, v);
					break;
				case SE_JSON_STRING:
					se_json_write_string(out, v->u.s.str, v->u.s.str ? v->u.s.len : 0);
					break;
				case SE_JSON_ARRAY:
				case SE_JSON_OBJECT:
					appendStringInfoChar(out, v->type == SE_JSON_ARRAY ? '[' : '{');
					if (depth == cap)
					{
						WriteFrame *n = (WriteFrame *) palloc(sizeof(WriteFrame) * cap * 2);

						memcpy(n, stack, sizeof(WriteFrame) * cap);
						if (stack != local)
							pfree(stack);
						stack = n;
						cap *= 2;
					}
					stack[depth].node = v;
					stack[depth].next = 0;
					depth++;
					break;
				default:
					appendBinaryStringInfo(out, "null", 4);
					break;
			}
		}

		/* find the next value to emit, closing finished containers */
		for (;;)
		{
			WriteFrame *top;
			const SeJson *c;

			if (depth == 0)
			{
				if (stack != local)
					pfree(stack);
				return;
			}
			top = &stack[depth - 1];
			c = top->node;
			if (top->next >= container_count(c))
			{
				appendStringInfoChar(out, c->type == SE_JSON_ARRAY ? ']' : '}');
				depth--;
				continue;
			}
			if (top->next > 0)
				appendStringInfoChar(out, ',');
			if (c->type == SE_JSON_ARRAY)
				v = c->u.a.items[top->next];
			else
			{
				const SeJsonMember *m = &c->u.o.members[top->next];

				se_json_write_string(out, m->key, m->key ? m->keylen : 0);
				appendStringInfoChar(out, ':');
				v = m->value;
			}
			top->next++;
			break;
		}
	}
}

char *
se_json_to_string(const SeJson *v)
{
	StringInfoData buf;

	initStringInfo(&buf);
	se_json_write(&buf, v);
	return buf.data;
}

/*
 * Bulk action lines of the common shape (see json.h).  On Contents-like
 * bulks (one short document per item) the full parse of these lines was a
 * fifth of the coordinator's CPU.
 */
static inline const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* A "..." of plain ASCII at p: its contents as [*s, *s + *n); NULL if not. */
static inline const char *
plain_string(const char *p, const char *end, const char **s, int *n)
{
	const char *q;

	if (p >= end || *p != '"')
		return NULL;
	for (q = p + 1; q < end; q++)
	{
		uint8		c = (uint8) *q;

		if (c == '"')
		{
			*s = p + 1;
			*n = (int) (q - p - 1);
			return q + 1;
		}
		if (c == '\\' || c < 0x20 || c >= 0x80)
			return NULL;
	}
	return NULL;
}

bool
se_json_scan_action_line(const char *line, size_t len, SeActionLine *out)
{
	const char *p = line;
	const char *end = line + len;

	memset(out, 0, sizeof(*out));
	if (len > (size_t) PG_INT32_MAX)
		return false;
	p = skip_ws(p, end);
	if (p >= end || *p++ != '{')
		return false;
	p = plain_string(skip_ws(p, end), end, &out->op, &out->op_len);
	if (p == NULL)
		return false;
	p = skip_ws(p, end);
	if (p >= end || *p++ != ':')
		return false;
	p = skip_ws(p, end);
	if (p >= end || *p++ != '{')
		return false;
	p = skip_ws(p, end);
	if (p < end && *p == '}')
		p++;
	else
	{
		for (;;)
		{
			const char *k,
					   *v;
			int			kn,
						vn;

			p = plain_string(p, end, &k, &kn);
			if (p == NULL)
				return false;
			p = skip_ws(p, end);
			if (p >= end || *p++ != ':')
				return false;
			p = plain_string(skip_ws(p, end), end, &v, &vn);
			if (p == NULL)
				return false;
			if (kn == 6 && memcmp(k, "_index", 6) == 0 && out->index == NULL)
			{
				out->index = v;
				out->index_len = vn;
			}
			else if (kn == 3 && memcmp(k, "_id", 3) == 0 && out->id == NULL)
			{
				out->id = v;
				out->id_len = vn;
			}
			else if (((kn == 7 && memcmp(k, "routing", 7) == 0) ||
					  (kn == 8 && memcmp(k, "_routing", 8) == 0)) && out->routing == NULL)
			{
				out->routing = v;
				out->routing_len = vn;
			}
			else
				return false;	/* other keys, repeated keys: the full parse */
			p = skip_ws(p, end);
			if (p < end && *p == ',')
			{
				p = skip_ws(p + 1, end);
				continue;
			}
			if (p < end && *p == '}')
			{
				p++;
				break;
			}
			return false;
		}
	}
	p = skip_ws(p, end);
	if (p >= end || *p++ != '}')
		return false;
	return skip_ws(p, end) == end;
}
