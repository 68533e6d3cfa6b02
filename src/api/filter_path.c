/*-------------------------------------------------------------------------
 *
 * filter_path.c
 *	  ES's filter_path URL parameter: the answer cut to the named paths.
 *
 * A comma-separated list of dotted paths; a segment may hold '*'
 * wildcards, "**" matches any number of levels, and arrays are passed
 * through (a path names the fields of their elements).  An inclusive
 * path keeps what it names, whole, and the objects on the way to it;
 * whatever no path reaches is dropped, and objects and arrays left empty
 * go with it (ES answers "{}" when nothing is left, errors included).
 * A path starting with '-' excludes what it names; exclusions apply
 * first, then the inclusions, as ES documents.  A key holding dots
 * ("docs.count" in _cat's JSON) is matched by as many segments.
 *
 * Pure: the answer is parsed, filtered and written again (only when the
 * parameter is given), so every API gets it without knowing of it.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "api/filter_path.h"

typedef struct FPath
{
	char	  **segs;
	int			nsegs;
} FPath;

/* A position in a path: segment i of path p comes next. */
typedef struct FState
{
	const FPath *p;
	int			i;
} FState;

/* '*' matches any run of characters (ES's Regex.simpleMatch). */
static bool
glob_match(const char *pat, const char *s)
{
	while (*pat)
	{
		if (*pat == '*')
		{
			while (*pat == '*')
				pat++;
			if (*pat == '\0')
				return true;
			for (; *s; s++)
				if (glob_match(pat, s))
					return true;
			return false;
		}
		if (*s != *pat)
			return false;
		pat++;
		s++;
	}
	return *s == '\0';
}

static int
dots(const char *k)
{
	int			n = 0;

	for (; *k; k++)
		n += *k == '.';
	return n;
}

/* Segments i..i+take of p joined by dots (segment i itself when take is 1). */
static const char *
joined(const FPath *p, int i, int take)
{
	StringInfoData s;
	int			j;

	if (take == 1)
		return p->segs[i];
	initStringInfo(&s);
	for (j = 0; j < take; j++)
		appendStringInfo(&s, "%s%s", j ? "." : "", p->segs[i + j]);
	return s.data;
}

/*
 * The states for the value under key k, given the states of its object:
 * *full when some path ends at k (the value is named whole).
 */
static int
advance(const FState *in, int nin, const char *k, FState *out, bool *full)
{
	int			n = 0,
				j;

	*full = false;
	for (j = 0; j < nin; j++)
	{
		const FPath *p = in[j].p;
		int			i = in[j].i;

		if (strcmp(p->segs[i], "**") == 0)
		{
			/* "**" takes k and stays; or takes nothing and k meets i + 1 */
			if (i + 1 == p->nsegs)
			{
				*full = true;
				continue;
			}
			out[n++] = in[j];
			if (glob_match(p->segs[i + 1], k))
			{
				if (i + 2 == p->nsegs)
					*full = true;
				else
				{
					out[n].p = p;
					out[n].i = i + 2;
					n++;
				}
			}
		}
		else
		{
			/* a key with dots ("docs.count" in _cat) takes as many segments */
			int			take = 1 + dots(k);

			if (i + take <= p->nsegs && glob_match(joined(p, i, take), k))
			{
				if (i + take == p->nsegs)
					*full = true;
				else
				{
					out[n].p = p;
					out[n].i = i + take;
					n++;
				}
			}
		}
	}
	return n;
}

static SeJson *
new_container(SeJsonType t, int cap)
{
	SeJson	   *c = palloc0(sizeof(SeJson));

	c->type = t;
	if (t == SE_JSON_OBJECT)
		c->u.o.members = palloc(sizeof(SeJsonMember) * Max(1, cap));
	else
		c->u.a.items = palloc(sizeof(SeJson *) * Max(1, cap));
	return c;
}

static bool
is_empty(const SeJson *v)
{
	return (v->type == SE_JSON_OBJECT && v->u.o.count == 0) ||
		(v->type == SE_JSON_ARRAY && v->u.a.count == 0);
}

/*
 * v filtered by the states st[0..n): include keeps what they reach (NULL
 * when nothing), exclude drops what they name (never NULL).
 */
static SeJson *
filter(const SeJson *v, const FState *st, int n, bool include, int depth)
{
	SeJson	   *out;
	int			j;

	/* depth is bounded by the parse (SE_JSON_STATE_MAX_DEPTH) */
	if (n == 0)
		return include ? NULL : (SeJson *) v;
	if (v->type == SE_JSON_ARRAY)
	{
		out = new_container(SE_JSON_ARRAY, v->u.a.count);
		for (j = 0; j < v->u.a.count; j++)
		{
			SeJson	   *e = filter(v->u.a.items[j], st, n, include, depth + 1);

			if (e != NULL && !(include && is_empty(e) && !is_empty(v->u.a.items[j])))
				out->u.a.items[out->u.a.count++] = e;
		}
		return include && out->u.a.count == 0 ? NULL : out;
	}
	if (v->type != SE_JSON_OBJECT)
		return include ? NULL : (SeJson *) v;	/* a path goes on below a scalar */
	out = new_container(SE_JSON_OBJECT, v->u.o.count);
	for (j = 0; j < v->u.o.count; j++)
	{
		const SeJsonMember *m = &v->u.o.members[j];
		FState	   *next = palloc(sizeof(FState) * 2 * n);
		bool		full;
		int			nn = advance(st, n, m->key, next, &full);
		SeJson	   *kept;

		if (full)
			kept = include ? m->value : NULL;
		else
		{
			kept = filter(m->value, next, nn, include, depth + 1);
			if (include && kept != NULL && is_empty(kept) && !is_empty(m->value))
				kept = NULL;
		}
		pfree(next);
		if (kept != NULL)
		{
			out->u.o.members[out->u.o.count] = *m;
			out->u.o.members[out->u.o.count].value = kept;
			out->u.o.count++;
		}
	}
	return include && out->u.o.count == 0 ? NULL : out;
}

/* Paths of spec, split into inclusive and exclusive ones. */
static void
parse_spec(const char *spec, FPath **incl, int *nincl, FPath **excl, int *nexcl)
{
	char	   *copy = pstrdup(spec);
	char	   *tok,
			   *save = NULL;
	int			cap = 1;
	const char *c;

	for (c = spec; *c; c++)
		cap += *c == ',';
	*incl = palloc0(sizeof(FPath) * cap);
	*excl = palloc0(sizeof(FPath) * cap);
	*nincl = *nexcl = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		bool		neg = false;
		FPath	   *p;
		char	   *seg,
				   *save2 = NULL;
		int			nseg = 1;

		while (*tok == ' ')
			tok++;
		if (*tok == '-')
		{
			neg = true;
			tok++;
		}
		if (*tok == '\0')
			continue;
		for (c = tok; *c; c++)
			nseg += *c == '.';
		p = neg ? &(*excl)[(*nexcl)++] : &(*incl)[(*nincl)++];
		p->segs = palloc(sizeof(char *) * nseg);
		for (seg = strtok_r(tok, ".", &save2); seg; seg = strtok_r(NULL, ".", &save2))
			p->segs[p->nsegs++] = seg;
		if (p->nsegs == 0)
			neg ? (*nexcl)-- : (*nincl)--;
	}
}

SeJson *
se_filter_path(const SeJson *v, const char *spec)
{
	FPath	   *incl,
			   *excl;
	int			nincl,
				nexcl,
				j;
	SeJson	   *out = (SeJson *) v;
	FState	   *st;

	parse_spec(spec, &incl, &nincl, &excl, &nexcl);
	st = palloc(sizeof(FState) * Max(1, Max(nincl, nexcl)));
	if (nexcl > 0)
	{
		for (j = 0; j < nexcl; j++)
			st[j].p = &excl[j], st[j].i = 0;
		out = filter(out, st, nexcl, false, 0);
	}
	if (nincl > 0)
	{
		for (j = 0; j < nincl; j++)
			st[j].p = &incl[j], st[j].i = 0;
		out = filter(out, st, nincl, true, 0);
		if (out == NULL)
			out = new_container(SE_JSON_OBJECT, 0);
	}
	return out;
}
