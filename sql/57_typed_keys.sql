-- typed_keys=true (ES 8, _search, _msearch and their templates): every
-- aggregation's name in the response is "type#name", type being ES's
-- internal one (InternalAggregation.getType): sterms/lterms/dterms by the
-- terms' values (unmapped: sterms), tdigest_percentiles, simple_value and
-- bucket_metric_value for pipelines, nested/reverse_nested, ... at every
-- depth; bucket keys (filters, composite) are not names.  Absent or false:
-- the response is unchanged.
SELECT status FROM search_engine.request('PUT', '/tk', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"k": {"type": "keyword"}, "l": {"type": "long"}, "d": {"type": "double"},
    "dt": {"type": "date"}, "b": {"type": "boolean"}, "g": {"type": "geo_point"},
    "n": {"type": "nested", "properties": {"x": {"type": "keyword"}, "v": {"type": "long"}}}}}}');
SELECT status, body->'errors' AS errors, body#>>'{items,0,index,error,reason}' AS reason FROM search_engine.request('POST', '/tk/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n{"k": "k%s", "l": %s, "d": %s.5, "dt": "2024-01-0%s", "b": %s, "g": {"lat": %s, "lon": %s}, "n": [{"x": "x%s", "v": %s}]}\n',
                            i, i % 2, i, i, i, (i % 2 = 0)::text, 40 + i, 2 + i, i % 3, i), '') FROM generate_series(1, 6) i));
CREATE FUNCTION pg_temp.aggs_body() RETURNS text LANGUAGE sql AS $$ SELECT '{"size": 0, "aggs": {
  "s": {"terms": {"field": "k"}, "aggs": {"a": {"avg": {"field": "l"}},
        "lt": {"terms": {"field": "l"}, "aggs": {"mx": {"max": {"field": "d"}}}}}},
  "lt": {"terms": {"field": "l"}}, "dtt": {"terms": {"field": "dt"}}, "bt": {"terms": {"field": "b"}},
  "dd": {"terms": {"field": "d"}}, "um": {"terms": {"field": "nosuch"}},
  "sg": {"significant_terms": {"field": "k"}},
  "avg": {"avg": {"field": "l"}}, "sum": {"sum": {"field": "l"}}, "min": {"min": {"field": "l"}},
  "max": {"max": {"field": "l"}}, "vc": {"value_count": {"field": "l"}}, "st": {"stats": {"field": "l"}},
  "es": {"extended_stats": {"field": "l"}}, "card": {"cardinality": {"field": "k"}},
  "pc": {"percentiles": {"field": "l"}}, "pr": {"percentile_ranks": {"field": "l", "values": [2]}},
  "th": {"top_hits": {"size": 1, "sort": ["l"], "_source": false}},
  "hi": {"histogram": {"field": "l", "interval": 2}}, "ra": {"range": {"field": "l", "ranges": [{"to": 3}]}},
  "dr": {"date_range": {"field": "dt", "ranges": [{"to": "2024-01-03"}]}},
  "gd": {"geo_distance": {"field": "g", "origin": {"lat": 41, "lon": 3}, "ranges": [{"to": 100000}]}},
  "fi": {"filter": {"term": {"k": "k1"}}},
  "fs": {"filters": {"filters": {"one": {"term": {"k": "k1"}}, "two": {"term": {"k": "k0"}}}},
         "aggs": {"c": {"cardinality": {"field": "l"}}}},
  "mi": {"missing": {"field": "k"}},
  "co": {"composite": {"sources": [{"ck": {"terms": {"field": "k"}}}]}},
  "ne": {"nested": {"path": "n"}, "aggs": {"nx": {"terms": {"field": "n.x"},
         "aggs": {"rn": {"reverse_nested": {}, "aggs": {"rl": {"sum": {"field": "l"}}}}}}}},
  "gb": {"geo_bounds": {"field": "g"}}, "gc": {"geo_centroid": {"field": "g"}},
  "gh": {"geohash_grid": {"field": "g", "precision": 2}}, "gt": {"geotile_grid": {"field": "g", "precision": 3}},
  "dh": {"date_histogram": {"field": "dt", "calendar_interval": "day"},
         "aggs": {"ls": {"sum": {"field": "l"}}, "cs": {"cumulative_sum": {"buckets_path": "ls"}},
                  "dv": {"derivative": {"buckets_path": "ls"}}, "bs": {"bucket_sort": {"size": 10}}}},
  "ab": {"avg_bucket": {"buckets_path": "dh>ls"}}, "sb": {"sum_bucket": {"buckets_path": "dh>ls"}},
  "xb": {"max_bucket": {"buckets_path": "dh>ls"}}, "nb": {"min_bucket": {"buckets_path": "dh>ls"}}}}' $$;
-- every name at every depth
CREATE FUNCTION pg_temp.names(j jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(DISTINCT k, ' ' ORDER BY k)
    FROM jsonb_path_query(j, 'strict $.** ? (@.type() == "object").keyvalue().key') q(kj), LATERAL (SELECT kj #>> '{}' AS k) s
   WHERE k LIKE '%#%' $$;
SELECT status, pg_temp.names(body->'aggregations') AS names, body->'error'->>'reason' AS error
  FROM search_engine.request('POST', '/tk/_search?typed_keys=true', pg_temp.aggs_body());
-- top level alone, in order
SELECT string_agg(k, ' ') AS top_level
  FROM search_engine.request('POST', '/tk/_search?typed_keys', pg_temp.aggs_body()) r,
       jsonb_object_keys(r.body->'aggregations') k;
-- depth 2 and 3; bucket keys and composite sources keep their names
SELECT body#>'{aggregations,sterms#s,buckets,0}' ? 'avg#a' AS depth2,
       body#>'{aggregations,sterms#s,buckets,0,lterms#lt,buckets,0}' ? 'max#mx' AS depth3,
       (SELECT string_agg(k, ' ') FROM jsonb_object_keys(body#>'{aggregations,filters#fs,buckets}') k) AS filters_keys,
       body#>'{aggregations,filters#fs,buckets,one}' ? 'cardinality#c' AS in_filters_bucket,
       body#>'{aggregations,composite#co,after_key}' AS after_key,
       body#>'{aggregations,nested#ne,sterms#nx,buckets,0,reverse_nested#rn,sum#rl,value}' AS reverse_nested_sum
  FROM search_engine.request('POST', '/tk/_search?typed_keys=true', pg_temp.aggs_body());
-- the same response but for the names; false or absent: unchanged
SELECT regexp_replace((t.body->'aggregations')::text, '"[a-z_]+#', '"', 'g')::jsonb = (a.body->'aggregations') AS same_but_names,
       f.body->'aggregations' = a.body->'aggregations' AS false_unchanged,
       pg_temp.names(a.body->'aggregations') IS NULL AS absent_untyped
  FROM search_engine.request('POST', '/tk/_search?typed_keys=true', pg_temp.aggs_body()) t,
       search_engine.request('POST', '/tk/_search?typed_keys=false', pg_temp.aggs_body()) f,
       search_engine.request('POST', '/tk/_search', pg_temp.aggs_body()) a;
-- _msearch: each search's aggregations; an unmapped index's terms: sterms
SELECT status, jsonb_path_query_array(body, '$.responses[*].aggregations.keyvalue().key') AS names
  FROM search_engine.request('POST', '/tk/_msearch?typed_keys=true',
       E'{}\n{"size": 0, "aggs": {"t": {"terms": {"field": "l"}}, "m": {"max": {"field": "d"}}}}\n{}\n{"size": 0, "query": {"term": {"k": "nope"}}, "aggs": {"u": {"terms": {"field": "zz"}}, "s": {"sum": {"field": "d"}}}}\n');
SELECT status, jsonb_path_query_array(body, '$.responses[*].aggregations.keyvalue().key') AS names
  FROM search_engine.request('POST', '/tk/_msearch', E'{}\n{"size": 0, "aggs": {"t": {"terms": {"field": "l"}}}}\n');
-- _search/template and _msearch/template
SELECT status, (SELECT string_agg(k, ' ') FROM jsonb_object_keys(body->'aggregations') k) AS names
  FROM search_engine.request('POST', '/tk/_search/template?typed_keys=true',
       '{"source": {"size": 0, "aggs": {"t": {"terms": {"field": "{{f}}"}}}}, "params": {"f": "d"}}');
SELECT status, jsonb_path_query_array(body, '$.responses[*].aggregations.keyvalue().key') AS names
  FROM search_engine.request('POST', '/tk/_msearch/template?typed_keys=true',
       E'{}\n{"source": {"size": 0, "aggs": {"t": {"terms": {"field": "{{f}}"}}}}, "params": {"f": "k"}}\n');
-- scroll: the first page as the search; next pages answer hits only (ES
-- answers aggregations on the first page alone)
CREATE TEMP TABLE tk_scroll AS
  SELECT body->>'_scroll_id' AS id, body->'aggregations' AS aggs
    FROM search_engine.request('POST', '/tk/_search?scroll=1m&size=2&typed_keys=true', '{"aggs": {"m": {"min": {"field": "l"}}}}');
SELECT aggs, (SELECT body ? 'aggregations' FROM search_engine.request('POST', '/_search/scroll?typed_keys=true',
                jsonb_build_object('scroll', '1m', 'scroll_id', id)::text)) AS next_has_aggs,
       (SELECT jsonb_array_length(body->'hits'->'hits') FROM search_engine.request('POST', '/_search/scroll',
                jsonb_build_object('scroll', '1m', 'scroll_id', id)::text)) AS next_hits
  FROM tk_scroll;
SELECT r.status FROM tk_scroll,
       search_engine.request('DELETE', '/_search/scroll', jsonb_build_object('scroll_id', id)::text) r;
DROP TABLE tk_scroll;
SELECT status FROM search_engine.request('DELETE', '/tk');
