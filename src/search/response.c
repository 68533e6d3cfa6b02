/*-------------------------------------------------------------------------
 *
 * response.c
 *	  The ES search response body.
 *
 * Scores are written with the fewest digits that read back as the same
 * float32 value (as Java's Float.toString aims to), so a client parsing the
 * JSON recovers the exact score.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <stdlib.h>

#include "search/search_int.h"

/* Shortest decimal that round-trips to f; "1.0" style for integers. */
void
se_search_write_float(StringInfo out, float f)
{
	char		buf[64];
	int			prec;

	if (isnan(f))
	{
		appendStringInfoString(out, "null");
		return;
	}
	if (isinf(f))
	{
		appendStringInfoString(out, f > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		return;
	}
	for (prec = 1; prec <= 9; prec++)
	{
		snprintf(buf, sizeof(buf), "%.*g", prec, (double) f);
		if (strtof(buf, NULL) == f)
			break;
	}
	appendStringInfoString(out, buf);
	if (strpbrk(buf, ".eEn") == NULL)
		appendStringInfoString(out, ".0");
}

void
se_search_result_to_json(const SeSearchResult *res, SeSearchShard *shards,
						 int64 took_ms, StringInfo out)
{
	int			i;

	appendStringInfoChar(out, '{');
	if (res->scroll_id != NULL)
	{
		appendStringInfoString(out, "\"_scroll_id\":");
		se_json_write_string(out, res->scroll_id, strlen(res->scroll_id));
		appendStringInfoChar(out, ',');
	}
	if (res->pit_id != NULL)
	{
		appendStringInfoString(out, "\"pit_id\":");
		se_json_write_string(out, res->pit_id, strlen(res->pit_id));
		appendStringInfoChar(out, ',');
	}
	appendStringInfo(out, "\"took\":" INT64_FORMAT ",\"timed_out\":%s,", took_ms,
					 res->timed_out ? "true" : "false");
	if (res->terminated_early)
		appendStringInfoString(out, "\"terminated_early\":true,");
	appendStringInfo(out,
					 "\"_shards\":{\"total\":%d,\"successful\":%d,\"skipped\":0,\"failed\":%d},",
					 res->shards_total, res->shards_successful, res->shards_failed);
	appendStringInfoString(out, "\"hits\":{");
	if (res->track_total && res->total_as_int)
		appendStringInfo(out, "\"total\":" INT64_FORMAT ",", res->total);
	else if (res->track_total)
		appendStringInfo(out, "\"total\":{\"value\":" INT64_FORMAT ",\"relation\":\"%s\"},",
						 res->total, res->total_is_lower_bound ? "gte" : "eq");
	appendStringInfoString(out, "\"max_score\":");
	se_search_write_float(out, res->max_score);
	appendStringInfoString(out, ",\"hits\":[");
	for (i = 0; i < res->nhits; i++)
	{
		const SeHit *h = &res->hits[i];
		const char *index = shards[h->shard_idx].index;

		if (i > 0)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, "{\"_index\":");
		se_json_write_string(out, index ? index : "", index ? strlen(index) : 0);
		if (!res->no_id)
		{
			appendStringInfoString(out, ",\"_id\":");
			se_json_write_string(out, h->id ? h->id : "", h->id ? strlen(h->id) : 0);
		}
		/* ES writes them before _score */
		if (res->version && h->has_meta)
			appendStringInfo(out, ",\"_version\":" INT64_FORMAT, h->meta.version);
		if (res->seq_no_primary_term && h->has_meta)
			appendStringInfo(out, ",\"_seq_no\":" INT64_FORMAT ",\"_primary_term\":" INT64_FORMAT,
							 h->meta.seq_no, h->meta.primary_term);
		appendStringInfoString(out, ",\"_score\":");
		se_search_write_float(out, h->score);
		if (h->has_source)
		{
			appendStringInfoString(out, ",\"_source\":");
			if (h->source.len > 0)
				appendBinaryStringInfo(out, h->source.data, h->source.len);
			else
				appendStringInfoString(out, "{}");
		}
		if (h->fields != NULL)
		{
			appendStringInfoString(out, ",\"fields\":");
			appendStringInfoString(out, h->fields);
		}
		if (h->highlight != NULL)
		{
			appendStringInfoString(out, ",\"highlight\":");
			appendStringInfoString(out, h->highlight);
		}
		if (h->sort_json != NULL)
		{
			appendStringInfoString(out, ",\"sort\":");
			appendStringInfoString(out, h->sort_json);
		}
		if (h->explanation != NULL)
		{
			appendStringInfoString(out, ",\"_explanation\":");
			appendStringInfoString(out, h->explanation);
		}
		if (h->inner_hits != NULL)
		{
			appendStringInfoString(out, ",\"inner_hits\":");
			appendStringInfoString(out, h->inner_hits);
		}
		appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, "]}");
	if (res->aggregations != NULL)
	{
		appendStringInfoString(out, ",\"aggregations\":");
		appendStringInfoString(out, res->aggregations);
	}
	appendStringInfoChar(out, '}');
}
