/*-------------------------------------------------------------------------
 *
 * source_filter.c
 *	  _source filtering with include/exclude patterns (ES semantics).
 *
 * Patterns are dotted paths with '*' wildcards ("user.*", "*.id", "title").
 * A pattern that matches an object's path takes the whole object (so
 * "user" includes "user.name"), and a pattern also matches any path below
 * the one it names (ES appends an implicit ".*" tail).  Objects kept only
 * because something below them was included are dropped when nothing
 * survived; excluded paths always win.  This follows the walk of ES's
 * XContentMapValues.filter, with the automaton states replaced by the path
 * walked so far.  Key order of the stored document is kept.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "search/search_int.h"

/*
 * Wildcard match of s against pat; with prefix_ok, true when some
 * extension of s would match (s can still become a match).
 */
static bool
glob_dp(const char *pat, int plen, const char *s, int slen, bool prefix_ok)
{
	bool		sbuf[2][129];
	bool	   *cur,
			   *nxt,
			   *tmp;
	bool		result = false;
	int			i,
				j;

	if (plen <= 128)
	{
		cur = sbuf[0];
		nxt = sbuf[1];
	}
	else
	{
		cur = palloc(plen + 1);
		nxt = palloc(plen + 1);
	}
	cur[0] = true;
	for (j = 0; j < plen; j++)
		cur[j + 1] = cur[j] && pat[j] == '*';
	for (i = 0; i < slen; i++)
	{
		bool		any = false;

		nxt[0] = false;
		for (j = 0; j < plen; j++)
		{
			if (pat[j] == '*')
				nxt[j + 1] = cur[j + 1] || nxt[j];
			else
				nxt[j + 1] = cur[j] && pat[j] == s[i];
			any |= nxt[j + 1];
		}
		tmp = cur;
		cur = nxt;
		nxt = tmp;
		if (!any)
			break;
	}
	if (i == slen)
	{
		if (prefix_ok)
		{
			for (j = 0; j <= plen; j++)
				if (cur[j])
				{
					result = true;
					break;
				}
		}
		else
			result = cur[plen];
	}
	if (plen > 128)
	{
		pfree(cur);
		pfree(nxt);
	}
	return result;
}

bool
se_glob_match(const char *pat, const char *s, int slen)
{
	return glob_dp(pat, strlen(pat), s, slen, false);
}

/* pat matches path or a dotted ancestor of it (the implicit ".*" tail). */
static bool
tail_match(const char *pat, const char *path, int len)
{
	int			plen = strlen(pat);
	int			i;

	if (glob_dp(pat, plen, path, len, false))
		return true;
	for (i = 0; i < len; i++)
		if (path[i] == '.' && glob_dp(pat, plen, path, i, false))
			return true;
	return false;
}

static bool
any_accept(char **pats, int n, const char *path, int len)
{
	int			i;

	for (i = 0; i < n; i++)
		if (tail_match(pats[i], path, len))
			return true;
	return false;
}

static bool
any_alive(char **pats, int n, const char *path, int len)
{
	int			i;

	for (i = 0; i < n; i++)
		if (glob_dp(pats[i], strlen(pats[i]), path, len, true) ||
			tail_match(pats[i], path, len))
			return true;
	return false;
}

typedef struct FilterCtx
{
	const SeSourceFilter *f;
	StringInfoData path;
} FilterCtx;

static SeJson *filter_array(FilterCtx *c, const SeJson *arr, bool inc_all,
							int depth);

static SeJson *
new_object(int cap)
{
	SeJson	   *o = palloc0(sizeof(SeJson));

	o->type = SE_JSON_OBJECT;
	o->u.o.members = palloc(sizeof(SeJsonMember) * Max(1, cap));
	return o;
}

static SeJson *
new_array(int cap)
{
	SeJson	   *a = palloc0(sizeof(SeJson));

	a->type = SE_JSON_ARRAY;
	a->u.a.items = palloc(sizeof(SeJson *) * Max(1, cap));
	return a;
}

/* State checks at the current path (c->path). */
static bool
inc_accept(FilterCtx *c, bool inc_all)
{
	return inc_all || c->f->ninclude == 0 ||
		any_accept(c->f->include, c->f->ninclude, c->path.data, c->path.len);
}

static bool
inc_alive(FilterCtx *c, bool inc_all)
{
	return inc_all || c->f->ninclude == 0 ||
		any_alive(c->f->include, c->f->ninclude, c->path.data, c->path.len);
}

static bool
exc_alive(FilterCtx *c)
{
	return c->f->nexclude > 0 &&
		any_alive(c->f->exclude, c->f->nexclude, c->path.data, c->path.len);
}

static bool
exc_accept(FilterCtx *c)
{
	return c->f->nexclude > 0 &&
		any_accept(c->f->exclude, c->f->nexclude, c->path.data, c->path.len);
}

/* Filter an object whose members' paths are c->path + key. */
static SeJson *
filter_object(FilterCtx *c, const SeJson *obj, bool inc_all, int depth)
{
	SeJson	   *out = new_object(obj->u.o.count);
	int			base = c->path.len;
	int			i;

	for (i = 0; i < obj->u.o.count; i++)
	{
		const SeJsonMember *m = &obj->u.o.members[i];
		const SeJson *v = m->value;
		bool		accepted;
		bool		sub_all = inc_all;
		SeJson	   *fv = NULL;

		c->path.len = base;
		c->path.data[base] = '\0';
		appendBinaryStringInfo(&c->path, m->key, m->keylen);
		if (!inc_alive(c, inc_all))
			continue;
		if (exc_accept(c))
			continue;
		accepted = inc_accept(c, inc_all);
		if (accepted)
		{
			bool		exc_inner;

			/* could an exclude still match something below this key? */
			appendStringInfoChar(&c->path, '.');
			exc_inner = exc_alive(c);
			c->path.len--;
			c->path.data[c->path.len] = '\0';
			if (!exc_inner)
			{
				out->u.o.members[out->u.o.count++] = *m;
				continue;
			}
			sub_all = true;
		}
		if (v->type == SE_JSON_OBJECT)
		{
			appendStringInfoChar(&c->path, '.');
			if (!inc_alive(c, sub_all) || depth > 1000)
				continue;
			fv = filter_object(c, v, sub_all, depth + 1);
			if (accepted || fv->u.o.count > 0)
			{
				SeJsonMember nm = *m;

				nm.value = fv;
				out->u.o.members[out->u.o.count++] = nm;
			}
		}
		else if (v->type == SE_JSON_ARRAY)
		{
			if (depth > 1000)
				continue;
			fv = filter_array(c, v, sub_all, depth + 1);
			if (accepted || fv->u.a.count > 0)
			{
				SeJsonMember nm = *m;

				nm.value = fv;
				out->u.o.members[out->u.o.count++] = nm;
			}
		}
		else if (accepted && !exc_accept(c))
			out->u.o.members[out->u.o.count++] = *m;
	}
	c->path.len = base;
	c->path.data[base] = '\0';
	return out;
}

/* Filter the elements of an array found at c->path. */
static SeJson *
filter_array(FilterCtx *c, const SeJson *arr, bool inc_all, int depth)
{
	SeJson	   *out = new_array(arr->u.a.count);
	bool		is_include = inc_accept(c, inc_all);
	int			base = c->path.len;
	int			i;

	for (i = 0; i < arr->u.a.count; i++)
	{
		const SeJson *v = arr->u.a.items[i];

		if (v->type == SE_JSON_OBJECT)
		{
			SeJson	   *fv;

			appendStringInfoChar(&c->path, '.');
			fv = filter_object(c, v, inc_all, depth + 1);
			c->path.len = base;
			c->path.data[base] = '\0';
			if (fv->u.o.count > 0)
				out->u.a.items[out->u.a.count++] = fv;
		}
		else if (v->type == SE_JSON_ARRAY)
		{
			SeJson	   *fv = filter_array(c, v, inc_all, depth + 1);

			if (fv->u.a.count > 0)
				out->u.a.items[out->u.a.count++] = fv;
		}
		else if (is_include)
			out->u.a.items[out->u.a.count++] = (SeJson *) v;
	}
	return out;
}

bool
se_source_filter_active(const SeSourceFilter *f)
{
	return f->fetch && (f->ninclude > 0 || f->nexclude > 0);
}

bool
se_source_filter_apply(const SeSourceFilter *f, const char *src, size_t len,
					   StringInfo out, SeError *err)
{
	SeJson	   *doc;
	SeJson	   *filtered;
	FilterCtx	c;

	doc = se_json_parse(src, len, NULL, err);
	if (doc == NULL)
		return false;
	if (doc->type != SE_JSON_OBJECT)
	{
		se_json_write(out, doc);
		return true;
	}
	c.f = f;
	initStringInfo(&c.path);
	filtered = filter_object(&c, doc, false, 0);
	se_json_write(out, filtered);
	pfree(c.path.data);
	return true;
}

SeSourceFilter *
se_source_filter_parse(const SeJson *spec, SeError *err)
{
	SeSourceFilter *f = palloc0(sizeof(SeSourceFilter));

	f->fetch = true;
	if (spec != NULL && !se_search_parse_source_filter(spec, f, err))
		return NULL;
	return f;
}

bool
se_source_filter_fetches(const SeSourceFilter *f)
{
	return f == NULL || f->fetch;
}

bool
se_source_filter_write(const SeSourceFilter *f, const char *src, size_t len,
					   StringInfo out, SeError *err)
{
	if (f == NULL || !se_source_filter_active(f))
	{
		appendBinaryStringInfo(out, src, len);
		return true;
	}
	return se_source_filter_apply(f, src, len, out, err);
}
