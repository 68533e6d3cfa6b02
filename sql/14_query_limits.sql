-- ES's limits on query size (indices.query.bool.max_clause_count as
-- search_engine.max_clause_count, index.max_terms_count,
-- index.max_regex_length) and the search timeout, with ES's errors and
-- response shape.
SELECT search_engine.create_index('limits', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"body": {"type": "text"}, "tag": {"type": "keyword"}}}}') IS NOT NULL AS created;
SELECT (search_engine.bulk($$
{"index": {"_index": "limits", "_id": "1"}}
{"body": "w1 w2 w3 w4", "tag": "a"}
{"index": {"_index": "limits", "_id": "2"}}
{"body": "w2 w3 w4 w5", "tag": "b"}
{"index": {"_index": "limits", "_id": "3"}}
{"body": "w3 w4 w5 w6", "tag": "c"}
$$, refresh => 'true')::jsonb->>'errors') AS errors;

CREATE FUNCTION words(n int) RETURNS text LANGUAGE sql AS
$$ SELECT string_agg('w' || (i % 7), ' ') FROM generate_series(1, n) i $$;
CREATE FUNCTION es_error(path text, body jsonb) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || ' ' || coalesce((r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason'), 'ok')
     FROM search_engine.request('POST', path, body::text) r $$;

-- the default of 4096 clauses: phrase terms count one by one ...
SELECT es_error('/limits/_search', jsonb_build_object('query', jsonb_build_object('match_phrase', jsonb_build_object('body', words(4096)))));
SELECT es_error('/limits/_search', jsonb_build_object('query', jsonb_build_object('match_phrase', jsonb_build_object('body', words(4097)))));
-- ... a match query is one bool clause per term, before duplicates merge
SELECT es_error('/limits/_search', jsonb_build_object('query', jsonb_build_object('match', jsonb_build_object('body', words(4097)))));
-- ... and so is a bool query's clause list
SELECT es_error('/limits/_search', jsonb_build_object('query', jsonb_build_object('bool', jsonb_build_object('should',
  (SELECT jsonb_agg(jsonb_build_object('term', jsonb_build_object('tag', 't' || i))) FROM generate_series(1, 4097) i)))));

-- a lower limit, set by a superuser: the leaves of nested queries add up
SET search_engine.max_clause_count = 3;
SELECT es_error('/limits/_search', '{"query": {"bool": {"must": [{"match": {"body": "w1 w2"}}, {"bool": {"filter": [{"term": {"tag": "a"}}, {"exists": {"field": "tag"}}]}}]}}}');
SELECT es_error('/limits/_search', '{"query": {"bool": {"must": [{"match": {"body": "w1 w2"}}, {"term": {"tag": "a"}}]}}}');
SELECT es_error('/limits/_count', '{"query": {"match_phrase": {"body": "w2 w3 w4 w5"}}}');
-- the typed functions raise SQLSTATE 54001 (statement_too_complex)
DO $$
DECLARE
  detail text;
BEGIN
  PERFORM search_engine.search('limits', '{"query": {"match": {"body": "w1 w2 w3 w4"}}}');
EXCEPTION WHEN statement_too_complex THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RAISE NOTICE '% % (%)', SQLSTATE, SQLERRM, detail;
END $$;
RESET search_engine.max_clause_count;
-- only a superuser may raise it
CREATE ROLE limits_reader IN ROLE search_engine_read;
SET ROLE limits_reader;
SET search_engine.max_clause_count = 100000;
RESET ROLE;

-- index.max_terms_count: a dynamic index setting, for terms queries
SELECT search_engine.put_settings('limits', '{"index": {"max_terms_count": 2}}');
SELECT body->'limits'->'settings'->'index'->'max_terms_count' FROM search_engine.request('GET', '/limits/_settings');
SELECT es_error('/limits/_search', '{"query": {"terms": {"tag": ["a", "b"]}}}');
SELECT es_error('/limits/_search', '{"query": {"terms": {"tag": ["a", "b", "c"]}}}');
SELECT es_error('/limits/_search', '{"query": {"terms": {"_id": ["1", "2", "3"]}}}');
SELECT es_error('/limits/_count', '{"query": {"terms": {"tag": ["a", "b", "c"]}}}');
SELECT status, body->'error'->>'reason' FROM search_engine.request('PUT', '/limits/_settings', '{"index": {"max_terms_count": 0}}');
SELECT search_engine.put_settings('limits', '{"index": {"max_terms_count": 65536}}');
SELECT body->'limits'->'settings'->'index' ? 'max_terms_count' FROM search_engine.request('GET', '/limits/_settings');

-- regexp queries, and index.max_regex_length (default 1000 characters)
SELECT jsonb_path_query_array(search_engine.search('limits', '{"query": {"regexp": {"body": "w[15]"}}, "sort": ["_doc"]}'), '$.hits.hits[*]._id');
SELECT jsonb_path_query_array(search_engine.search('limits', '{"query": {"regexp": {"tag": {"value": "[AB]", "case_insensitive": true}}}, "sort": ["_doc"]}'), '$.hits.hits[*]._id');
SELECT es_error('/limits/_search', jsonb_build_object('query', jsonb_build_object('regexp', jsonb_build_object('tag', repeat('a', 1000)))));
SELECT es_error('/limits/_search', jsonb_build_object('query', jsonb_build_object('regexp', jsonb_build_object('tag', repeat('a', 1001)))));
SELECT search_engine.put_settings('limits', '{"index": {"max_regex_length": 3}}');
SELECT es_error('/limits/_search', '{"query": {"regexp": {"tag": "a|b"}}}');
SELECT es_error('/limits/_search', '{"query": {"regexp": {"tag": "a|b|c"}}}');
SELECT es_error('/limits/_search', '{"query": {"regexp": {"tag": "(a"}}}');

-- "timeout": ES's time values; past it a shard answers what it collected
SELECT search_engine.search('limits', '{"timeout": "1m", "query": {"match": {"body": "w3"}}}') - 'took';
SELECT search_engine.search('limits', '{"timeout": "0ms", "query": {"match": {"body": "w3"}}}') - 'took';
SELECT es_error('/limits/_search', '{"timeout": "10"}');
SELECT es_error('/limits/_search', '{"timeout": "1.5s"}');
-- ... and the URL's "timeout", which overrides the body's (ES reads the
-- URL parameters after the body); read as ES reads a time value
CREATE FUNCTION timed(path text, body jsonb) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || coalesce(' ' || (r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason'),
       format(' timed_out %s, %s hits, total %s %s', r.body->'timed_out', jsonb_array_length(r.body->'hits'->'hits'),
              r.body->'hits'->'total'->'value', r.body->'hits'->'total'->>'relation'))
     FROM search_engine.request('POST', path, body::text) r $$;
SELECT p, b, timed(p, b::jsonb)
  FROM (VALUES ('/limits/_search?timeout=0ms', '{"query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=0', '{"query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=1m', '{"query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=-1', '{"query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=%201S%20', '{"query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=500micros', '{"query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=0ms', '{"timeout": "1m", "query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=1m', '{"timeout": "0ms", "query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=-1', '{"timeout": "0ms", "query": {"match": {"body": "w3"}}}'),
               ('/limits/_search?timeout=10', '{}'),
               ('/limits/_search?timeout=00', '{}'),
               ('/limits/_search?timeout=1.5s', '{}'),
               ('/limits/_search?timeout=-5s', '{}'),
               ('/limits/_search?timeout=s', '{}'),
               ('/limits/_search?timeout=1x', '{}'),
               ('/limits/_search?timeout=99999999999999999999ms', '{}'),
               ('/limits/_search?timeout=', '{}'),
               ('/limits/_search?timeout=1x', '{"timeout": "1.5s"}')) AS v(p, b);

DROP ROLE limits_reader;
SELECT search_engine.delete_index('limits');
