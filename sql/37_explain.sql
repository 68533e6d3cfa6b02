-- Lucene's explanation of scores (ES 8): explain: true in search hits,
-- GET/POST /{index}/_explain/{id}, and _validate/query.  Every
-- explanation's value is the hit's _score.
SELECT status FROM search_engine.request('PUT', '/ex', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"t": {"type": "text"}, "k": {"type": "keyword"}, "n": {"type": "long"}}}}');
SELECT status FROM search_engine.request('POST', '/ex/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"t": "hello world", "k": "a", "n": 1}\n{"index": {"_id": "2"}}\n{"t": "hello hello there world of hello", "k": "b", "n": 2}\n{"index": {"_id": "3"}}\n{"t": "goodbye world", "k": "a", "n": 3}\n{"index": {"_id": "4"}}\n{"t": "the quick brown fox jumps over the lazy dog", "k": "c", "n": 4}\n{"index": {"_id": "5"}}\n{"t": "hello", "k": "c", "n": 5}\n');

-- one term: the whole tree
SELECT jsonb_pretty(body->'hits'->'hits'->0->'_explanation') AS explanation, body->'hits'->'hits'->0->'_score' AS score
  FROM search_engine.request('POST', '/ex/_search', '{"explain": true, "query": {"term": {"k": "b"}}}');
SELECT jsonb_pretty(body->'hits'->'hits'->0->'_explanation') AS explanation
  FROM search_engine.request('POST', '/ex/_search', '{"explain": true, "query": {"match": {"t": {"query": "there", "boost": 2}}}}');

-- values equal _score for each hit, whatever the query
CREATE FUNCTION explained(q jsonb) RETURNS TABLE (hits int, all_equal bool, described text) LANGUAGE sql AS $$
  SELECT count(*)::int,
         bool_and((h->'_explanation'->>'value')::float4 = (h->>'_score')::float4),
         min(h->'_explanation'->>'description')
    FROM search_engine.request('POST', '/ex/_search', jsonb_build_object('explain', true, 'query', q)::text) r,
         jsonb_array_elements(r.body->'hits'->'hits') h
$$;
SELECT * FROM explained('{"match": {"t": "hello world"}}');
SELECT * FROM explained('{"match": {"t": {"query": "hello world fox", "operator": "or", "boost": 1.5}}}');
SELECT * FROM explained('{"bool": {"must": [{"match": {"t": "world"}}], "should": [{"term": {"k": "a"}}], "filter": [{"range": {"n": {"gte": 1}}}], "must_not": [{"term": {"k": "c"}}]}}');
SELECT * FROM explained('{"match_phrase": {"t": "hello world"}}');
SELECT * FROM explained('{"match_phrase": {"t": {"query": "hello world", "slop": 3}}}');
SELECT * FROM explained('{"dis_max": {"queries": [{"match": {"t": "hello"}}, {"match": {"t": "world"}}], "tie_breaker": 0.3}}');
SELECT * FROM explained('{"constant_score": {"filter": {"term": {"k": "a"}}, "boost": 3}}');
SELECT * FROM explained('{"function_score": {"query": {"match": {"t": "hello"}}, "field_value_factor": {"field": "n"}}}');
SELECT * FROM explained('{"match_all": {}}');
-- the sub-details multiply out: boost * idf * tf
SELECT bool_and(abs((d->>'value')::float8 - (SELECT exp(sum(ln((x->>'value')::float8))) FROM jsonb_array_elements(d->'details') x)) < 1e-6) AS products
  FROM search_engine.request('POST', '/ex/_search', '{"explain": true, "query": {"match": {"t": {"query": "hello world", "boost": 3}}}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h,
       jsonb_path_query(h->'_explanation', 'strict $.**.details[*] ? (@.description starts with "score(")') d;

-- the _explain API
SELECT status, body->>'_index' AS index, body->>'_id' AS id, body->'matched' AS matched,
       (body->'explanation'->>'value')::float4 = (SELECT (h->>'_score')::float4 FROM search_engine.request('POST', '/ex/_search', '{"query": {"match": {"t": "hello"}}}') s, jsonb_array_elements(s.body->'hits'->'hits') h WHERE h->>'_id' = '2') AS same_score
  FROM search_engine.request('GET', '/ex/_explain/2', '{"query": {"match": {"t": "hello"}}}');
SELECT status, body->'matched' AS matched, body->'explanation'->>'description' AS description, body->'explanation'->'value' AS value
  FROM search_engine.request('POST', '/ex/_explain/4', '{"query": {"match": {"t": "hello"}}}');
SELECT status, body->'matched' AS matched, body->'explanation'->>'description' AS description
  FROM search_engine.request('POST', '/ex/_explain/1', '{"query": {"bool": {"must": [{"match": {"t": "hello"}}], "must_not": [{"term": {"k": "a"}}]}}}');
SELECT status, body FROM search_engine.request('POST', '/ex/_explain/nope', '{"query": {"match_all": {}}}');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('POST', '/ex/_explain/1', '{"query": {"nope": {}}}');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('POST', '/missing/_explain/1', '{"query": {"match_all": {}}}');

-- _validate/query
SELECT status, body FROM search_engine.request('POST', '/ex/_validate/query', '{"query": {"match": {"t": "hello"}}}');
SELECT status, body->'valid' AS valid, body->'explanations' AS explanations
  FROM search_engine.request('GET', '/ex/_validate/query?explain=true', '{"query": {"bool": {"must": [{"match": {"t": "Hello World"}}], "filter": [{"term": {"k": "a"}}]}}}');
SELECT status, body FROM search_engine.request('POST', '/ex/_validate/query', '{"query": {"nope": {"t": "x"}}}');
SELECT status, body FROM search_engine.request('POST', '/ex/_validate/query?explain', '{"query": {"nope": {"t": "x"}}}');
SELECT status, body->'valid' AS valid, body->'explanations'->0->'valid' AS index_valid, body->'explanations'->0 ? 'error' AS has_error
  FROM search_engine.request('POST', '/ex/_validate/query?explain=true', '{"query": {"term": {"n": "not a number"}}}');
SELECT status, body->'valid' AS valid FROM search_engine.request('POST', '/_validate/query', '{"query": {"match_all": {}}}');
