-- Filtered aliases (issue 17): a point in time opened through them applies
-- their filters on every search of it; a foreign table on one applies its
-- filter to scans, counts and aggregates and writes by ES's write-index
-- rules; search routing resolved per index; require_alias on writes.
SET client_min_messages = warning;
CREATE OR REPLACE FUNCTION r56(m text, p text, b text DEFAULT NULL) RETURNS TABLE(status int, body jsonb)
LANGUAGE sql AS $$ SELECT status, body::jsonb FROM search_engine.request(m, p, b) $$;

SELECT status FROM r56('PUT', '/p56-a', '{"settings":{"number_of_shards":3},"mappings":{"properties":{"k":{"type":"keyword"},"n":{"type":"long"}}}}');
SELECT status FROM r56('PUT', '/p56-b', '{"settings":{"number_of_shards":3},"mappings":{"properties":{"k":{"type":"keyword"},"n":{"type":"long"}}}}');
SELECT (search_engine.bulk($$
{"index": {"_index": "p56-a", "_id": "1", "routing": "a"}}
{"k": "red", "n": 1}
{"index": {"_index": "p56-a", "_id": "2", "routing": "e"}}
{"k": "blue", "n": 2}
{"index": {"_index": "p56-a", "_id": "3", "routing": "a"}}
{"k": "red", "n": 3}
{"index": {"_index": "p56-b", "_id": "4", "routing": "a"}}
{"k": "red", "n": 4}
{"index": {"_index": "p56-b", "_id": "5", "routing": "e"}}
{"k": "blue", "n": 5}
{"index": {"_index": "p56-b", "_id": "6", "routing": "e"}}
{"k": "blue", "n": 6}
$$, refresh => 'true')::jsonb->>'errors') AS errors;
SELECT status FROM r56('POST', '/_aliases', $${"actions":[
  {"add":{"index":"p56-a","alias":"p56-red","filter":{"term":{"k":"red"}}}},
  {"add":{"index":"p56-b","alias":"p56-blue","filter":{"term":{"k":"blue"}}}},
  {"add":{"index":"p56-a","alias":"p56-rt","search_routing":"a"}},
  {"add":{"index":"p56-b","alias":"p56-rt","search_routing":"e"}},
  {"add":{"index":"p56-a","alias":"p56-w"}},
  {"add":{"index":"p56-a","alias":"p56-ro","is_write_index":false}},
  {"add":{"index":"p56-a","alias":"p56-ir","index_routing":"y"}}]}$$);

-- a point in time through a filtered alias: every search of it is filtered
CREATE TABLE p56_pits (name text PRIMARY KEY, id text);
INSERT INTO p56_pits SELECT 'red', body->>'id' FROM r56('POST', '/p56-red/_pit?keep_alive=5m');
INSERT INTO p56_pits SELECT 'both', body->>'id' FROM r56('POST', '/p56-red,p56-blue/_pit?keep_alive=5m');
INSERT INTO p56_pits SELECT 'plain', body->>'id' FROM r56('POST', '/p56-a/_pit?keep_alive=5m');
SELECT name, body->'hits'->'total'->'value' AS total,
       (SELECT jsonb_agg(h->'_id' ORDER BY h->>'_id') FROM jsonb_array_elements(body->'hits'->'hits') h) AS ids,
       (SELECT bool_and((h->>'_score')::float = 1) FROM jsonb_array_elements(body->'hits'->'hits') h) AS score_one
  FROM p56_pits, LATERAL r56('POST', '/_search', jsonb_build_object('pit', jsonb_build_object('id', id))::text)
 ORDER BY name;
-- with a query and aggregations: the filter stays beside them
SELECT body->'hits'->'total'->'value' AS total, body->'aggregations'->'s'->'value' AS sum_n
  FROM p56_pits, LATERAL r56('POST', '/_search', jsonb_build_object('pit', jsonb_build_object('id', id),
       'query', '{"range":{"n":{"gte":2}}}'::jsonb, 'aggs', '{"s":{"sum":{"field":"n"}}}'::jsonb)::text)
 WHERE name = 'both';
-- and through _msearch (a header without index)
SELECT body->'responses'->0->'hits'->'total'->'value' AS msearch_red
  FROM p56_pits, LATERAL r56('POST', '/_msearch',
       '{}' || chr(10) || jsonb_build_object('pit', jsonb_build_object('id', id))::text || chr(10))
 WHERE name = 'red';
-- the alias changed later: the point in time keeps the filter it was opened with
SELECT status FROM r56('POST', '/_aliases', '{"actions":[{"remove":{"index":"p56-a","alias":"p56-red"}}]}');
SELECT body->'hits'->'total'->'value' AS still_red
  FROM p56_pits, LATERAL r56('POST', '/_search', jsonb_build_object('pit', jsonb_build_object('id', id))::text)
 WHERE name = 'red';
SELECT status FROM r56('PUT', '/p56-a/_alias/p56-red', '{"filter":{"term":{"k":"red"}}}');
SELECT bool_and((SELECT status FROM r56('DELETE', '/_pit', jsonb_build_object('id', id)::text)) = 200) AS closed FROM p56_pits;

-- search routing per index: p56-a searched with a (shard 0), p56-b with e (shard 1)
SELECT body->'_shards'->'total' AS shards, body->'hits'->'total'->'value' AS total,
       (SELECT jsonb_agg(h->'_id' ORDER BY h->>'_id') FROM jsonb_array_elements(body->'hits'->'hits') h) AS ids
  FROM r56('POST', '/p56-rt/_search');
-- with a URL routing: the values both name; none in common, every shard (ES)
SELECT body->'_shards'->'total' AS shards, body->'hits'->'total'->'value' AS total
  FROM r56('POST', '/p56-rt/_search?routing=a');
-- a point in time and a scroll pin the routed shards only
SELECT body->'_shards'->'total' AS pit_shards FROM r56('POST', '/p56-rt/_pit?keep_alive=1m');
SELECT body->'_shards'->'total' AS scroll_shards, body->'hits'->'total'->'value' AS total
  FROM r56('POST', '/p56-rt/_search?scroll=1m');
SELECT status FROM r56('DELETE', '/_search/scroll/_all');

-- require_alias: the target must be an alias
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM r56('PUT', '/p56-a/_doc/9?require_alias=true', '{"k":"x"}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM r56('POST', '/p56-new/_doc?require_alias=true', '{"k":"x"}');
SELECT status, body->'error'->>'type' AS type
  FROM r56('POST', '/p56-a/_update/1?require_alias=true', '{"doc":{"n":10}}');
SELECT status, body->>'_index' AS index FROM r56('PUT', '/p56-w/_doc/9?require_alias=true', '{"k":"x","n":9}');
SELECT status, body->>'result' AS result FROM r56('DELETE', '/p56-a/_doc/9?require_alias=true');
SELECT status FROM r56('HEAD', '/p56-new');
SELECT body->'errors' AS errors,
       (SELECT jsonb_agg(jsonb_build_array(i->'index'->'status', i->'index'->'error'->>'reason')) FROM jsonb_array_elements(body->'items') i) AS items
  FROM r56('POST', '/_bulk?require_alias=true', $${"index":{"_index":"p56-w","_id":"10"}}
{"k":"x"}
{"index":{"_index":"p56-a","_id":"11"}}
{"k":"x"}
{"index":{"_index":"p56-a","_id":"12","require_alias":false}}
{"k":"x"}
{"index":{"_index":"p56-b","_id":"13"}}
{"k":"x"}
$$);
SELECT (SELECT jsonb_agg(i->'index'->'status') FROM jsonb_array_elements(body->'items') i) AS line_flag
  FROM r56('POST', '/_bulk', $${"index":{"_index":"p56-b","_id":"14","require_alias":true}}
{"k":"x"}
$$);
SELECT status FROM r56('POST', '/_bulk?refresh=true', $${"delete":{"_index":"p56-a","_id":"10"}}
{"delete":{"_index":"p56-a","_id":"12"}}
$$);

-- a foreign table on a filtered alias: its documents only
CREATE SERVER p56_se FOREIGN DATA WRAPPER search_engine;
CREATE FOREIGN TABLE p56_red (_id text, k text, n bigint, _routing text, _score real)
  SERVER p56_se OPTIONS (index 'p56-red');
SELECT _id, k, n FROM p56_red ORDER BY _id;
SELECT count(*), min(n), max(n), sum(n) FROM p56_red;
SELECT count(*) FROM p56_red WHERE n >= 2;
SELECT k, count(*) FROM p56_red GROUP BY k;
SELECT _id, _score FROM p56_red ORDER BY _score DESC, _id LIMIT 1;
EXPLAIN (COSTS OFF, VERBOSE) SELECT count(*) FROM p56_red WHERE n >= 2;
-- writes through it: the alias's write index (the one index)
INSERT INTO p56_red (_id, k, n) VALUES ('20', 'red', 20), ('21', 'blue', 21);
SELECT _id, n FROM p56_red WHERE n >= 20 ORDER BY _id;
SELECT search_engine.count('p56-a') AS in_index;
UPDATE p56_red SET n = 30 WHERE _id = '20';
DELETE FROM p56_red WHERE n >= 20;
SELECT search_engine.count('p56-a') AS blue_kept;
-- is_write_index false: ES's refusal; index_routing: the alias's routing
CREATE FOREIGN TABLE p56_ro (_id text, k text) SERVER p56_se OPTIONS (index 'p56-ro');
SELECT count(*) FROM p56_ro;
INSERT INTO p56_ro VALUES ('22', 'red');
CREATE FOREIGN TABLE p56_ir (_id text, k text, _routing text) SERVER p56_se OPTIONS (index 'p56-ir');
INSERT INTO p56_ir (_id, k) VALUES ('23', 'red');
SELECT _id, _routing FROM p56_ir WHERE _id = '23';
INSERT INTO p56_ir (_id, k, _routing) VALUES ('24', 'red', 'z');
DELETE FROM p56_ir WHERE _id = '23';

DROP FOREIGN TABLE p56_red, p56_ro, p56_ir;
DROP SERVER p56_se;
DROP TABLE p56_pits;
SELECT status FROM r56('DELETE', '/p56-a');
SELECT status FROM r56('DELETE', '/p56-b');
DROP FUNCTION r56(text, text, text);
