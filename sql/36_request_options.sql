-- Request options of ES 8 (issue 17): refresh=wait_for and an empty
-- refresh= on every write, _source / _source_includes / _source_excludes
-- on get, mget and update, stored_fields, docvalue_fields and fields in
-- search hits, collapse, rescore, indices_boost, DELETE
-- _search/scroll/_all and search.max_keep_alive.

-- refresh=wait_for: acknowledged once a refresh made the write visible.
-- With refreshes disabled the write waits for one (ES waits forever).
SELECT status FROM search_engine.request('PUT', '/ro', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0, "refresh_interval": "-1"}, "mappings": {"properties": {"n": {"type": "long"}, "k": {"type": "keyword"}, "t": {"type": "text"}, "d": {"type": "date"}}}}');
SET statement_timeout = '400ms';
SELECT status FROM search_engine.request('PUT', '/ro/_doc/w1?refresh=wait_for', '{"n": 1}');
RESET statement_timeout;
-- the write is in, not visible to search yet: no refresh came (a realtime
-- get refreshes the shard, as ES's does)
SELECT body->'hits'->'total'->'value' AS visible FROM search_engine.request('POST', '/ro/_search', '{"query": {"ids": {"values": ["w1"]}}}');
SELECT body->'found' AS found FROM search_engine.request('GET', '/ro/_doc/w1');
-- past index.max_refresh_listeners (0 here) a wait_for forces the refresh
SELECT status FROM search_engine.request('PUT', '/ro/_settings', '{"index": {"max_refresh_listeners": 0}}');
SELECT body->'ro'->'settings'->'index'->'max_refresh_listeners' AS setting FROM search_engine.request('GET', '/ro/_settings');
SELECT status, body->>'result' AS result, body->'forced_refresh' AS forced
  FROM search_engine.request('PUT', '/ro/_doc/w2?refresh=wait_for', '{"n": 2}');
SELECT body->'hits'->'total'->'value' AS visible FROM search_engine.request('POST', '/ro/_search', '{"query": {"ids": {"values": ["w1", "w2"]}}}');
-- with scheduled refreshes the write waits for the next one, not forced
SELECT status FROM search_engine.request('PUT', '/ro/_settings', '{"index": {"max_refresh_listeners": 1000, "refresh_interval": "100ms"}}');
SELECT status, body->>'result' AS result, body ? 'forced_refresh' AS forced
  FROM search_engine.request('POST', '/ro/_doc/w3?refresh=wait_for', '{"n": 3}');
SELECT body->'hits'->'total'->'value' AS visible FROM search_engine.request('POST', '/ro/_search', '{"query": {"ids": {"values": ["w3"]}}}');
SELECT status, body->'errors' AS errors, body->'items'->0->'update'->>'result' AS result, body->'items'->1->'delete'->>'result' AS deleted
  FROM search_engine.request('POST', '/ro/_bulk?refresh=wait_for', E'{"update": {"_id": "w3"}}\n{"doc": {"n": 33}}\n{"delete": {"_id": "w2"}}\n');
SELECT body->'hits'->'total'->'value' AS n33 FROM search_engine.request('POST', '/ro/_search', '{"query": {"term": {"n": 33}}}');
SELECT status FROM search_engine.request('PUT', '/ro/_settings', '{"index": {"refresh_interval": "-1"}}');
-- an empty refresh= is refresh=true, on every write
SELECT status, body->'forced_refresh' AS forced FROM search_engine.request('PUT', '/ro/_create/e1?refresh=', '{"n": 4}');
SELECT status, body->'forced_refresh' AS forced FROM search_engine.request('POST', '/ro/_update/e1?refresh', '{"doc": {"n": 5}}');
SELECT body->'hits'->'total'->'value' AS n5 FROM search_engine.request('POST', '/ro/_search', '{"query": {"term": {"n": 5}}}');
SELECT status, body->'forced_refresh' AS forced FROM search_engine.request('DELETE', '/ro/_doc/e1?refresh=');
SELECT status, body->'errors' AS errors, body->'items'->0->'index'->'forced_refresh' AS forced
  FROM search_engine.request('POST', '/ro/_bulk?refresh=', E'{"index": {"_id": "b1"}}\n{"n": 6}\n');
SELECT search_engine.index_doc('ro', 's1', '{"n": 7}', refresh => 'wait_for')->>'result' AS sql_wait_for;
SELECT body->'hits'->'total'->'value' AS visible FROM search_engine.request('POST', '/ro/_search', '{"query": {"terms": {"n": [6, 7]}}}');
-- by-query: a boolean only (ES refuses wait_for there); empty is true
SELECT status, body->'deleted' AS deleted FROM search_engine.request('POST', '/ro/_delete_by_query?refresh', '{"query": {"term": {"n": 6}}}');
SELECT body->'hits'->'total'->'value' AS gone FROM search_engine.request('POST', '/ro/_search', '{"query": {"term": {"n": 6}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/ro/_update_by_query?refresh=wait_for', '{}');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('PUT', '/ro/_doc/x?refresh=soon', '{}');

-- _source, _source_includes, _source_excludes on get, mget and update
-- (the filtering search hits have)
SELECT status FROM search_engine.request('PUT', '/ro/_doc/g1?refresh=true', '{"n": 1, "k": "a", "o": {"x": 1, "y": {"z": 2}}, "t": "some text"}');
SELECT body->'_source' AS source FROM search_engine.request('GET', '/ro/_doc/g1?_source_includes=o.*,n');
SELECT body->'_source' AS source FROM search_engine.request('GET', '/ro/_doc/g1?_source_excludes=o.y,t');
SELECT body->'_source' AS source FROM search_engine.request('GET', '/ro/_doc/g1?_source=k,t&_source_excludes=t');
SELECT body ? '_source' AS has_source, body->'found' AS found FROM search_engine.request('GET', '/ro/_doc/g1?_source=false');
SELECT body AS source FROM search_engine.request('GET', '/ro/_source/g1?_source_includes=o.y');
SELECT jsonb_path_query_array(body, '$.docs[*]._source') AS sources
  FROM search_engine.request('POST', '/ro/_mget?_source_includes=n', '{"docs": [{"_id": "g1"}, {"_id": "g1", "_source": ["k"]}, {"_id": "g1", "_source": false}, {"_id": "g1", "_source": {"excludes": ["o", "t", "n"]}}]}');
SELECT jsonb_path_query_array(body, '$.docs[*]._source') AS sources
  FROM search_engine.request('POST', '/_mget?_source=false', '{"docs": [{"_index": "ro", "_id": "g1"}]}');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('POST', '/ro/_mget', '{"docs": [{"_id": "g1", "_source": 3}]}');
SELECT status, body->>'result' AS result, body->'get'->'found' AS found, body->'get'->'_source' AS source,
       (body->'get'->'_seq_no') = (body->'_seq_no') AS same_seq_no
  FROM search_engine.request('POST', '/ro/_update/g1?_source_includes=n,k', '{"doc": {"n": 2}}');
SELECT status, body->'get'->'_source' AS source
  FROM search_engine.request('POST', '/ro/_update/g1', '{"doc": {"n": 3}, "_source": {"excludes": ["o", "t"]}}');
SELECT status, body->'get'->'_source' AS source
  FROM search_engine.request('POST', '/ro/_update/g1?_source=true', '{"doc": {"t": "new"}}');
SELECT status, body ? 'get' AS has_get
  FROM search_engine.request('POST', '/ro/_update/g1?_source=false', '{"doc": {"n": 4}}');

-- docvalue_fields (doc values, with a date format), fields (from _source
-- through the mapping: typed, dates formatted, multi-fields, wildcards,
-- include_unmapped) and stored_fields (nothing is stored apart from
-- _source: they turn _source off; _none_ drops _id too)
SELECT status FROM search_engine.request('PUT', '/rf', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "long"}, "f": {"type": "double"}, "k": {"type": "keyword"}, "t": {"type": "text", "fields": {"raw": {"type": "keyword"}}}, "d": {"type": "date"}, "d2": {"type": "date", "format": "yyyy/MM/dd"}, "b": {"type": "boolean"}, "o": {"properties": {"x": {"type": "integer"}, "y": {"type": "keyword"}}}}}}');
SELECT status FROM search_engine.request('PUT', '/rf/_doc/1?refresh=true', '{"n": "7", "f": 1.5, "k": ["b", "a"], "t": "Hello World", "d": 1420070400000, "d2": "2015/01/02", "b": "true", "o": [{"x": 1, "y": "p"}, {"x": "2"}], "u": {"v": 9}}');
SELECT body->'hits'->'hits'->0->'fields' AS fields, body->'hits'->'hits'->0 ? '_source' AS has_source
  FROM search_engine.request('POST', '/rf/_search', '{"docvalue_fields": ["n", "f", "k", "b", "o.*", {"field": "d", "format": "yyyy-MM-dd"}, "d2"], "_source": false}');
SELECT body->'hits'->'hits'->0->'fields' AS fields
  FROM search_engine.request('POST', '/rf/_search', '{"fields": ["n", "k", "t*", "b", "o.x", {"field": "d", "format": "epoch_millis"}, "d2"], "_source": ["n"]}');
SELECT body->'hits'->'hits'->0->'fields' AS fields
  FROM search_engine.request('POST', '/rf/_search', '{"fields": ["d", {"field": "u.*", "include_unmapped": true}, "nothing"], "_source": false}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/rf/_search', '{"docvalue_fields": ["t"]}');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/rf/_search', '{"docvalue_fields": [{"field": "n", "size": 1}]}');
SELECT body->'hits'->'hits'->0 ? '_source' AS has_source, body->'hits'->'hits'->0 ? '_id' AS has_id
  FROM search_engine.request('POST', '/rf/_search', '{"stored_fields": ["n"]}');
SELECT body->'hits'->'hits'->0 ? '_source' AS has_source
  FROM search_engine.request('POST', '/rf/_search', '{"stored_fields": ["n"], "_source": true}');
SELECT body->'hits'->'hits'->0 ? '_source' AS has_source, body->'hits'->'hits'->0 ? '_id' AS has_id
  FROM search_engine.request('POST', '/rf/_search', '{"stored_fields": "_none_"}');
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/rf/_search', '{"stored_fields": "_none_", "_source": true}');

-- rescore (query rescorer): the window of each shard's top is rescored,
-- query_weight * score combined with rescore_query_weight * the rescore
-- query's score (score_mode), the rest scaled by query_weight
SELECT status FROM search_engine.request('PUT', '/rs', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"t": {"type": "text"}, "k": {"type": "keyword"}}}}');
SELECT status FROM search_engine.request('POST', '/rs/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"t": "apple apple apple", "k": "x"}\n{"index": {"_id": "2"}}\n{"t": "apple pie", "k": "y"}\n{"index": {"_id": "3"}}\n{"t": "apple tart with a long description of it", "k": "y"}\n');
CREATE FUNCTION scores(body text) RETURNS TABLE (id text, score float4) LANGUAGE sql AS $$
  SELECT h->>'_id', (h->>'_score')::float4 FROM search_engine.request('POST', '/rs/_search', body) r,
         jsonb_array_elements(r.body->'hits'->'hits') h
$$;
CREATE TEMP TABLE plain AS SELECT * FROM scores('{"query": {"match": {"t": "apple"}}}');
CREATE TEMP TABLE bonus AS SELECT * FROM scores('{"query": {"term": {"k": "y"}}}');
SELECT id FROM plain;
SELECT id, s.score = (p.score * 0.5::float4 + coalesce(b.score * 2::float4, 0)) AS total_ok
  FROM scores('{"query": {"match": {"t": "apple"}}, "rescore": {"window_size": 10, "query": {"rescore_query": {"term": {"k": "y"}}, "query_weight": 0.5, "rescore_query_weight": 2}}}') s
  JOIN plain p USING (id) LEFT JOIN bonus b USING (id) ORDER BY id;
SELECT id, s.score = (CASE WHEN b.score IS NULL THEN p.score ELSE p.score * b.score END) AS multiply_ok
  FROM scores('{"query": {"match": {"t": "apple"}}, "rescore": {"query": {"rescore_query": {"term": {"k": "y"}}, "score_mode": "multiply"}}}') s
  JOIN plain p USING (id) LEFT JOIN bonus b USING (id) ORDER BY id;
-- a window of 1: only the top doc is rescored, the others only scaled
SELECT id, s.score = p.score * 3::float4 AS scaled
  FROM scores('{"query": {"match": {"t": "apple"}}, "rescore": {"window_size": 1, "query": {"rescore_query": {"match_all": {}}, "query_weight": 3, "rescore_query_weight": 100}}}') s
  JOIN plain p USING (id) ORDER BY id;
SELECT body->'hits'->'max_score' = body->'hits'->'hits'->0->'_score' AS max_is_top
  FROM search_engine.request('POST', '/rs/_search', '{"query": {"match": {"t": "apple"}}, "rescore": [{"query": {"rescore_query": {"term": {"k": "x"}}, "score_mode": "min"}}, {"query": {"rescore_query": {"match": {"t": "pie"}}, "score_mode": "max"}}]}');
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/rs/_search', '{"sort": ["k"], "rescore": {"query": {"rescore_query": {"match_all": {}}}}}');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/rs/_search', '{"rescore": {"window_size": 20000, "query": {"rescore_query": {"match_all": {}}}}}');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/rs/_search', '{"rescore": {"query": {"rescore_query": {"match_all": {}}, "score_mode": "sideways"}}}');

-- indices_boost: the scores of an index's docs multiplied (first match wins)
SELECT status FROM search_engine.request('PUT', '/rs2', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"t": {"type": "text"}, "k": {"type": "keyword"}}}}');
SELECT status FROM search_engine.request('POST', '/rs2/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"t": "apple apple apple", "k": "x"}\n');
SELECT h->>'_index' AS index, (h->>'_score')::float4 AS score
  FROM search_engine.request('POST', '/rs,rs2/_search', '{"query": {"ids": {"values": ["1"]}}, "indices_boost": [{"rs2": 3}, {"rs*": 0.5}]}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;
SELECT (h->>'_score')::float4 = 2::float4 * (SELECT (x->>'_score')::float4 FROM search_engine.request('POST', '/rs2/_search', '{"query": {"match": {"t": "apple"}}}') y, jsonb_array_elements(y.body->'hits'->'hits') x) AS boosted,
       (h->'_explanation'->>'value')::float4 = (h->>'_score')::float4 AS explained
  FROM search_engine.request('POST', '/rs2/_search', '{"query": {"match": {"t": "apple"}}, "indices_boost": {"rs2": 2}, "explain": true}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;

-- DELETE _search/scroll/_all frees every scroll (not points in time);
-- search.max_keep_alive bounds keep_alive and scroll
CREATE TEMP TABLE scrolls AS
  SELECT body->>'_scroll_id' AS id FROM search_engine.request('POST', '/rs/_search?scroll=1m&size=1', '{}')
  UNION ALL
  SELECT body->>'_scroll_id' FROM search_engine.request('POST', '/rf/_search?scroll=1m&size=1', '{}');
CREATE TEMP TABLE pits AS SELECT body->>'id' AS id FROM search_engine.request('POST', '/rs/_pit?keep_alive=1m');
-- (other tests' scrolls may still be open: at least these three)
SELECT status, body->'succeeded' AS succeeded, (body->>'num_freed')::int >= 3 AS freed_ours
  FROM search_engine.request('DELETE', '/_search/scroll/_all');
SELECT s.status, s.body->'error'->>'type' AS type
  FROM scrolls, search_engine.request('POST', '/_search/scroll', jsonb_build_object('scroll', '1m', 'scroll_id', scrolls.id)::text) s;
SELECT s.status, jsonb_array_length(s.body->'hits'->'hits') AS hits
  FROM pits, search_engine.request('POST', '/_search', jsonb_build_object('size', 1, 'pit', jsonb_build_object('id', pits.id))::text) s;
SELECT status, body FROM search_engine.request('DELETE', '/_search/scroll', '{"scroll_id": "_all"}');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/rs/_search?scroll=25h', '{}');
SELECT status FROM search_engine.request('PUT', '/_cluster/settings', '{"persistent": {"search.max_keep_alive": "2d"}}');
SELECT status, body ? '_scroll_id' AS has_scroll FROM search_engine.request('POST', '/rs/_search?scroll=25h', '{}');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/rs/_pit?keep_alive=3d');
SELECT status FROM search_engine.request('PUT', '/_cluster/settings', '{"persistent": {"search.max_keep_alive": null}}');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/rs/_pit?keep_alive=25h');
SELECT status FROM search_engine.request('DELETE', '/_search/scroll/_all');
SELECT status FROM search_engine.request('DELETE', '/_pit', jsonb_build_object('id', (SELECT id FROM pits))::text);
