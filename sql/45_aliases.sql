-- Index aliases (issues 17 and 18): the aliases API, aliases in the create
-- body and in GET /{index}, resolution in reads and writes, write index,
-- filters and routing, name collisions, atomic _aliases, privileges.
SET client_min_messages = warning;
CREATE FUNCTION req(m text, p text, b text DEFAULT NULL) RETURNS TABLE(status int, body jsonb)
LANGUAGE sql AS $$ SELECT status, mask(body::jsonb) FROM search_engine.request(m, p, b) $$;

SELECT status FROM req('PUT', '/al-a', '{"settings":{"number_of_shards":2}}');
SELECT status FROM req('PUT', '/al-b');
SELECT (search_engine.bulk($$
{"index": {"_index": "al-a", "_id": "1"}}
{"k": "red", "n": 1}
{"index": {"_index": "al-a", "_id": "2"}}
{"k": "blue", "n": 2}
{"index": {"_index": "al-b", "_id": "3"}}
{"k": "red", "n": 3}
$$, refresh => 'true')::jsonb->>'errors') AS errors;

-- none yet: GET answers an empty object per index
SELECT * FROM req('GET', '/al-a/_alias');
SELECT * FROM req('GET', '/_alias/nothing');
SELECT status FROM req('HEAD', '/_alias/nothing');

-- PUT /{index}/_alias/{name}; then it shows everywhere
SELECT * FROM req('PUT', '/al-a/_alias/al-one');
SELECT * FROM req('POST', '/al-*/_aliases/al-both');
SELECT * FROM req('GET', '/_alias/al-*');
SELECT * FROM req('GET', '/al-b/_alias');
SELECT body->'al-a'->'aliases' FROM req('GET', '/al-a');
SELECT status FROM req('HEAD', '/_alias/al-both');
SELECT status FROM req('HEAD', '/al-a/_alias/al-one');
-- one found, one missing: ES's 404 with what was found
SELECT * FROM req('GET', '/_alias/al-one,al-none');

-- reads through an alias: search, count, get, mget, _refresh, _stats
SELECT (search_engine.search('al-both', '{"sort":[{"n":"asc"}]}')::jsonb)->'hits'->'total' AS total,
       (SELECT jsonb_agg(h->>'_index') FROM jsonb_array_elements(search_engine.search('al-both', '{"sort":[{"n":"asc"}]}')::jsonb->'hits'->'hits') h) AS indices;
SELECT search_engine.count('al-one') AS one, search_engine.count('al-b*') AS wildcard_over_alias;
SELECT status, body->>'_index' AS index, body->>'found' AS found FROM req('GET', '/al-one/_doc/2');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM req('GET', '/al-both/_doc/1');
SELECT body->'docs'->0->>'_index' AS d0, body->'docs'->1->'error'->>'type' AS d1
  FROM req('POST', '/_mget', '{"docs":[{"_index":"al-one","_id":"1"},{"_index":"al-both","_id":"1"}]}');
SELECT status, body->'_shards'->>'total' AS shards FROM req('POST', '/al-both/_refresh');
SELECT jsonb_object_keys(body->'indices') AS stats_indices FROM req('GET', '/al-both/_stats') ORDER BY 1;

-- writes: a single index, or the write index
SELECT status, body->>'_index' AS index, body->>'result' AS result FROM req('PUT', '/al-one/_doc/10?refresh=true', '{"k":"green","n":10}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM req('PUT', '/al-both/_doc/11', '{"n":11}');
SELECT (search_engine.bulk($$
{"index": {"_index": "al-both", "_id": "12"}}
{"n": 12}
$$)::jsonb)->'items'->0->'index'->'error'->>'type' AS bulk_item_error;
SELECT * FROM req('POST', '/_aliases', '{"actions":[{"add":{"index":"al-b","alias":"al-both","is_write_index":true}}]}');
SELECT status, body->>'_index' AS index FROM req('PUT', '/al-both/_doc/11?refresh=true', '{"k":"red","n":11}');
SELECT status, body->>'_index' AS index FROM req('POST', '/al-both/_update/11?refresh=true', '{"doc":{"n":111}}');
SELECT (search_engine.bulk($$
{"index": {"_index": "al-both", "_id": "12"}}
{"n": 12}
{"delete": {"_index": "al-both", "_id": "12"}}
$$, refresh => 'true')::jsonb)->'items' @? '$[*].*.error' AS any_error;
-- two write indices: refused
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM req('PUT', '/al-a/_alias/al-both', '{"is_write_index":true}');
-- is_write_index false on the only index: no write index
SELECT status FROM req('PUT', '/al-b/_alias/al-ro', '{"is_write_index":false}');
SELECT status, body->'error'->>'reason' AS reason FROM req('PUT', '/al-ro/_doc/1', '{}');

-- filter and routing
SELECT * FROM req('PUT', '/al-*/_alias/al-red', '{"filter":{"term":{"k":"red"}}}');
SELECT body->'al-a'->'aliases' AS a FROM req('GET', '/al-a/_alias/al-red');
SELECT (search_engine.search('al-red', '{"sort":[{"n":"asc"}]}')::jsonb)->'hits'->'hits' @? '$[*] ? (@._source.k != "red")' AS non_red,
       (search_engine.search('al-red')::jsonb)->'hits'->'hits'->0->>'_score' AS score;
SELECT search_engine.count('al-red') AS red_count,
       search_engine.count('al-red', '{"query":{"range":{"n":{"gte":3}}}}') AS red_and_big;
-- a scroll through a filtered alias: every page applies the filter
WITH RECURSIVE pages(body, k) AS (
  SELECT body, 1 FROM req('POST', '/al-red/_search?scroll=1m&size=1', '{"sort":["n"]}')
  UNION ALL
  SELECT r.body, k + 1 FROM pages,
         LATERAL req('POST', '/_search/scroll', jsonb_build_object('scroll', '1m', 'scroll_id', pages.body->>'_scroll_id')::text) r
   WHERE jsonb_array_length(pages.body->'hits'->'hits') > 0 AND k < 20)
SELECT count(*) AS scrolled, count(*) FILTER (WHERE h->'_source'->>'k' = 'red') AS red,
       search_engine.count('al-red') AS red_count
  FROM pages, LATERAL jsonb_array_elements(pages.body->'hits'->'hits') h;
-- a bad filter is refused where it is given
SELECT status, body->'error'->>'type' AS type FROM req('PUT', '/al-a/_alias/al-bad', '{"filter":{"nope":{}}}');
-- reached directly and through a filtered alias: no filter there (ES);
-- al-a all 4, al-b its red 2
SELECT search_engine.count('al-a,al-red') AS direct_wins;
-- the filter of an alias applies on its own indices only
SELECT status FROM req('PUT', '/al-b/_alias/al-mixed', '{"filter":{"term":{"k":"red"}}}');
SELECT status FROM req('PUT', '/al-a/_alias/al-mixed', '{"filter":{"term":{"k":"blue"}}}');
SELECT (SELECT jsonb_agg(jsonb_build_array(h->>'_index', h->'_source'->>'k') ORDER BY h->>'_id')
          FROM jsonb_array_elements(body->'hits'->'hits') h) AS hits
  FROM req('POST', '/al-mixed/_search', '{"query":{"exists":{"field":"n"}}}');
SELECT search_engine.count('al-a,al-b', '{"query":{"term":{"_index":"al-b"}}}') AS index_term;
-- index routing: the write's routing is the alias's
SELECT status FROM req('PUT', '/al-*/_alias/al-rt', '{"index_routing":"7","search_routing":"7"}');
SELECT * FROM req('DELETE', '/al-b/_alias/al-rt');
SELECT status, body->>'_index' AS index FROM req('PUT', '/al-rt/_doc/r1?refresh=true', '{"n":70}');
SELECT status, body->'error'->>'reason' AS reason FROM req('PUT', '/al-rt/_doc/r2?routing=8', '{"n":80}');
SELECT status, body->>'found' AS found FROM req('GET', '/al-a/_doc/r1?routing=7');
SELECT status, body->>'found' AS found, body->>'_routing' AS routing FROM req('GET', '/al-rt/_doc/r1');
SELECT search_engine.count('al-rt', '{"query":{"ids":{"values":["r1"]}}}') AS searched_with_routing;
SELECT status FROM req('PUT', '/al-a/_alias/al-rt2', '{"search_routing":"99,7"}');
SELECT search_engine.count('al-rt2', '{"query":{"ids":{"values":["r1"]}}}') AS routing_list,
       (SELECT body->'_shards'->>'total' FROM req('POST', '/al-rt/_search')) AS one_value_shards,
       (SELECT body->'_shards'->>'total' FROM req('POST', '/al-a/_search?routing=7,7')) AS same_twice_shards;

-- update and delete by query through a filtered alias touch its documents only
SELECT status, body->>'updated' AS updated FROM req('POST', '/al-red/_update_by_query?refresh=true', '{"script":{"source":"ctx._source.touched = true"}}');
SELECT search_engine.count('al-a,al-b', '{"query":{"exists":{"field":"touched"}}}') AS touched;

-- names: an alias like an index, an index like an alias, bad names
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM req('PUT', '/al-a/_alias/al-b');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM req('PUT', '/al-one');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM req('PUT', '/al-a/_alias/_bad');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM req('DELETE', '/al-one');
SELECT status FROM req('PUT', '/al-a/_alias/Al-Upper');

-- _aliases is atomic: a failing action leaves everything as it was
SELECT status, body->'error'->>'type' AS type FROM req('POST', '/_aliases',
  '{"actions":[{"add":{"index":"al-a","alias":"al-new"}},{"remove":{"index":"al-a","alias":"al-none"}}]}');
SELECT status FROM req('HEAD', '/_alias/al-new');
SELECT status, body->'error'->>'type' AS type FROM req('POST', '/_aliases',
  '{"actions":[{"remove":{"index":"al-a","alias":"al-one"}},{"add":{"index":"al-missing","alias":"al-x"}}]}');
SELECT status FROM req('HEAD', '/_alias/al-one');
-- swap an alias in one request
SELECT * FROM req('POST', '/_aliases',
  '{"actions":[{"remove":{"index":"al-a","alias":"al-one"}},{"add":{"index":"al-b","alias":"al-one"}}]}');
SELECT jsonb_object_keys(body) FROM req('GET', '/_alias/al-one');
-- remove with wildcards, must_exist false
SELECT * FROM req('POST', '/_aliases', '{"actions":[{"remove":{"indices":["al-a","al-b"],"aliases":["al-m*"]}}]}');
SELECT * FROM req('POST', '/_aliases', '{"actions":[{"remove":{"index":"al-a","alias":"al-gone","must_exist":false}}]}');
SELECT * FROM req('DELETE', '/al-a/_alias/al-gone');
SELECT * FROM req('POST', '/_aliases', '{"actions":[]}');

-- hidden aliases: not matched by wildcards, named they resolve
SELECT status FROM req('PUT', '/al-b/_alias/al-hid', '{"is_hidden":true}');
SELECT status, body->'error'->>'type' AS type FROM req('PUT', '/al-a/_alias/al-hid');
SELECT search_engine.count('al-hid') AS named, search_engine.count('al-h*') AS wildcard;

-- aliases in the create body; _cat/aliases
SELECT status FROM req('PUT', '/al-c', '{"aliases":{"al-c1":{},"al-c2":{"filter":{"term":{"k":"x"}},"index_routing":"1","is_write_index":true}}}');
SELECT * FROM req('GET', '/al-c/_alias');
SELECT status, body->'error'->>'type' AS type FROM req('PUT', '/al-d', '{"aliases":{"al-a":{}}}');
SELECT status, body->'error'->>'type' AS type FROM req('PUT', '/al-d', '{"aliases":{"al-dd":{"filter":{"bogus":1}}}}');
SELECT status FROM req('HEAD', '/al-d');
SELECT body FROM search_engine.request('GET', '/_cat/aliases/al-c*?v&s=alias');
SELECT mask(body::jsonb) FROM search_engine.request('GET', '/_cat/aliases/al-c*?format=json&s=alias');
SELECT * FROM search_engine.aliases WHERE index = 'al-c' ORDER BY alias;

-- deleting an index drops it from its aliases
SELECT status FROM req('DELETE', '/al-c');
SELECT status FROM req('HEAD', '/_alias/al-c1');

-- remove_index removes the index itself
SELECT status FROM req('PUT', '/al-e');
SELECT * FROM req('POST', '/_aliases', '{"actions":[{"add":{"index":"al-a","alias":"al-e2"}},{"remove_index":{"index":"al-e"}}]}');
SELECT status FROM req('HEAD', '/al-e');
SELECT status FROM req('HEAD', '/_alias/al-e2');

-- the FDW's index option may name an alias of one index (reads, and writes
-- through its write index); a filtered alias shows its documents (pg_regress 56)
CREATE SERVER al_se FOREIGN DATA WRAPPER search_engine;
CREATE FOREIGN TABLE al_one_ft (_id text, k text, n bigint, _index text) SERVER al_se
  OPTIONS (index 'al-one', refresh 'true');
SELECT _id, _index, n FROM al_one_ft ORDER BY _id;
INSERT INTO al_one_ft (_id, k, n) VALUES ('f1', 'fdw', 5);
SELECT _index, n FROM al_one_ft WHERE _id = 'f1';
CREATE FOREIGN TABLE al_two_ft (_id text) SERVER al_se OPTIONS (index 'al-both');
SELECT status FROM req('PUT', '/al-b/_alias/al-bred', '{"filter":{"term":{"k":"red"}}}');
CREATE FOREIGN TABLE al_red_ft (_id text) SERVER al_se OPTIONS (index 'al-bred');
SELECT count(*) AS red FROM al_red_ft;
DROP SERVER al_se CASCADE;

-- privileges: the alias resolves to indices and the role's grants on them decide
CREATE ROLE al_reader;
SELECT search_engine.grant('read', 'al-a', 'al_reader');
SELECT status FROM req('PUT', '/al-*/_alias/al-two');
SET ROLE al_reader;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM req('POST', '/al-two/_search');
SELECT status, body->'hits'->'total'->>'value' AS total FROM req('POST', '/al-t*/_search');
SELECT status, body->'hits'->'total'->>'value' AS total FROM req('POST', '/al-one,al-a/_search');
SELECT status FROM req('PUT', '/al-a/_alias/al-mine');
SELECT status, body->'al-a' IS NOT NULL AS sees_a, body->'al-b' IS NOT NULL AS sees_b FROM req('GET', '/_alias/al-two');
RESET ROLE;
-- ignore_unavailable keeps an alias (it is available as its indices are)
SELECT (SELECT body->'hits'->'total' FROM req('POST', '/al-one/_search')) =
       (SELECT body->'hits'->'total' FROM req('POST', '/al-one,al-nope/_search?ignore_unavailable=true')) AS alias_kept;
SELECT search_engine.grant('manage', 'al-a', 'al_reader');
SET ROLE al_reader;
SELECT status FROM req('PUT', '/al-a/_alias/al-mine');
SELECT status, body->'error'->>'type' AS type FROM req('PUT', '/al-b/_alias/al-mine');
RESET ROLE;
SELECT search_engine.revoke('read', 'al-a', 'al_reader');
SELECT search_engine.revoke('manage', 'al-a', 'al_reader');
DROP ROLE al_reader;

SELECT status FROM req('DELETE', '/al-a');
SELECT status FROM req('DELETE', '/al-b');
SELECT * FROM req('GET', '/_alias/al-*');
