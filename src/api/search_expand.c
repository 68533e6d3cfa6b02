/*-------------------------------------------------------------------------
 *
 * search_expand.c
 *	  collapse's expand phase: the "inner_hits" of each collapsed hit.
 *
 * As ES's ExpandSearchPhase, each hit and inner_hits definition is one
 * more search over the same targets (search/collapse.c writes its body:
 * the original query AND the hit's group), run by se_search_exec like any
 * search, so shards on other nodes answer it as they answer the first,
 * and the user's privileges are checked again.  Its "hits" object becomes
 * the definition's section of the hit's "inner_hits".  The searches run
 * one after the other: max_concurrent_group_searches is accepted, and a
 * backend has one connection per node to run them on anyway.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"

#include "api/api.h"
#include "search/search.h"

bool
se_search_expand(const char *expr, const SeJson *body, const SeSearchParams *p,
				 SeSearchRequest *req, SeSearchResult *res, SeError *err)
{
	SeSearchParams gp;
	int			ninner = se_search_collapse_ninner(req);
	int			h,
				i;

	/* the group searches take the URL's targeting, not its paging or _source */
	memset(&gp, 0, sizeof(gp));
	gp.from = -1;
	gp.size = -1;
	gp.track_total_hits = -2;
	if (p != NULL)
	{
		gp.routing = p->routing;
		gp.preference = p->preference;
		gp.search_type = p->search_type;
		gp.rest_total_hits_as_int = p->rest_total_hits_as_int;
	}
	for (h = 0; h < res->nhits; h++)
	{
		SeHit	   *hit = &res->hits[h];
		StringInfoData out;

		initStringInfo(&out);
		appendStringInfoChar(&out, '{');
		for (i = 0; i < ninner; i++)
		{
			const char *name = se_search_collapse_inner_name(req, i);
			StringInfoData text;
			SeJson	   *gbody;
			SeJson	   *answer;
			SeResponse	r;

			CHECK_FOR_INTERRUPTS();
			initStringInfo(&text);
			se_search_collapse_expand_body(req, body, hit, i, &text);
			if ((gbody = se_json_parse(text.data, text.len, NULL, err)) == NULL)
				return false;
			memset(&r, 0, sizeof(r));
			initStringInfo(&r.body);
			if (!se_search_exec(expr, gbody, &gp, NULL, &r, err))
				return false;
			if ((answer = se_json_parse(r.body.data, r.body.len, NULL, err)) == NULL)
				return false;
			if (i > 0)
				appendStringInfoChar(&out, ',');
			se_json_write_string(&out, name, strlen(name));
			appendStringInfoString(&out, ":{\"hits\":");
			se_json_write(&out, se_json_get(answer, "hits"));
			appendStringInfoChar(&out, '}');
		}
		appendStringInfoChar(&out, '}');
		hit->inner_hits = out.data;
	}
	return true;
}
