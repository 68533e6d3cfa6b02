-- Aggregations and explanations, second part (issue 17): terms with
-- min_doc_count 0 (the shard's unseen terms at count 0), significant_terms'
-- heuristics, explanations of function_score's functions and of rescore.
-- Results are checked against plain SQL on a copy of the data.
CREATE TABLE a2_src AS
  SELECT i,
         (ARRAY['red','green','blue','black','white'])[1 + i % 5] AS tag,
         'c' || lpad(((i * i) % 23)::text, 2, '0') AS cat,
         CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 37) % 101 END AS n,
         ARRAY['x' || i % 3]
           || CASE WHEN i % 10 = 0 THEN ARRAY[(ARRAY['red','green','blue','black','white'])[1 + i % 5]] ELSE '{}' END
           || CASE WHEN i % 4 = 0 THEN ARRAY['q' || i % 9] ELSE '{}' END
           || CASE WHEN i % 7 = 0 THEN ARRAY['s' || i % 2] ELSE '{}' END AS labels
    FROM generate_series(1, 300) i;
SELECT search_engine.create_index('aggs2', '{"settings": {"number_of_shards": 2},
  "mappings": {"properties": {"tag": {"type": "keyword"}, "cat": {"type": "keyword"},
    "n": {"type": "integer"}, "labels": {"type": "keyword"}, "body": {"type": "text"}}}}')->>'acknowledged';
CREATE FUNCTION pg_temp.docs(lo int, hi int) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(format(E'{"index":{"_id":"%s"}}\n%s\n', i,
           jsonb_strip_nulls(jsonb_build_object('tag', tag, 'cat', cat, 'n', n,
             'labels', to_jsonb(labels), 'body', 'doc ' || i || CASE WHEN i % 3 = 0 THEN ' doc' ELSE '' END))), '' ORDER BY i)
    FROM a2_src WHERE i BETWEEN lo AND hi $$;
SELECT search_engine.bulk(pg_temp.docs(1, 150), 'aggs2', 'true')::jsonb->>'errors',
       search_engine.bulk(pg_temp.docs(151, 300), 'aggs2', 'true')::jsonb->>'errors';
CREATE FUNCTION pg_temp.aggs(body jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT search_engine.search('aggs2', body)->'aggregations' $$;

-- terms, min_doc_count 0: every cat of the index, those no matching doc
-- has at count 0 (LEFT JOIN in SQL), ordered count desc then key
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"size": 0, "query": {"range": {"n": {"lt": 10}}},
                 "aggs": {"t": {"terms": {"field": "cat", "size": 100, "min_doc_count": 0}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(cat, c) ORDER BY c DESC, cat)
          FROM (SELECT a.cat, count(m.i)::int c FROM (SELECT DISTINCT cat FROM a2_src) a
                  LEFT JOIN a2_src m ON m.cat = a.cat AND m.n < 10 GROUP BY a.cat) s) AS keyword_zero_buckets,
       (SELECT count(*) FROM jsonb_array_elements(pg_temp.aggs('{"size": 0, "query": {"range": {"n": {"lt": 10}}},
                 "aggs": {"t": {"terms": {"field": "cat", "size": 100}}}}')->'t'->'buckets')) AS without_zero_buckets,
       (SELECT count(DISTINCT cat) FROM a2_src) AS all_cats;
-- a query matching nothing still lists every value; include/exclude apply
SELECT pg_temp.aggs('{"size": 0, "query": {"term": {"tag": "nope"}},
         "aggs": {"t": {"terms": {"field": "labels", "min_doc_count": 0, "include": "[qs].*", "exclude": ["q0"], "order": {"_key": "asc"}}}}}')->'t';
-- numbers: every value of the field on the shards, count 0 when unmatched
SELECT (SELECT jsonb_agg(jsonb_build_array((b->>'key')::int, (b->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"size": 0, "query": {"term": {"tag": "red"}},
                 "aggs": {"t": {"terms": {"field": "n", "size": 200, "min_doc_count": 0, "order": [{"_count": "desc"}, {"_key": "asc"}]}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(n, c) ORDER BY c DESC, n)
          FROM (SELECT a.n, count(m.i)::int c FROM (SELECT DISTINCT n FROM a2_src WHERE n IS NOT NULL) a
                  LEFT JOIN a2_src m ON m.n = a.n AND m.tag = 'red' GROUP BY a.n) s) AS numeric_zero_buckets;
-- under another terms: each tag's buckets list every cat of the shard
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', c->>'key', (c->>'doc_count')::int))
          FROM jsonb_array_elements(pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "tag", "order": {"_key": "asc"}},
                 "aggs": {"c": {"terms": {"field": "cat", "size": 100, "min_doc_count": 0, "order": {"_key": "asc"}}}}}}}')->'t'->'buckets') b,
               jsonb_array_elements(b->'c'->'buckets') c)
     = (SELECT jsonb_agg(jsonb_build_array(t.tag, a.cat, (SELECT count(*)::int FROM a2_src m WHERE m.tag = t.tag AND m.cat = a.cat)) ORDER BY t.tag, a.cat)
          FROM (SELECT DISTINCT tag FROM a2_src) t, (SELECT DISTINCT cat FROM a2_src) a) AS nested_zero_buckets;

-- significant_terms: each heuristic's scores equal ES's formulas computed
-- in SQL from the same counts (subset: red docs; superset: the index);
-- only terms scoring above 0 with min_doc_count 3 are kept, as ES does.
-- One shard: a term's background count sums only the shards that return
-- the term (as ES's reduce does), which SQL would not mirror.
SELECT search_engine.create_index('aggs2_one', '{"settings": {"number_of_shards": 1},
  "mappings": {"properties": {"tag": {"type": "keyword"}, "labels": {"type": "keyword"}}}}')->>'acknowledged';
SELECT search_engine.bulk(pg_temp.docs(1, 300), 'aggs2_one', 'true')::jsonb->>'errors';
CREATE FUNCTION pg_temp.mi(nxy float8, nx_ float8, n_y float8, n float8) RETURNS float8 LANGUAGE sql AS $$
  SELECT CASE WHEN abs(n * nxy) < 1e-7 AND abs(nxy / n) < 1e-7 THEN 0
              ELSE abs(nxy / n) * ln(abs(n * nxy) / abs(nx_ * n_y)) END $$;
CREATE FUNCTION pg_temp.sig(h text, sf float8, ss float8, bf float8, bs float8, superset bool, negatives bool)
RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  n00 float8; n01 float8; n10 float8; n11 float8; n0_ float8; n1_ float8; n_0 float8; n_1 float8; n float8;
  score float8;
BEGIN
  IF h = 'jlh' THEN
    RETURN CASE WHEN sf / ss > bf / bs THEN (sf / ss - bf / bs) * ((sf / ss) / (bf / bs)) ELSE 0 END;
  ELSIF h = 'percentage' THEN
    RETURN sf / bf;
  END IF;
  IF superset THEN
    n00 := bs - bf - (ss - sf); n01 := ss - sf; n10 := bf - sf; n11 := sf;
    n0_ := bs - bf; n1_ := bf; n_0 := bs - ss; n_1 := ss; n := bs;
  ELSE
    n00 := bs - bf; n01 := ss - sf; n10 := bf; n11 := sf;
    n0_ := bs - bf + ss - sf; n1_ := bf + sf; n_0 := bs; n_1 := ss; n := bs + ss;
  END IF;
  IF h = 'gnd' THEN
    IF n11 = 0 THEN RETURN 0; END IF;
    IF n1_ = n_1 AND n1_ = n11 THEN RETURN 1; END IF;
    RETURN exp(-((greatest(ln(n1_), ln(n_1)) - ln(n11)) / (ln(n) - least(ln(n1_), ln(n_1)))));
  END IF;
  IF NOT negatives AND n11 / n_1 < n10 / n_0 THEN
    RETURN '-Infinity';
  END IF;
  IF h = 'chi_square' THEN
    RETURN n * (n11 * n00 - n01 * n10) ^ 2 / (n_1 * n1_ * n0_ * n_0);
  END IF;
  RETURN (pg_temp.mi(n00, n0_, n_0, n) + pg_temp.mi(n01, n0_, n_1, n) + pg_temp.mi(n10, n1_, n_0, n)
          + pg_temp.mi(n11, n1_, n_1, n)) / ln(2);
END $$;
CREATE FUNCTION pg_temp.sig_check(heuristic jsonb) RETURNS TABLE (heuristic text, buckets int, equal bool)
LANGUAGE sql AS $$
  WITH got AS (SELECT search_engine.search('aggs2_one', jsonb_build_object('size', 0, 'query', '{"term": {"tag": "red"}}'::jsonb,
                 'aggs', jsonb_build_object('s', jsonb_build_object('significant_terms',
                   jsonb_build_object('field', 'labels', 'size', 50) || heuristic))))->'aggregations'->'s' j),
       counts AS (SELECT l, count(*) FILTER (WHERE tag = 'red') sf, (SELECT count(*) FROM a2_src WHERE tag = 'red') ss,
                         count(*) bf, (SELECT count(*) FROM a2_src) bs
                    FROM a2_src, unnest(labels) l GROUP BY l),
       want AS (SELECT l, sf, bf, pg_temp.sig(k, sf, ss, bf, bs, coalesce((v->>'background_is_superset')::bool, true),
                                              coalesce((v->>'include_negatives')::bool, false)) sc
                  FROM counts, jsonb_each(heuristic) h(k, v))
  SELECT (SELECT k FROM jsonb_object_keys(heuristic) k) || coalesce(' ' || (SELECT string_agg(x.key || '=' || x.value, ',') FROM jsonb_each(heuristic) h, jsonb_each(h.value) x), ''),
         jsonb_array_length(j->'buckets'),
         (SELECT jsonb_agg(jsonb_build_array(b->>'key', (b->>'doc_count')::int, (b->>'bg_count')::int, round((b->>'score')::numeric, 6)))
            FROM jsonb_array_elements(j->'buckets') b)
         = (SELECT jsonb_agg(jsonb_build_array(l, sf, bf, round(sc::numeric, 6)) ORDER BY sc DESC, sf DESC, l)
              FROM want WHERE sc > 0 AND sf >= 3)
    FROM got $$;
SELECT * FROM pg_temp.sig_check('{"jlh": {}}');
SELECT * FROM pg_temp.sig_check('{"percentage": {}}');
SELECT * FROM pg_temp.sig_check('{"gnd": {}}');
SELECT * FROM pg_temp.sig_check('{"gnd": {"background_is_superset": false}}');
SELECT * FROM pg_temp.sig_check('{"chi_square": {}}');
SELECT * FROM pg_temp.sig_check('{"chi_square": {"include_negatives": true, "background_is_superset": false}}');
SELECT * FROM pg_temp.sig_check('{"mutual_information": {}}');
SELECT * FROM pg_temp.sig_check('{"mutual_information": {"include_negatives": true}}');
-- the top bucket, as ES shows it
SELECT search_engine.search('aggs2_one', '{"size": 0, "query": {"term": {"tag": "red"}}, "aggs": {"s": {"significant_terms": {"field": "labels", "size": 1, "chi_square": {}}}}}')->'aggregations'->'s';
-- parameters a heuristic does not have are refused
SELECT search_engine.search('aggs2', '{"aggs": {"s": {"significant_terms": {"field": "labels", "gnd": {"include_negatives": true}}}}}');
SELECT search_engine.search('aggs2', '{"aggs": {"s": {"significant_terms": {"field": "labels", "jlh": 1}}}}');

-- top_hits with any sort: several keys, keywords, _doc, _score; the docs
-- and sort values equal the search's own sorted hits for the same sort
CREATE FUNCTION pg_temp.top_vs_search(q jsonb, sort jsonb) RETURNS TABLE (hits int, same_ids bool, same_sort bool)
LANGUAGE sql AS $$
  WITH t AS (SELECT search_engine.search('aggs2', jsonb_build_object('size', 0, 'query', q,
                'aggs', jsonb_build_object('t', jsonb_build_object('top_hits', jsonb_build_object('size', 10, 'sort', sort)))))
                ->'aggregations'->'t'->'hits'->'hits' h),
       s AS (SELECT search_engine.search('aggs2', jsonb_build_object('size', 10, 'query', q, 'sort', sort))->'hits'->'hits' h)
  SELECT jsonb_array_length(t.h),
         (SELECT jsonb_agg(x->'_id') FROM jsonb_array_elements(t.h) x) = (SELECT jsonb_agg(x->'_id') FROM jsonb_array_elements(s.h) x),
         (SELECT jsonb_agg(x->'sort') FROM jsonb_array_elements(t.h) x) = (SELECT jsonb_agg(x->'sort') FROM jsonb_array_elements(s.h) x)
    FROM t, s $$;
SELECT * FROM pg_temp.top_vs_search('{"match": {"body": "doc"}}', '[{"cat": "desc"}, {"n": {"order": "asc"}}]');
SELECT * FROM pg_temp.top_vs_search('{"match_all": {}}', '["tag", {"n": "desc"}, "_doc"]');
SELECT * FROM pg_temp.top_vs_search('{"match": {"body": "doc"}}', '[{"tag": "asc"}, "_score", {"cat": "asc"}]');
SELECT * FROM pg_temp.top_vs_search('{"range": {"n": {"lte": 3}}}', '[{"n": "desc"}]');
-- per bucket, by a keyword then a number: SQL's first three rows
SELECT (SELECT jsonb_agg(jsonb_build_array(b->>'key', (SELECT jsonb_agg(h->'_id') FROM jsonb_array_elements(b->'top'->'hits'->'hits') h)))
          FROM jsonb_array_elements(pg_temp.aggs('{"size": 0, "aggs": {"t": {"terms": {"field": "tag", "order": {"_key": "asc"}}, "aggs": {
                 "top": {"top_hits": {"size": 3, "sort": [{"cat": "desc"}, {"n": {"order": "asc"}}], "_source": false}}}}}}')->'t'->'buckets') b)
     = (SELECT jsonb_agg(jsonb_build_array(tag, ids) ORDER BY tag)
          FROM (SELECT tag, (array_agg(to_jsonb(i::text) ORDER BY cat DESC, n ASC NULLS LAST, i))[1:3] ids FROM a2_src GROUP BY tag) s) AS by_keyword_then_number;
-- the hit's shape: sort values in key order, no _score unless sorted by it
SELECT jsonb_pretty(pg_temp.aggs('{"size": 0, "query": {"ids": {"values": ["16", "17"]}}, "aggs": {"t": {"top_hits": {"size": 2, "sort": [{"n": "desc"}, {"cat": "asc"}], "_source": {"includes": ["cat"]}}}}}')->'t'->'hits'->'hits');
SELECT search_engine.search('aggs2', '{"aggs": {"t": {"top_hits": {"sort": [{"nope": "desc"}]}}}}');

-- explanations: the tree's descriptions, one line per node, and its root
-- equal to the hit's _score
CREATE FUNCTION pg_temp.tree(e jsonb, depth int DEFAULT 0) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT repeat('  ', depth) || (e->>'description')
  UNION ALL
  SELECT pg_temp.tree(d, depth + 1) FROM jsonb_array_elements(e->'details') d $$;
CREATE FUNCTION pg_temp.explained(body jsonb) RETURNS TABLE (hits int, roots_equal_scores bool) LANGUAGE sql AS $$
  SELECT count(*)::int, bool_and(h->'_explanation'->'value' = h->'_score')
    FROM jsonb_array_elements(search_engine.search('aggs2', body || '{"explain": true}')->'hits'->'hits') h $$;
CREATE FUNCTION pg_temp.first_tree(body jsonb) RETURNS SETOF text LANGUAGE sql AS $$
  SELECT pg_temp.tree(search_engine.search('aggs2', body || '{"explain": true, "size": 1}')->'hits'->'hits'->0->'_explanation') $$;

-- function_score: each function (filtered ones under "function score,
-- product of:" with "match filter"), score_mode's factor, max_boost's
-- "min of:", boost_mode's combination
SELECT * FROM pg_temp.explained('{"size": 20, "query": {"function_score": {"query": {"match": {"body": "doc"}},
  "functions": [{"filter": {"term": {"tag": "red"}}, "weight": 3}, {"field_value_factor": {"field": "n", "factor": 1.5, "modifier": "log1p", "missing": 1}}],
  "score_mode": "sum", "boost_mode": "multiply"}}}');
SELECT pg_temp.first_tree('{"query": {"function_score": {"query": {"match": {"body": "doc"}},
  "functions": [{"filter": {"term": {"tag": "red"}}, "weight": 3}, {"field_value_factor": {"field": "n", "factor": 1.5, "modifier": "log1p", "missing": 1}}],
  "score_mode": "sum", "boost_mode": "multiply"}}, "sort": [{"n": "desc"}, "_score"], "track_scores": true}');
SELECT * FROM pg_temp.explained('{"size": 20, "query": {"function_score": {"query": {"match": {"body": "doc"}},
  "field_value_factor": {"field": "n", "missing": 2}, "boost_mode": "sum", "max_boost": 50}}}');
SELECT pg_temp.first_tree('{"query": {"function_score": {"query": {"ids": {"values": ["5"]}},
  "field_value_factor": {"field": "n", "missing": 2}, "boost_mode": "replace", "max_boost": 50}}}');
SELECT pg_temp.first_tree('{"query": {"function_score": {"query": {"ids": {"values": ["5"]}},
  "functions": [{"filter": {"term": {"tag": "green"}}, "weight": 2}], "boost_mode": "avg"}}}');
SELECT * FROM pg_temp.explained('{"size": 20, "query": {"function_score": {"query": {"match": {"body": "doc"}},
  "functions": [{"gauss": {"n": {"origin": 50, "scale": 20}}}, {"random_score": {"seed": 7, "field": "n"}, "weight": 2},
                {"weight": 4, "filter": {"range": {"n": {"gte": 90}}}}], "score_mode": "max", "boost_mode": "max"}}}');

-- rescore: the first pass times query_weight ("primaryWeight"), for docs
-- in the window combined with the rescore query's score times
-- rescore_query_weight ("secondaryWeight") by score_mode
SELECT * FROM pg_temp.explained('{"size": 30, "query": {"match": {"body": "doc"}},
  "rescore": {"window_size": 5, "query": {"rescore_query": {"term": {"tag": "red"}}, "query_weight": 0.5, "rescore_query_weight": 3}}}');
SELECT d, count(*) FROM jsonb_array_elements(search_engine.search('aggs2', '{"size": 30, "explain": true, "query": {"match": {"body": "doc"}},
  "rescore": {"window_size": 5, "query": {"rescore_query": {"term": {"tag": "red"}}, "query_weight": 0.5, "rescore_query_weight": 3}}}')->'hits'->'hits') h,
  LATERAL (SELECT h->'_explanation'->>'description' d) x GROUP BY d ORDER BY d;
SELECT pg_temp.first_tree('{"query": {"match": {"body": "doc"}},
  "rescore": {"window_size": 5, "query": {"rescore_query": {"term": {"tag": "red"}}, "score_mode": "multiply", "rescore_query_weight": 3}}}');
-- two rescorers, each on the previous one's explanation
SELECT * FROM pg_temp.explained('{"size": 10, "query": {"match": {"body": "doc"}},
  "rescore": [{"window_size": 8, "query": {"rescore_query": {"term": {"tag": "red"}}, "score_mode": "max", "rescore_query_weight": 4}},
              {"window_size": 3, "query": {"rescore_query": {"range": {"n": {"gte": 20}}}, "score_mode": "avg"}}]}');
SELECT pg_temp.first_tree('{"query": {"match": {"body": "doc"}},
  "rescore": [{"window_size": 8, "query": {"rescore_query": {"term": {"tag": "red"}}, "score_mode": "max", "rescore_query_weight": 4}},
              {"window_size": 3, "query": {"rescore_query": {"range": {"n": {"gte": 20}}}, "score_mode": "avg"}}]}');

SELECT search_engine.delete_index('aggs2')->>'acknowledged', search_engine.delete_index('aggs2_one')->>'acknowledged';
