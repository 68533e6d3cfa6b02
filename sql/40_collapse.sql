-- Field collapsing (issue 17): collapse on a keyword or numeric field,
-- per shard and again across shards, from/size over groups, the null
-- group, the collapse value in each hit's fields, inner_hits (the expand
-- phase), and ES's refusals.  Results are checked against DISTINCT ON
-- over a plain table holding the same rows.
SELECT status FROM search_engine.request('PUT', '/cl', '{"settings": {"number_of_shards": 3, "number_of_replicas": 0}, "mappings": {"properties": {"user": {"type": "keyword"}, "grp": {"type": "long"}, "price": {"type": "double"}, "n": {"type": "long"}, "msg": {"type": "text"}, "nodv": {"type": "keyword", "doc_values": false}, "d": {"type": "date"}, "tags": {"type": "keyword"}}}}');
CREATE TABLE cl_rows (id text, "user" text, grp bigint, price double precision, n bigint, msg text);
INSERT INTO cl_rows VALUES
  ('1', 'kimchy', 1, 1.5, 10, 'quick brown fox'),
  ('2', 'kimchy', 2, 2.5, 20, 'quick fox'),
  ('3', 'elastic', 1, 1.5, 30, 'lazy dog'),
  ('4', 'elastic', 3, 3.5, 40, 'quick quick fox jumps'),
  ('5', 'bob', 2, 2.5, 50, 'brown dog'),
  ('6', 'bob', 3, 3.5, 60, 'fox'),
  ('7', 'bob', 1, 1.5, 70, 'the quick dog'),
  ('8', NULL, 2, 2.5, 80, 'quick brown'),
  ('9', NULL, NULL, NULL, 90, 'fox fox'),
  ('10', 'zed', 3, 3.5, 5, 'lazy fox'),
  ('11', 'amy', 1, 1.5, 15, 'quick lazy brown fox'),
  ('12', 'amy', NULL, NULL, 25, 'dog');
SELECT status, body->'errors' AS errors FROM search_engine.request('POST', '/cl/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n%s\n', id, jsonb_strip_nulls(jsonb_build_object('user', "user", 'grp', grp, 'price', price, 'n', n, 'msg', msg, 'nodv', "user", 'd', '2020-01-01', 'tags', CASE WHEN id = '4' THEN '["a", "b"]'::jsonb ELSE '"a"'::jsonb END))), '' ORDER BY id) FROM cl_rows));

-- sorted by a field: each group's best doc, groups in sort order; the
-- total counts matching docs, not groups (ES's)
SELECT body->'hits'->'total' AS total, jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids,
       jsonb_path_query_array(body, '$.hits.hits[*].fields') AS fields
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user"}, "sort": [{"n": "desc"}], "_source": false, "size": 20}');
SELECT jsonb_path_query_array(s.body, '$.hits.hits[*]._id') = (
         SELECT jsonb_agg(to_jsonb(id) ORDER BY n DESC) FROM (SELECT DISTINCT ON ("user") id, n FROM cl_rows ORDER BY "user", n DESC) g
       ) AS same_as_distinct_on
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user"}, "sort": [{"n": "desc"}], "size": 20}') s;
-- a numeric field (the missing ones form the null group)
SELECT jsonb_path_query_array(s.body, '$.hits.hits[*]._id') = (
         SELECT jsonb_agg(to_jsonb(id) ORDER BY n) FROM (SELECT DISTINCT ON (grp) id, n FROM cl_rows ORDER BY grp, n) g
       ) AS same_as_distinct_on, jsonb_path_query_array(s.body, '$.hits.hits[*].fields.grp[0]') AS groups
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "grp"}, "sort": ["n"], "size": 20}') s;
-- a double field
SELECT jsonb_path_query_array(s.body, '$.hits.hits[*].fields') AS fields
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "price"}, "sort": [{"n": "desc"}], "size": 20}') s;
-- from/size page over groups: the pages together are the whole list
SELECT (SELECT jsonb_agg(i) FROM (SELECT jsonb_array_elements(jsonb_path_query_array(body, '$.hits.hits[*]._id')) i
          FROM generate_series(0, 4, 2) f,
               LATERAL search_engine.request('POST', '/cl/_search', format('{"collapse": {"field": "user"}, "sort": [{"n": "desc"}], "from": %s, "size": 2}', f)) ORDER BY f) p)
     = jsonb_path_query_array(s.body, '$.hits.hits[*]._id') AS pages_equal_whole
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user"}, "sort": [{"n": "desc"}], "size": 6}') s;

-- by relevance: the best-scoring doc of each group, as a DISTINCT ON over
-- the uncollapsed hits (same scores) gives it
WITH plain AS (
  SELECT h->>'_id' AS id, (h->>'_score')::float8 AS score, o, r."user"
    FROM search_engine.request('POST', '/cl/_search', '{"query": {"match": {"msg": "quick fox"}}, "size": 100}') s,
         jsonb_array_elements(s.body->'hits'->'hits') WITH ORDINALITY AS t(h, o) JOIN cl_rows r ON r.id = h->>'_id'
), best AS (SELECT DISTINCT ON ("user") id, o FROM plain ORDER BY "user", o)
SELECT jsonb_path_query_array(c.body, '$.hits.hits[*]._id') = (SELECT jsonb_agg(to_jsonb(id) ORDER BY o) FROM best) AS same_as_distinct_on,
       c.body->'hits'->'total'->'value' AS total, c.body->'hits'->'max_score' = (SELECT to_jsonb(max(score)) FROM plain)::jsonb AS same_max_score
  FROM search_engine.request('POST', '/cl/_search', '{"query": {"match": {"msg": "quick fox"}}, "collapse": {"field": "user"}, "size": 100}') c;
-- with the count off (top-k may skip what cannot enter the page): the same groups
SELECT jsonb_path_query_array(a.body, '$.hits.hits[*]') = jsonb_path_query_array(b.body, '$.hits.hits[*]') AS same_hits
  FROM search_engine.request('POST', '/cl/_search', '{"query": {"match": {"msg": "quick fox dog"}}, "collapse": {"field": "grp"}, "size": 2, "track_total_hits": false}') a,
       search_engine.request('POST', '/cl/_search', '{"query": {"match": {"msg": "quick fox dog"}}, "collapse": {"field": "grp"}, "size": 2, "track_total_hits": true}') b;
-- a larger corpus (2000 docs, 37 groups), where skipping does pass over
-- docs: the top 10 groups are the first 10 of a DISTINCT ON over the
-- uncollapsed hits, whichever way the count is kept
SELECT status FROM search_engine.request('PUT', '/clbig', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"g": {"type": "long"}, "t": {"type": "text"}}}}');
SELECT status, body->'errors' AS errors FROM search_engine.request('POST', '/clbig/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n{"g": %s, "t": "%s"}\n', i, i % 37,
          (SELECT string_agg('w' || (('x' || substr(md5(i::text || '-' || j), 1, 4))::bit(16)::int % (5 + j * 7)), ' ') FROM generate_series(1, 1 + i % 9) j)), '')
     FROM generate_series(1, 2000) i));
WITH plain AS (
  SELECT h->>'_id' AS id, o, (h->>'_id')::int % 37 AS g
    FROM search_engine.request('POST', '/clbig/_search', '{"query": {"match": {"t": "w1 w2 w3 w30 w40"}}, "size": 2000, "_source": false}') s,
         jsonb_array_elements(s.body->'hits'->'hits') WITH ORDINALITY AS t(h, o)
), best AS (SELECT DISTINCT ON (g) id, o FROM plain ORDER BY g, o)
SELECT (SELECT jsonb_agg(to_jsonb(id) ORDER BY o) FROM (SELECT * FROM best ORDER BY o LIMIT 10) x) = jsonb_path_query_array(a.body, '$.hits.hits[*]._id') AS skipping,
       (SELECT jsonb_agg(to_jsonb(id) ORDER BY o) FROM (SELECT * FROM best ORDER BY o LIMIT 10) x) = jsonb_path_query_array(b.body, '$.hits.hits[*]._id') AS exact, b.body->'hits'->'total'->'value' AS matched
  FROM search_engine.request('POST', '/clbig/_search', '{"query": {"match": {"t": "w1 w2 w3 w30 w40"}}, "collapse": {"field": "g"}, "track_total_hits": false, "_source": false}') a,
       search_engine.request('POST', '/clbig/_search', '{"query": {"match": {"t": "w1 w2 w3 w30 w40"}}, "collapse": {"field": "g"}, "track_total_hits": true, "_source": false}') b;
SELECT status FROM search_engine.request('DELETE', '/clbig');
-- one hit in ES's shape
SELECT mask(body->'hits'->'hits'->0) AS hit
  FROM search_engine.request('POST', '/cl/_search', '{"query": {"ids": {"values": ["9"]}}, "collapse": {"field": "user"}}');
-- docvalue_fields and the collapse value share "fields"
SELECT body->'hits'->'hits'->0->'fields' AS fields
  FROM search_engine.request('POST', '/cl/_search', '{"query": {"ids": {"values": ["3"]}}, "collapse": {"field": "user"}, "docvalue_fields": ["n", "user"]}');
-- search_after sorted on the collapse field alone
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids, jsonb_path_query_array(body, '$.hits.hits[*].sort') AS sort
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user"}, "sort": ["user"], "search_after": ["bob"], "size": 2}');
-- size 0: nothing collapsed, the count stays
SELECT body->'hits'->'total' AS total, body->'hits'->'hits' AS hits
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user"}, "size": 0}');

-- inner_hits: per hit, a search of its group (the query AND the group)
SELECT h->>'_id' AS id, h->'fields'->'user'->0 AS "user",
       h->'inner_hits'->'by_n'->'hits'->'total' AS total,
       jsonb_path_query_array(h, '$.inner_hits.by_n.hits.hits[*]._id') AS inner_ids,
       jsonb_path_query_array(h, '$.inner_hits.by_n.hits.hits[*].sort') AS inner_sort
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user", "inner_hits": {"name": "by_n", "size": 2, "sort": [{"n": "asc"}], "_source": false}, "max_concurrent_group_searches": 4}, "sort": [{"n": "desc"}], "_source": false, "size": 20}') s,
       jsonb_array_elements(s.body->'hits'->'hits') h;
-- checked against SQL: each group's count and its first two by n
SELECT bool_and((h->'inner_hits'->'by_n'->'hits'->'total'->'value')::int =
                (SELECT count(*) FROM cl_rows r WHERE r."user" IS NOT DISTINCT FROM h->'fields'->'user'->>0)
            AND jsonb_path_query_array(h, '$.inner_hits.by_n.hits.hits[*]._id') =
                (SELECT jsonb_agg(to_jsonb(id) ORDER BY n) FROM (SELECT id, n FROM cl_rows r WHERE r."user" IS NOT DISTINCT FROM h->'fields'->'user'->>0 ORDER BY n LIMIT 2) x)) AS inner_hits_match_sql
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user", "inner_hits": {"name": "by_n", "size": 2, "sort": [{"n": "asc"}]}}, "sort": [{"n": "desc"}], "size": 20}') s,
       jsonb_array_elements(s.body->'hits'->'hits') h;
-- several inner_hits with the query kept (scores), from, and an unnamed one
SELECT mask(body->'hits'->'hits'->0->'inner_hits') AS inner_hits
  FROM search_engine.request('POST', '/cl/_search', '{"query": {"match": {"msg": "fox"}}, "collapse": {"field": "grp", "inner_hits": [{"name": "top", "size": 1, "_source": ["msg"]}, {"name": "next", "from": 1, "size": 1, "_source": false, "version": true}, {"size": 0}]}, "sort": [{"n": "desc"}], "size": 1}');

-- a second level of collapsing: each grp's docs, one per user
SELECT h->'fields'->'grp'->0 AS grp, jsonb_path_query_array(h, '$.inner_hits.users.hits.hits[*].fields.user[0]') AS users,
       jsonb_path_query_array(h, '$.inner_hits.users.hits.hits[*]._id') AS ids
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "grp", "inner_hits": {"name": "users", "size": 5, "collapse": {"field": "user"}, "sort": ["n"], "_source": false}}, "sort": ["n"], "_source": false}') s,
       jsonb_array_elements(s.body->'hits'->'hits') h;

-- refusals, as ES
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "msg"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "d"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "nope"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "nodv"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "tags"}, "size": 20}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user"}, "rescore": {"window_size": 5, "query": {"rescore_query": {"match_all": {}}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user"}, "sort": ["n"], "search_after": [10]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search?scroll=1m', '{"collapse": {"field": "user"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user", "max_concurrent_group_searches": 0}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user", "inner_hits": [{"name": "a"}, {"name": "a"}]}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {"field": "user", "size": 3}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/cl/_search', '{"collapse": {}}');

DROP TABLE cl_rows;
SELECT status FROM search_engine.request('DELETE', '/cl');
