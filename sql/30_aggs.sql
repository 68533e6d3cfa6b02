-- Aggregations: ES response shapes, and results equal to the same grouping
-- in plain SQL on a copy of the data.  The index has 3 shards of 2
-- segments each, and searches run their query phases in search workers
-- (regress.conf), so every partial crosses the wire before the reduce.
CREATE TABLE agg_src AS
  SELECT i,
         (ARRAY['red','green','blue','black','white'])[1 + i % 5] AS tag,
         'c' || lpad(((i * i) % 23)::text, 2, '0') AS cat,
         CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 37) % 101 END AS n,
         (i % 40) * 0.25 - CASE WHEN i % 3 = 0 THEN 5 ELSE 0 END AS price,
         timestamptz '2024-01-01 00:00:00+00' + make_interval(hours => i * 13) AS ts,
         i % 4 = 0 AS flag,
         CASE WHEN i % 10 = 0 THEN ARRAY[(ARRAY['red','green','blue','black','white'])[1 + i % 5], 'x' || i % 3]
              ELSE ARRAY['x' || i % 3] END AS labels
    FROM generate_series(1, 300) i;
SELECT search_engine.create_index('aggs', '{"settings": {"number_of_shards": 3},
  "mappings": {"properties": {"tag": {"type": "keyword"}, "cat": {"type": "keyword"},
    "n": {"type": "integer"}, "price": {"type": "double"}, "ts": {"type": "date"},
    "flag": {"type": "boolean"}, "labels": {"type": "keyword"}, "body": {"type": "text"}}}}')->>'acknowledged';
CREATE FUNCTION pg_temp.docs(lo int, hi int) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(format(E'{"index":{"_id":"%s"}}\n%s\n', i,
           jsonb_strip_nulls(jsonb_build_object('tag', tag, 'cat', cat, 'n', n, 'price', price,
             'ts', to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'flag', flag,
             'labels', to_jsonb(labels), 'body', 'doc ' || i))), '' ORDER BY i)
    FROM agg_src WHERE i BETWEEN lo AND hi $$;
SELECT search_engine.bulk(pg_temp.docs(1, 150), 'aggs', 'true')::jsonb->>'errors',
       search_engine.bulk(pg_temp.docs(151, 300), 'aggs', 'true')::jsonb->>'errors';
CREATE FUNCTION pg_temp.aggs(body jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT search_engine.search('aggs', body)->'aggregations' $$;

-- the response shape: size 0 leaves the hits empty, aggregations follow hits
SELECT r - 'took' FROM search_engine.search('aggs', '{"size": 0, "query": {"term": {"tag": "red"}},
  "aggs": {"flags": {"terms": {"field": "flag"}}, "lo": {"min": {"field": "price"}},
           "hi": {"max": {"field": "ts"}}, "nothing": {"avg": {"field": "nope"}}}}') r;

-- metrics equal SQL's
WITH a AS (SELECT pg_temp.aggs('{"size": 0, "aggs": {
    "mn": {"min": {"field": "price"}}, "mx": {"max": {"field": "n"}},
    "s": {"sum": {"field": "price"}}, "av": {"avg": {"field": "n"}},
    "vc": {"value_count": {"field": "n"}}, "vcl": {"value_count": {"field": "labels"}},
    "st": {"stats": {"field": "n"}}, "es": {"extended_stats": {"field": "price"}}}}') j)
SELECT (j->'mn'->>'value')::float8 = (SELECT min(price) FROM agg_src) AS min,
       (j->'mx'->>'value')::float8 = (SELECT max(n) FROM agg_src) AS max,
       (j->'s'->>'value')::numeric = (SELECT sum(price) FROM agg_src) AS sum,
       abs((j->'av'->>'value')::numeric - (SELECT avg(n) FROM agg_src)) < 1e-9 AS avg,
       (j->'vc'->>'value')::int = (SELECT count(n) FROM agg_src) AS value_count,
       (j->'vcl'->>'value')::int = (SELECT sum(cardinality(labels)) FROM agg_src) AS value_count_multi,
       (j->'st'->>'count')::int = count(n) AND (j->'st'->>'min')::float8 = min(n) AND
         (j->'st'->>'max')::float8 = max(n) AND (j->'st'->>'sum')::float8 = sum(n) AS stats,
       abs((j->'es'->>'variance')::float8 - (SELECT var_pop(price) FROM agg_src)) < 1e-9 AND
       abs((j->'es'->>'variance_sampling')::float8 - (SELECT var_samp(price) FROM agg_src)) < 1e-9 AND
       abs((j->'es'->>'std_deviation')::float8 - (SELECT stddev_pop(price) FROM agg_src)) < 1e-9 AND
       (j->'es'->>'sum_of_squares')::numeric = (SELECT sum(price * price) FROM agg_src) AS extended_stats
  FROM a, agg_src GROUP BY j;
SELECT jsonb_object_keys(pg_temp.aggs('{"aggs": {"e": {"extended_stats": {"field": "n"}}}}')->'e');

-- terms with a sub-metric: every bucket as GROUP BY gives it, ES's order
-- (count desc, then key)
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int, round((b->'a'->>'value')::numeric, 9)))
          FROM jsonb_array_elements(pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "cat", "size": 100},
                 "aggs": {"a": {"avg": {"field": "n"}}}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(cat, c, round(a, 9)) ORDER BY c DESC, cat)
          FROM (SELECT cat, count(*) c, avg(n) a FROM agg_src GROUP BY cat) s) AS terms_equal;
-- top 3 with an exact shard_size: no error, the rest in sum_other_doc_count
WITH t AS (SELECT pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "cat", "size": 3, "shard_size": 50}}}}')->'t' j),
     q AS (SELECT cat, count(*) c FROM agg_src GROUP BY cat ORDER BY c DESC, cat LIMIT 3)
SELECT j->'doc_count_error_upper_bound' AS err, (j->>'sum_other_doc_count')::int = 300 - (SELECT sum(c) FROM q) AS other,
       (SELECT jsonb_agg(b->'key') FROM jsonb_array_elements(j->'buckets') b) = (SELECT jsonb_agg(cat) FROM q) AS top3
  FROM t;
-- shard_size 3: each shard returns its top 3 only; the error bound covers
-- every returned count's distance from the true count
WITH t AS (SELECT pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "cat", "size": 3, "shard_size": 3,
                                   "show_term_doc_count_error": true}}}}')->'t' j)
SELECT (j->>'doc_count_error_upper_bound')::int > 0 AS has_error,
       bool_and((b->>'doc_count')::int <= c AND c <= (b->>'doc_count')::int + (b->>'doc_count_error_upper_bound')::int) AS within
  FROM t, jsonb_array_elements(j->'buckets') b JOIN (SELECT cat, count(*) c FROM agg_src GROUP BY cat) s ON s.cat = b->>'key'
 GROUP BY j;
-- order by key, by a sub-metric; min_doc_count; include/exclude; missing
SELECT jsonb_path_query_array(pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "tag", "order": {"_key": "desc"}}}}}'), '$.t.buckets[*].key');
SELECT (SELECT jsonb_agg(b->'key') FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "cat", "size": 5,
          "order": {"m": "desc"}}, "aggs": {"m": {"max": {"field": "price"}}}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(cat) FROM (SELECT cat FROM agg_src GROUP BY cat ORDER BY max(price) DESC, count(*) DESC, cat LIMIT 5) s) AS by_sub_metric;
SELECT (SELECT jsonb_agg(b->'key') FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "cat", "size": 50,
          "order": {"s.avg": "asc"}}, "aggs": {"s": {"stats": {"field": "n"}}}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(cat) FROM (SELECT cat FROM agg_src GROUP BY cat ORDER BY avg(n), count(*) DESC, cat) s) AS by_stats_avg;
SELECT jsonb_path_query_array(pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "cat", "min_doc_count": 16, "size": 50}}}}'), '$.t.buckets[*].key')
     = (SELECT jsonb_agg(cat ORDER BY c DESC, cat) FROM (SELECT cat, count(*) c FROM agg_src GROUP BY cat HAVING count(*) >= 16) s) AS min_doc_count;
SELECT jsonb_path_query_array(pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "tag", "include": ["red", "blue", "nope"]}},
                                         "u": {"terms": {"field": "tag", "exclude": "bl.*"}},
                                         "v": {"terms": {"field": "cat", "include": "c0[1-3]", "order": {"_key": "asc"}}}}}'),
                              '$.*.buckets[*].key');
SELECT pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "n", "missing": -1, "size": 1, "order": {"_key": "asc"}}}}}');
-- multi-valued keyword: a doc counts once per distinct value
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "labels"}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(l, c) ORDER BY c DESC, l)
          FROM (SELECT l, count(DISTINCT i) c FROM agg_src, unnest(labels) l GROUP BY l) s) AS multi_valued;
-- numeric and boolean keys
SELECT pg_temp.aggs('{"aggs": {"f": {"terms": {"field": "flag"}}, "p": {"terms": {"field": "price", "size": 2}}}}');

-- histogram: buckets of floor(n / 25) * 25, empty ones included (min_doc_count 0)
SELECT (SELECT jsonb_agg(jsonb_build_array((b->>'key')::float8, (b->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"h": {"histogram": {"field": "n", "interval": 25}}}}')->'h'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(k, c) ORDER BY k)
          FROM (SELECT floor(n / 25.0) * 25 k, count(*) c FROM agg_src WHERE n IS NOT NULL GROUP BY 1) s) AS histogram;
SELECT jsonb_path_query_array(pg_temp.aggs('{"size": 0, "query": {"terms": {"n": [3, 90]}},
         "aggs": {"h": {"histogram": {"field": "n", "interval": 20, "offset": 5, "extended_bounds": {"min": -30, "max": 130}}}}}'),
         '$.h.buckets[*] ? (@.doc_count >= 0)');
SELECT jsonb_path_query_array(pg_temp.aggs('{"aggs": {"h": {"histogram": {"field": "price", "interval": 2.5, "min_doc_count": 30}}}}'), '$.h.buckets[*]')
     = (SELECT jsonb_agg(jsonb_build_object('key', k, 'doc_count', c) ORDER BY k)
          FROM (SELECT floor(price / 2.5) * 2.5 k, count(*) c FROM agg_src GROUP BY 1 HAVING count(*) >= 30) s) AS histogram_min_doc_count;
-- date_histogram: calendar months and weeks, fixed days, a fixed time zone
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key_as_string', (b->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"d": {"date_histogram": {"field": "ts", "calendar_interval": "month"}}}}')->'d'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(to_char(k, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), c) ORDER BY k)
          FROM (SELECT date_trunc('month', ts AT TIME ZONE 'UTC') k, count(*) c FROM agg_src GROUP BY 1) s) AS month;
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key_as_string', (b->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"d": {"date_histogram": {"field": "ts", "calendar_interval": "1w"}}}}')->'d'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(to_char(k, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), c) ORDER BY k)
          FROM (SELECT date_trunc('week', ts AT TIME ZONE 'UTC') k, count(*) c FROM agg_src GROUP BY 1) s) AS week;
SELECT (SELECT jsonb_agg(jsonb_build_array((b->>'key')::bigint, (b->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"d": {"date_histogram": {"field": "ts", "fixed_interval": "36h",
                 "time_zone": "+05:00", "min_doc_count": 1}}}}')->'d'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(k, c) ORDER BY k)
          FROM (SELECT (floor((extract(epoch FROM ts) * 1000 + 18000000) / 129600000) * 129600000 - 18000000)::bigint k, count(*) c
                  FROM agg_src GROUP BY 1) s) AS fixed_tz;
SELECT jsonb_path_query_array(pg_temp.aggs('{"size": 0, "query": {"range": {"ts": {"lt": "2024-03-01"}}},
         "aggs": {"d": {"date_histogram": {"field": "ts", "calendar_interval": "month", "time_zone": "-01:00"}}}}'), '$.d.buckets[*]');

-- range and date_range: ES sorts the ranges, a doc counts once per range
SELECT pg_temp.aggs('{"aggs": {"r": {"range": {"field": "price", "ranges": [{"from": 5, "to": 7.5}, {"to": 0}, {"key": "high", "from": 7.5}]}}}}');
SELECT (SELECT jsonb_agg((b->>'doc_count')::int) FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"r": {"range": {"field": "price",
          "ranges": [{"to": 0}, {"from": 0, "to": 5}, {"from": 5}]}}}}')->'r'->'buckets') b)
     = (SELECT jsonb_build_array(count(*) FILTER (WHERE price < 0), count(*) FILTER (WHERE price >= 0 AND price < 5),
                                 count(*) FILTER (WHERE price >= 5)) FROM agg_src) AS range_counts;
SELECT pg_temp.aggs('{"aggs": {"r": {"date_range": {"field": "ts", "ranges": [{"to": "2024-02-01"}, {"from": "2024-02-01", "to": "2024-03-01"}]}}}}');

-- filter, filters (named and anonymous), missing
SELECT pg_temp.aggs('{"aggs": {"f": {"filter": {"term": {"tag": "red"}}, "aggs": {"s": {"sum": {"field": "n"}}}},
   "fs": {"filters": {"filters": {"cheap": {"range": {"price": {"lt": 0}}}, "flagged": {"term": {"flag": true}}}}},
   "fa": {"filters": {"filters": [{"match": {"body": "doc"}}, {"ids": {"values": ["1", "2"]}}]}},
   "m": {"missing": {"field": "n"}}}}');
SELECT (j->'f'->>'doc_count')::int = (SELECT count(*) FROM agg_src WHERE tag = 'red') AND
       (j->'f'->'s'->>'value')::float8 = (SELECT sum(n) FROM agg_src WHERE tag = 'red') AND
       (j->'m'->>'doc_count')::int = (SELECT count(*) FROM agg_src WHERE n IS NULL) AS filter_and_missing
  FROM pg_temp.aggs('{"aggs": {"f": {"filter": {"term": {"tag": "red"}}, "aggs": {"s": {"sum": {"field": "n"}}}}, "m": {"missing": {"field": "n"}}}}') j;

-- nesting to depth: terms > histogram > terms > stats equals GROUP BY of the three keys
WITH j AS (SELECT pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "tag"}, "aggs": {
             "h": {"histogram": {"field": "price", "interval": 5, "min_doc_count": 1}, "aggs": {
               "f": {"terms": {"field": "flag"}, "aggs": {"s": {"stats": {"field": "n"}}}}}}}}}}') j),
     es AS (SELECT t->>'key' tag, (h->>'key')::float8 k, (f->>'key_as_string')::bool flag, (f->>'doc_count')::int c,
                   (f->'s'->>'count')::int cn, (f->'s'->>'sum')::float8 sn, (f->'s'->>'min')::float8 mn
              FROM j, jsonb_array_elements(j->'t'->'buckets') t, jsonb_array_elements(t->'h'->'buckets') h,
                   jsonb_array_elements(h->'f'->'buckets') f),
     q AS (SELECT tag, floor(price / 5) * 5 k, flag, count(*) c, count(n) cn, coalesce(sum(n), 0) sn, min(n) mn
             FROM agg_src GROUP BY 1, 2, 3)
SELECT (SELECT count(*) FROM es) AS groups,
       NOT EXISTS (SELECT * FROM es NATURAL FULL JOIN q WHERE es.c IS NULL OR q.c IS NULL) AS same_groups,
       (SELECT bool_and(es.c = q.c AND es.cn = q.cn AND es.sn = q.sn AND es.mn IS NOT DISTINCT FROM q.mn)
          FROM es JOIN q USING (tag, k, flag)) AS same_values;

-- cardinality: exact up to precision_threshold (per bucket too), HLL past it
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->'c'->>'value')::int, (b->'l'->>'value')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"t": {"terms": {"field": "tag"},
                 "aggs": {"c": {"cardinality": {"field": "n"}}, "l": {"cardinality": {"field": "cat"}}}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(tag, cn, cc) ORDER BY c DESC, tag)
          FROM (SELECT tag, count(*) c, count(DISTINCT n) cn, count(DISTINCT cat) cc FROM agg_src GROUP BY tag) s) AS exact;
SELECT (j->'e'->>'value')::int = (SELECT count(DISTINCT ts) FROM agg_src) AS exact_at_threshold,
       abs((j->'h'->>'value')::int - (SELECT count(DISTINCT ts) FROM agg_src)) <= 0.05 * 300 AS hll_within_5pct,
       abs((j->'hp'->>'value')::int - (SELECT count(DISTINCT price) FROM agg_src)) <= 0.05 * (SELECT count(DISTINCT price) FROM agg_src) AS hll_double
  FROM pg_temp.aggs('{"aggs": {"e": {"cardinality": {"field": "ts", "precision_threshold": 300}},
                              "h": {"cardinality": {"field": "ts", "precision_threshold": 50}},
                              "hp": {"cardinality": {"field": "price", "precision_threshold": 10}}}}') j;

-- percentiles (t-digest): each estimate's rank in the data is within 1.5
-- points of the percent asked for; percentile_ranks within 1.5 points of
-- the fraction at or below the value; small data is exact at the median
SELECT bool_and(abs(100.0 * (SELECT count(*) FROM agg_src WHERE n <= (p.value)::float8) / (SELECT count(n) FROM agg_src)
                    - p.key::float8) <= 1.5 + 100.0 / 283) AS percentiles_n,
       count(*) AS percents
  FROM jsonb_each_text(pg_temp.aggs('{"aggs": {"p": {"percentiles": {"field": "n"}}}}')->'p'->'values') p;
SELECT bool_and(abs(100.0 * (SELECT count(*) FROM agg_src WHERE price <= (p->>'value')::float8) / 300
                    - (p->>'key')::float8) <= 1.5 + 100.0 / 300) AS percentiles_price
  FROM jsonb_array_elements(pg_temp.aggs('{"aggs": {"p": {"percentiles": {"field": "price", "keyed": false,
         "percents": [0.5, 10, 33.3, 50, 66.6, 90, 99.5], "tdigest": {"compression": 50}}}}}')->'p'->'values') p;
SELECT bool_and(abs(p.value::float8 - 100.0 * (SELECT count(*) FROM agg_src WHERE n <= p.key::float8) / (SELECT count(n) FROM agg_src)) <= 1.5 + 100.0 / 283) AS ranks
  FROM jsonb_each_text(pg_temp.aggs('{"aggs": {"r": {"percentile_ranks": {"field": "n", "values": [0, 10, 50, 99, 100]}}}}')->'r'->'values') p;
SELECT pg_temp.aggs('{"size": 0, "query": {"ids": {"values": ["1", "2", "3"]}},
  "aggs": {"p": {"percentiles": {"field": "n", "percents": [0, 50, 100]}}, "r": {"percentile_ranks": {"field": "n", "values": [1, 74]}}}}');

-- pipelines: cumulative_sum and derivative over a histogram's buckets (the
-- first bucket has no derivative), bucket_sort, sibling max/min/avg/sum_bucket
WITH j AS (SELECT pg_temp.aggs('{"size": 0, "aggs": {"h": {"histogram": {"field": "n", "interval": 10},
             "aggs": {"s": {"sum": {"field": "price"}}, "cs": {"cumulative_sum": {"buckets_path": "s"}},
                      "cc": {"cumulative_sum": {"buckets_path": "_count"}}, "d": {"derivative": {"buckets_path": "_count"}},
                      "dd": {"derivative": {"buckets_path": "d"}}}}}}') j),
     es AS (SELECT (b->>'key')::float8 k, (b->'cs'->>'value')::numeric cs, (b->'cc'->>'value')::float8 cc,
                   (b->'d'->>'value')::float8 d, (b->'dd'->>'value')::float8 dd
              FROM j, jsonb_array_elements(j->'h'->'buckets') b),
     q AS (SELECT k, sum(s) OVER w cs, sum(c) OVER w cc, c - lag(c) OVER w d,
                  c - 2 * lag(c) OVER w + lag(c, 2) OVER w dd
             FROM (SELECT floor(n / 10.0) * 10 k, count(*) c, sum(price) s FROM agg_src WHERE n IS NOT NULL GROUP BY 1) g
           WINDOW w AS (ORDER BY k))
SELECT count(*) AS buckets, bool_and(es.cs = q.cs AND es.cc = q.cc AND es.d IS NOT DISTINCT FROM q.d
                                      AND es.dd IS NOT DISTINCT FROM q.dd) AS cumulative_sum_and_derivatives
  FROM es JOIN q USING (k);
SELECT pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "tag"}, "aggs": {"a": {"avg": {"field": "n"}},
    "top": {"bucket_sort": {"sort": [{"a": {"order": "desc"}}], "size": 2}}}},
  "best": {"max_bucket": {"buckets_path": "t>a"}}, "worst": {"min_bucket": {"buckets_path": "t>a"}},
  "mean": {"avg_bucket": {"buckets_path": "t>_count"}}, "all": {"sum_bucket": {"buckets_path": "t>_count"}}}}');
SELECT pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "tag", "size": 10}, "aggs": {
    "page": {"bucket_sort": {"sort": ["_count", {"_key": "asc"}], "from": 1, "size": 2}}}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"t": {"terms": {"field": "tag"}, "aggs": {"d": {"derivative": {"buckets_path": "_count"}}}}}}');

-- composite: pages through every (tag, flag) pair in key order, each page
-- after the last one's after_key; together they are the GROUP BY
CREATE TABLE pg_temp.pages(page int, b jsonb);
DO $$
DECLARE
  body jsonb := '{"size": 0, "aggs": {"c": {"composite": {"size": 4, "sources": [
                   {"tag": {"terms": {"field": "tag"}}}, {"f": {"terms": {"field": "flag", "order": "desc"}}}]}}}}';
  r jsonb;
  p int := 0;
BEGIN
  LOOP
    r := search_engine.search('aggs', body)->'aggregations'->'c';
    EXIT WHEN jsonb_array_length(r->'buckets') = 0 OR p > 10;
    p := p + 1;
    INSERT INTO pg_temp.pages SELECT p, b FROM jsonb_array_elements(r->'buckets') b;
    body := jsonb_set(body, '{aggs,c,composite,after}', r->'after_key');
  END LOOP;
END $$;
SELECT max(page) AS pages,
       jsonb_agg(jsonb_build_array(b->'key'->>'tag', (b->'key'->>'f')::bool, (b->>'doc_count')::int) ORDER BY page, b->'key'->>'tag', b->'key'->>'f' DESC)
       = (SELECT jsonb_agg(jsonb_build_array(tag, flag, c) ORDER BY tag, flag DESC)
            FROM (SELECT tag, flag, count(*) c FROM agg_src GROUP BY 1, 2) s) AS composite_pages
  FROM pg_temp.pages;
SELECT pg_temp.aggs('{"size": 0, "aggs": {"c": {"composite": {"size": 3, "sources": [
    {"n": {"histogram": {"field": "n", "interval": 50, "missing_bucket": true}}},
    {"d": {"date_histogram": {"field": "ts", "calendar_interval": "month", "order": "desc"}}}]},
  "aggs": {"a": {"max": {"field": "price"}}}}}}');
SELECT pg_temp.aggs('{"size": 0, "aggs": {"c": {"composite": {"size": 2, "after": {"n": null, "d": 1704067200000}, "sources": [
    {"n": {"histogram": {"field": "n", "interval": 50, "missing_bucket": true}}},
    {"d": {"date_histogram": {"field": "ts", "calendar_interval": "month", "order": "desc"}}}]}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"t": {"terms": {"field": "tag"}, "aggs": {"c": {"composite": {"sources": [{"x": {"terms": {"field": "tag"}}}]}}}}}}');

-- top_hits: per bucket the best docs by a field (their sort values are
-- SQL's top n), fetched on their shards with the _source filter
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->'top'->'hits'->'total'->>'value')::int,
                         (SELECT jsonb_agg((h->'sort'->>0)::int) FROM jsonb_array_elements(b->'top'->'hits'->'hits') h),
                         (SELECT bool_and((h->'_source'->>'n')::int = (h->'sort'->>0)::int AND h->'_source' ? 'tag' = false)
                            FROM jsonb_array_elements(b->'top'->'hits'->'hits') h)))
          FROM jsonb_array_elements(pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "tag"}, "aggs": {
                 "top": {"top_hits": {"size": 3, "sort": [{"n": {"order": "desc"}}], "_source": {"includes": ["n"]}}}}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(tag, c, to_jsonb(top3), true) ORDER BY c DESC, tag)
          FROM (SELECT tag, count(*) c, (array_agg(n ORDER BY n DESC NULLS LAST))[1:3] top3 FROM agg_src GROUP BY tag) s) AS top_hits_by_field;
SELECT r->'hits'->'hits'->0->>'_id' AS best, r->'hits'->'hits'->0->'_source'->>'tag' AS tag, r->'hits'->'total', jsonb_array_length(r->'hits'->'hits'),
       r->'hits'->'max_score' = r->'hits'->'hits'->0->'_score' AS max_score
  FROM (SELECT pg_temp.aggs('{"size": 0, "query": {"bool": {"should": [{"match": {"body": "7"}}, {"term": {"tag": "red"}}]}},
          "aggs": {"top": {"top_hits": {"size": 2}}}}')->'top' r) s;

-- significant_terms (JLH): the labels of red docs against the whole index,
-- scores and counts as SQL computes them from the same definition (terms
-- scoring 0 are dropped, as ES does)
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int, (b->>'bg_count')::int, round((b->>'score')::numeric, 9)))
          FROM jsonb_array_elements(j->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(l, c, bgc, round(sc::numeric, 9)) ORDER BY sc DESC, c DESC, l)
          FROM (SELECT l, c, bgc, CASE WHEN c / 60.0 > bgc / 300.0 THEN (c / 60.0 - bgc / 300.0) * ((c / 60.0) / (bgc / 300.0)) ELSE 0 END sc
                  FROM (SELECT l, count(*) c FROM agg_src, unnest(labels) l WHERE tag = 'red' GROUP BY l) s
                  JOIN (SELECT l, count(*) bgc FROM agg_src, unnest(labels) l GROUP BY l) b USING (l)
                 WHERE c >= 3) q WHERE sc > 0) AS significant_terms,
       j->'doc_count' AS doc_count, j->'bg_count' AS bg_count
  FROM pg_temp.aggs('{"size": 0, "query": {"term": {"tag": "red"}}, "aggs": {"s": {"significant_terms": {"field": "labels"}}}}') a,
       LATERAL (SELECT a->'s' j) x;

-- aggregations see only the query's matches; a bool filter and a match
WITH j AS (SELECT pg_temp.aggs('{"size": 0, "query": {"bool": {"filter": [{"range": {"n": {"gte": 50}}}]}},
             "aggs": {"t": {"terms": {"field": "tag"}, "aggs": {"a": {"sum": {"field": "price"}}}}}}') j)
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int, (b->'a'->>'value')::numeric)) FROM j, jsonb_array_elements(j->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(tag, c, s) ORDER BY c DESC, tag)
          FROM (SELECT tag, count(*) c, sum(price) s FROM agg_src WHERE n >= 50 GROUP BY tag) s) AS query_matches;
-- hits and aggregations together
SELECT jsonb_array_length(r->'hits'->'hits'), r->'hits'->'total', r->'aggregations'->'c'
  FROM search_engine.search('aggs', '{"size": 2, "query": {"match": {"body": "doc"}}, "aggs": {"c": {"value_count": {"field": "tag"}}}}') r;

-- errors as ES
SELECT search_engine.search('aggs', '{"aggs": {"x": {"nope": {"field": "n"}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"terms": {"field": "body"}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"avg": {"field": "n"}, "aggs": {"y": {"max": {"field": "n"}}}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x>y": {"avg": {"field": "n"}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"avg": {"field": "tag"}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"terms": {"field": "tag"}, "avg": {"field": "n"}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"terms": {"field": "tag", "order": {"zz": "asc"}}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"histogram": {"field": "n"}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"terms": {"size": 3}}}}');
SELECT search_engine.search('aggs', '{"aggs": {"x": {"date_histogram": {"field": "ts", "calendar_interval": "2d"}}}}');
SELECT search_engine.count('aggs', '{"aggs": {"x": {"avg": {"field": "n"}}}}');

SELECT search_engine.delete_index('aggs')->>'acknowledged';
DROP TABLE agg_src;
