-- GET with version/version_type, mget refusing empty lists, and sorting
-- across indices whose field is mapped differently (issue 17): ES refuses
-- to merge a long sort with a double one unless numeric_type casts them.

SELECT status FROM search_engine.request('PUT', '/sv_long', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "long"}, "d": {"type": "date"}}}}');
SELECT status FROM search_engine.request('PUT', '/sv_double', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "double"}, "d": {"type": "date"}}}}');
SELECT status, body->'errors' AS errors FROM search_engine.request('POST', '/_bulk?refresh=true', E'{"index": {"_index": "sv_long", "_id": "l5"}}\n{"n": 5, "d": "2024-01-01T00:00:00.001Z"}\n{"index": {"_index": "sv_long", "_id": "l4"}}\n{"n": 4}\n{"index": {"_index": "sv_double", "_id": "d45"}}\n{"n": 4.5}\n{"index": {"_index": "sv_double", "_id": "dneg"}}\n{"n": -1.75}\n');
SELECT status FROM search_engine.request('PUT', '/sv_long/_doc/l5', '{"n": 5, "d": "2024-01-01T00:00:00.001Z"}');

-- without numeric_type: ES's merge error
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/sv_long,sv_double/_search', '{"sort": [{"n": "asc"}]}');
-- ... but only when both sides bring hits
SELECT status, jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids
  FROM search_engine.request('POST', '/sv_long,sv_double/_search', '{"query": {"range": {"n": {"gte": 4.9}}}, "sort": [{"n": "asc"}], "_source": false}');
-- numeric_type double: one order, values as doubles
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids,
       jsonb_path_query_array(body, '$.hits.hits[*].sort[0]') AS sort
  FROM search_engine.request('POST', '/sv_long,sv_double/_search', '{"sort": [{"n": {"order": "asc", "numeric_type": "double"}}], "_source": false}');
-- numeric_type long: doubles truncated, as ES casts them (4.5 ties with 4)
SELECT (SELECT jsonb_agg(h->'_id' ORDER BY h->>'_id') FROM jsonb_array_elements(body->'hits'->'hits') h) AS ids,
       jsonb_path_query_array(body, '$.hits.hits[*].sort[0]') AS sort
  FROM search_engine.request('POST', '/sv_long,sv_double/_search', '{"sort": [{"n": {"order": "desc", "numeric_type": "long"}}], "_source": false}');
-- search_after in the cast type
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids
  FROM search_engine.request('POST', '/sv_long,sv_double/_search', '{"sort": [{"n": {"order": "asc", "numeric_type": "double"}}], "search_after": [4.0], "_source": false}');
-- date_nanos on a date field: milliseconds as nanoseconds
SELECT jsonb_path_query_array(body, '$.hits.hits[*].sort[0]') AS sort
  FROM search_engine.request('POST', '/sv_long/_search', '{"query": {"exists": {"field": "d"}}, "sort": [{"d": {"numeric_type": "date_nanos"}}], "_source": false}');
-- refused: an unknown type, a non-date field as a date, a keyword
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/sv_long/_search', '{"sort": [{"n": {"numeric_type": "int"}}]}');
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/sv_long/_search', '{"sort": [{"n": {"numeric_type": "date"}}]}');
SELECT status FROM search_engine.request('PUT', '/sv_kw', '{"mappings": {"properties": {"k": {"type": "keyword"}}}}');
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/sv_kw/_search', '{"sort": [{"k": {"numeric_type": "long"}}]}');

-- GET with version: the current one answers, another is a 409; a
-- _source-only get checks it too; version_type must be one of ES's
SELECT status, body->'_version' AS version FROM search_engine.request('GET', '/sv_long/_doc/l5?version=2');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/sv_long/_doc/l5?version=1');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('GET', '/sv_long/_source/l5?version=7&version_type=external');
SELECT status, body FROM search_engine.request('GET', '/sv_long/_source/l5?version=2&version_type=external_gte');
SELECT status, body->'found' AS found FROM search_engine.request('GET', '/sv_long/_doc/nope?version=1');
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/sv_long/_doc/l5?version=2&version_type=force');
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/sv_long/_doc/l5?version=two');
-- mget: a doc's version conflict is that doc's error
SELECT jsonb_path_query_array(body, '$.docs[*].error.type') AS errors,
       jsonb_path_query_array(body, '$.docs[*].found') AS found
  FROM search_engine.request('POST', '/_mget', '{"docs": [{"_index": "sv_long", "_id": "l5", "version": 1}, {"_index": "sv_long", "_id": "l4", "version": 1, "version_type": "external"}]}');
-- mget refuses empty docs and ids, as ES does
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/_mget', '{"docs": []}');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/sv_long/_mget', '{"ids": []}');

SELECT status FROM search_engine.request('DELETE', '/sv_long,sv_double,sv_kw');
