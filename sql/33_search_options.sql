-- Search request options and _msearch (ES 8): rest_total_hits_as_int,
-- _source / _source_includes / _source_excludes URL parameters (they
-- replace the body's _source), version (URL and body), post_filter (hits
-- and total, not the query's scoring), terminate_after (per shard,
-- "terminated_early"), and _msearch's NDJSON with a response or an error
-- per search.
SELECT status FROM search_engine.request('PUT', '/opts', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "long"}, "g": {"type": "keyword"}, "t": {"type": "text"}}}}');
SELECT status FROM search_engine.request('POST', '/opts/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "d%s"}}\n{"n": %s, "g": "g%s", "t": "w%s x", "o": {"a": 1, "b": 2}}\n', i, i, i % 3, i % 2), '') FROM generate_series(1, 20) i));
SELECT status FROM search_engine.request('PUT', '/opts/_doc/d1?refresh=true', '{"n": 1, "g": "g1", "t": "w1 x", "o": {"a": 1, "b": 2}}');

-- rest_total_hits_as_int, _source_includes, version
SELECT status, body->'hits'->'total' AS total, body->'hits'->'hits'->0->'_source' AS source,
       body->'hits'->'hits'->0->'_version' AS version
  FROM search_engine.request('POST', '/opts/_search?rest_total_hits_as_int=true&_source_includes=o.a,n&version=true&size=1', '{"sort": ["n"], "_source": ["g"]}');
SELECT status, body->'hits'->'hits'->0->'_source' AS source
  FROM search_engine.request('POST', '/opts/_search?_source_excludes=o,t&size=1', '{"sort": ["n"]}');
SELECT status, body->'hits'->'hits'->0->'_source' AS source
  FROM search_engine.request('POST', '/opts/_search?_source=g,t&size=1', '{"sort": ["n"]}');
SELECT status, body->'hits'->'hits'->0 ? '_source' AS has_source
  FROM search_engine.request('POST', '/opts/_search?_source=false&size=1', '{"sort": ["n"]}');
SELECT status, body->'hits'->'hits'->0->'_version' AS version
  FROM search_engine.request('POST', '/opts/_search', '{"size": 1, "sort": ["n"], "version": true}');
SELECT status, body->'hits'->'hits'->0 ? '_version' AS has_version
  FROM search_engine.request('POST', '/opts/_search', '{"size": 1, "sort": ["n"]}');
SELECT status, body->'hits'->'total' AS total
  FROM search_engine.request('POST', '/opts/_search?rest_total_hits_as_int=true&size=0', '{"track_total_hits": false}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/opts/_search?rest_total_hits_as_int=true', '{"track_total_hits": 100}');

-- post_filter: hits and total filtered; scores are the query's
SELECT status, body->'hits'->'total' AS total, jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids
  FROM search_engine.request('POST', '/opts/_search', '{"post_filter": {"term": {"g": "g1"}}, "sort": ["n"], "_source": false, "size": 3}');
SELECT (SELECT body->'hits'->'hits'->0->'_score' FROM search_engine.request('POST', '/opts/_search',
          '{"query": {"match": {"t": "w1"}}, "post_filter": {"term": {"g": "g1"}}, "size": 1}'))
     = (SELECT body->'hits'->'hits'->0->'_score' FROM search_engine.request('POST', '/opts/_search',
          '{"query": {"match": {"t": "w1"}}, "size": 1}')) AS same_scores;
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/opts/_search', '{"post_filter": {"nope": {}}}');

-- terminate_after: each shard stops after that many hits
SELECT status, body->'terminated_early' AS terminated_early, body->'hits'->'total' AS total
  FROM search_engine.request('POST', '/opts/_search', '{"terminate_after": 3, "size": 0}');
SELECT status, body->'terminated_early' AS terminated_early, body->'hits'->'total' AS total,
       jsonb_array_length(body->'hits'->'hits') AS hits
  FROM search_engine.request('POST', '/opts/_search', '{"terminate_after": 2, "query": {"range": {"n": {"gte": 5}}}}');
SELECT status, body ? 'terminated_early' AS has_flag
  FROM search_engine.request('POST', '/opts/_search', '{"terminate_after": 100, "size": 0}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/opts/_search', '{"terminate_after": -1}');

-- _msearch: a response or an error per search, in order
SELECT status, jsonb_path_query_array(body, '$.responses[*].status') AS statuses,
       body->'responses'->0->'hits'->'total' AS first_total,
       body->'responses'->0->'hits'->'hits'->0->'_id' AS first_hit,
       body->'responses'->1->'error'->>'type' AS second_error,
       body->'responses'->2->'error'->>'type' AS third_error,
       body->'responses'->3->'hits'->'total' AS fourth_total
  FROM search_engine.request('POST', '/opts/_msearch?rest_total_hits_as_int=true',
       E'{}\n{"size": 1, "sort": ["n"], "_source": false}\n{"index": "nosuch"}\n{}\n{"index": ["opts"]}\n{"query": {"bogus": {}}}\n\n{"size": 0, "query": {"term": {"g": "g2"}}}\n');
SELECT status, jsonb_array_length(body->'responses') AS n, body->'responses'->0->'hits'->'total'->'value' AS total
  FROM search_engine.request('GET', '/_msearch', E'{"index": "opts", "preference": "_local"}\n{"size": 0}\n');
-- ES's errors: the whole request fails
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_msearch', E'{"foo": 1}\n{}\n');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/_msearch', E'{}\n{}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_msearch', E'{}\n');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/_msearch', E'{}\n{"query": \n');
SELECT status FROM search_engine.request('DELETE', '/opts');
