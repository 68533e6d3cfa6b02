/*-------------------------------------------------------------------------
 *
 * json.c
 *	  Just enough JSON reading for the responses the load generator looks
 *	  at: the per-item status of a bulk response, a number at a path of a
 *	  search response, the length of an array at a path.
 *
 * A skipping scanner, no tree: the responses are read once, in order, and
 * a bulk response of 1000 items is ~250 kB.  Strings are compared raw
 * (keys with escapes never match, which is fine for ES's key names).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"

typedef struct Scan
{
	const char *p;
	const char *end;
} Scan;

static void
ws(Scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
		s->p++;
}

static bool
expect(Scan *s, char c)
{
	ws(s);
	if (s->p < s->end && *s->p == c)
	{
		s->p++;
		return true;
	}
	return false;
}

/* At a double quote: set *str and *len to the raw contents, move past it. */
static bool
string(Scan *s, const char **str, size_t *len)
{
	const char *b;

	ws(s);
	if (s->p >= s->end || *s->p != '"')
		return false;
	b = ++s->p;
	while (s->p < s->end && *s->p != '"')
	{
		if (*s->p == '\\')
			s->p++;
		s->p++;
	}
	if (s->p >= s->end)
		return false;
	*str = b;
	*len = (size_t) (s->p - b);
	s->p++;
	return true;
}

static bool
skip_value(Scan *s)
{
	int			depth = 0;

	ws(s);
	do
	{
		const char *str;
		size_t		len;

		ws(s);
		if (s->p >= s->end)
			return false;
		switch (*s->p)
		{
			case '{':
			case '[':
				depth++;
				s->p++;
				break;
			case '}':
			case ']':
				depth--;
				s->p++;
				break;
			case ',':
			case ':':
				s->p++;
				break;
			case '"':
				if (!string(s, &str, &len))
					return false;
				break;
			default:
				while (s->p < s->end && !strchr(",:{}[] \n\t\r\"", *s->p))
					s->p++;
				break;
		}
	} while (depth > 0);
	return depth == 0;
}

static bool
key_is(const char *k, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(k, want, len) == 0;
}

/*
 * The "status" of every item of a bulk response, in order, into status[]
 * (at most max).  Returns the number of items, or -1 if the text is not a
 * bulk response.
 */
int
lg_bulk_statuses(const char *json, size_t len, int *status, int max)
{
	Scan		s = {json, json + len};
	int			n = -1;

	if (!expect(&s, '{'))
		return -1;
	if (expect(&s, '}'))
		return -1;
	do
	{
		const char *k;
		size_t		kl;

		if (!string(&s, &k, &kl) || !expect(&s, ':'))
			return -1;
		if (!key_is(k, kl, "items"))
		{
			if (!skip_value(&s))
				return -1;
			continue;
		}
		if (!expect(&s, '['))
			return -1;
		n = 0;
		if (expect(&s, ']'))
			continue;
		do
		{
			const char *op;
			size_t		opl;
			int			st = 0;

			/* {"index": {..., "status": 201, ...}} */
			if (!expect(&s, '{') || !string(&s, &op, &opl) || !expect(&s, ':') || !expect(&s, '{'))
				return -1;
			if (!expect(&s, '}'))
			{
				do
				{
					if (!string(&s, &k, &kl) || !expect(&s, ':'))
						return -1;
					if (key_is(k, kl, "status"))
					{
						ws(&s);
						st = (int) strtol(s.p, (char **) &s.p, 10);
					}
					else if (!skip_value(&s))
						return -1;
				} while (expect(&s, ','));
				if (!expect(&s, '}'))
					return -1;
			}
			if (!expect(&s, '}'))
				return -1;
			if (n < max)
				status[n] = st;
			n++;
		} while (expect(&s, ','));
		if (!expect(&s, ']'))
			return -1;
	} while (expect(&s, ','));
	return n;
}

/* Move s to the value at path (object keys); false if absent. */
static bool
descend(Scan *s, const char *const *path, int depth)
{
	int			d;

	for (d = 0; d < depth; d++)
	{
		bool		found = false;

		if (!expect(s, '{'))
			return false;
		if (expect(s, '}'))
			return false;
		do
		{
			const char *k;
			size_t		kl;

			if (!string(s, &k, &kl) || !expect(s, ':'))
				return false;
			if (key_is(k, kl, path[d]))
			{
				found = true;
				break;
			}
			if (!skip_value(s))
				return false;
		} while (expect(s, ','));
		if (!found)
			return false;
	}
	ws(s);
	return true;
}

/* The number at path (e.g. hits.total.value). */
bool
lg_json_number_at(const char *json, size_t len, const char *const *path, int depth, double *out)
{
	Scan		s = {json, json + len};
	char	   *e;

	if (!descend(&s, path, depth))
		return false;
	*out = strtod(s.p, &e);
	return e != s.p;
}

/* The length of the array at path, or -1. */
int
lg_json_array_length_at(const char *json, size_t len, const char *const *path, int depth)
{
	Scan		s = {json, json + len};
	int			n = 0;

	if (!descend(&s, path, depth) || !expect(&s, '['))
		return -1;
	if (expect(&s, ']'))
		return 0;
	do
	{
		if (!skip_value(&s))
			return -1;
		n++;
	} while (expect(&s, ','));
	return expect(&s, ']') ? n : -1;
}
