/*-------------------------------------------------------------------------
 *
 * mlt_items.c
 *	  Documents a more_like_this query names by {"_index", "_id"}.
 *
 * ES fetches the liked (and unliked) documents before the query is built.
 * Here the search's coordinator gets each one as a GET would (privileges,
 * routing, realtime, another node's shard) before the body is parsed and
 * sent, and writes it into the item as "_source"; search/mlt.c then
 * analyzes it as it does an inline "doc", on every shard, local or remote.
 * A document that is not found adds nothing (ES skips it too).  An item
 * without "_index" takes the search's index when there is one.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"

#include "api/api.h"

static bool resolve(SeJson *v, const char *default_index, int depth, SeError *err);

/* An item {"_index"?, "_id", "routing"?} without "doc": its _source added. */
static bool
resolve_item(SeJson **slot, const char *default_index, SeError *err)
{
	SeJson	   *it = *slot;
	const SeJson *id = se_json_get(it, "_id");
	const SeJson *ix = se_json_get(it, "_index");
	const SeJson *rt = se_json_get(it, "routing");
	const char *index = ix && ix->type == SE_JSON_STRING ? ix->u.s.str : default_index;
	SeResponse	r;
	SeJson	   *got;
	const SeJson *src;
	StringInfoData text;
	int			i;

	if (it->type != SE_JSON_OBJECT || id == NULL || id->type != SE_JSON_STRING ||
		se_json_get(it, "doc") != NULL || se_json_get(it, "_source") != NULL)
		return true;
	if (index == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[more_like_this] an item without [_index] needs a search of one index");
		return false;
	}
	memset(&r, 0, sizeof(r));
	initStringInfo(&r.body);
	if (!se_op_get(index, id->u.s.str, rt && rt->type == SE_JSON_STRING ? rt->u.s.str : NULL,
				   NULL, NULL, false, -1, &r, err))
		return false;
	if ((got = se_json_parse(r.body.data, r.body.len, NULL, err)) == NULL)
		return false;
	src = se_json_get(got, "_source");
	initStringInfo(&text);
	/* the item as given (its fields, per_field_analyzer...), with its _source */
	appendStringInfoString(&text, "{\"_index\":");
	se_json_write_string(&text, index, strlen(index));
	for (i = 0; i < it->u.o.count; i++)
		if (strcmp(it->u.o.members[i].key, "_index") != 0)
		{
			appendStringInfoChar(&text, ',');
			se_json_write_string(&text, it->u.o.members[i].key, it->u.o.members[i].keylen);
			appendStringInfoChar(&text, ':');
			se_json_write(&text, it->u.o.members[i].value);
		}
	if (src != NULL && src->type == SE_JSON_OBJECT)
	{
		appendStringInfoString(&text, ",\"_source\":");
		se_json_write(&text, src);
	}
	else
		appendStringInfoString(&text, ",\"found\":false");
	appendStringInfoChar(&text, '}');
	if ((*slot = se_json_parse(text.data, text.len, NULL, err)) == NULL)
		return false;
	return true;
}

static bool
resolve_items(SeJson **slot, const char *default_index, SeError *err)
{
	SeJson	   *v = *slot;
	int			i;

	if (v->type == SE_JSON_OBJECT)
		return resolve_item(slot, default_index, err);
	if (v->type == SE_JSON_ARRAY)
		for (i = 0; i < v->u.a.count; i++)
			if (v->u.a.items[i]->type == SE_JSON_OBJECT &&
				!resolve_item(&v->u.a.items[i], default_index, err))
				return false;
	return true;
}

/* Walk the body for more_like_this queries (anywhere: bool clauses, filters...). */
static bool
resolve(SeJson *v, const char *default_index, int depth, SeError *err)
{
	int			i;

	check_stack_depth();
	if (depth > SE_JSON_MAX_DEPTH)
		return true;
	if (v->type == SE_JSON_ARRAY)
	{
		for (i = 0; i < v->u.a.count; i++)
			if (!resolve(v->u.a.items[i], default_index, depth + 1, err))
				return false;
		return true;
	}
	if (v->type != SE_JSON_OBJECT)
		return true;
	for (i = 0; i < v->u.o.count; i++)
	{
		SeJsonMember *m = &v->u.o.members[i];

		if (strcmp(m->key, "more_like_this") == 0 && m->value->type == SE_JSON_OBJECT)
		{
			int			j;

			for (j = 0; j < m->value->u.o.count; j++)
			{
				SeJsonMember *k = &m->value->u.o.members[j];

				if ((strcmp(k->key, "like") == 0 || strcmp(k->key, "unlike") == 0) &&
					!resolve_items(&k->value, default_index, err))
					return false;
			}
		}
		else if (!resolve(m->value, default_index, depth + 1, err))
			return false;
	}
	return true;
}

/*
 * body with the documents its more_like_this queries name fetched into
 * them (changed in place); indices the search's (SeIndexMeta list).
 */
bool
se_mlt_resolve_items(SeJson *body, List *indices, SeError *err)
{
	const char *default_index = NULL;

	if (body == NULL)
		return true;
	if (list_length(indices) == 1)
		default_index = ((SeIndexMeta *) linitial(indices))->name;
	return resolve(body, default_index, 0, err);
}
