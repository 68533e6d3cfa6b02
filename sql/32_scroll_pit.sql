-- Deep pagination (ES 8): search_after with any sort, point in time
-- (POST /{index}/_pit, DELETE /_pit, search with "pit" and the _shard_doc
-- tiebreaker), scroll and slices.  The pages of each, put together, must
-- equal one sorted result with no duplicates or gaps, although documents
-- are written, deleted and merged away between the pages.
SELECT status FROM search_engine.request('PUT', '/pages', '{"settings": {"number_of_shards": 3, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "long"}, "g": {"type": "keyword"}, "x": {"type": "double"}, "t": {"type": "text"}}}}');
SELECT status FROM search_engine.request('POST', '/pages/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "d%s"}}\n{"n": %s, "g": "g%s", "t": "word%s common"%s}\n',
                            i, i, i % 7, i % 3, CASE WHEN i % 5 = 0 THEN '' ELSE format(', "x": %s.5', i % 4) END), '')
     FROM generate_series(1, 100) i));

-- search_after: each page resumes after the last hit's sort values
SELECT status, body->'hits'->'hits'->0->'sort' AS first, body->'hits'->'hits'->1->'sort' AS second
  FROM search_engine.request('POST', '/pages/_search', '{"size": 2, "sort": [{"g": "asc"}, {"n": "desc"}]}');
SELECT status, body->'hits'->'hits'->0->'sort' AS first, body->'hits'->'hits'->1->'sort' AS second
  FROM search_engine.request('POST', '/pages/_search', '{"size": 2, "sort": [{"g": "asc"}, {"n": "desc"}], "search_after": ["g0", 91]}');
-- paging by (x desc with missing values, n asc) gives the one sorted result
CREATE TEMP TABLE whole AS
  SELECT array_agg(h->>'_id' ORDER BY o) AS ids
    FROM search_engine.request('POST', '/pages/_search', '{"size": 100, "sort": [{"x": "desc"}, {"n": "asc"}]}') r,
         jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS e(h, o);
WITH RECURSIVE p(k, after, ids) AS (
  SELECT 0, NULL::jsonb, ARRAY[]::text[]
  UNION ALL
  SELECT k + 1, r.body->'hits'->'hits'->-1->'sort',
         ids || ARRAY(SELECT h->>'_id' FROM jsonb_array_elements(r.body->'hits'->'hits') h)
    FROM p, LATERAL search_engine.request('POST', '/pages/_search',
         ('{"size": 8, "sort": [{"x": "desc"}, {"n": "asc"}]}'::jsonb
          || CASE WHEN after IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('search_after', after) END)::text) r
   WHERE k < 30 AND (k = 0 OR after IS NOT NULL)
)
SELECT max(k) AS pages, (SELECT ids FROM p ORDER BY k DESC LIMIT 1) = (SELECT ids FROM whole) AS same_as_one_result FROM p;
-- missing values come back as ES shows them, and are resumed after
SELECT body->'hits'->'hits'->0->'sort' AS last_of_x
  FROM search_engine.request('POST', '/pages/_search', '{"size": 1, "sort": [{"x": "desc"}, {"n": "asc"}], "search_after": ["-Infinity", 90]}');
-- ES's errors
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search', '{"search_after": [1]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search', '{"sort": ["n"], "search_after": [1, 2]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search', '{"from": 3, "sort": ["n"], "search_after": [1]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search', '{"sort": ["_shard_doc"]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search', '{"slice": {"id": 0, "max": 2}}');

-- point in time: open it, then write, delete and merge
SELECT status, body->'_shards' AS shards, length(body->>'id') > 20 AS has_id
  FROM search_engine.request('POST', '/pages/_pit?keep_alive=1s');
CREATE TABLE pit_ids (name text PRIMARY KEY, id text);
INSERT INTO pit_ids SELECT 'a', body->>'id' FROM search_engine.request('POST', '/pages/_pit?keep_alive=5m');
SELECT status FROM search_engine.request('POST', '/pages/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "e%s"}}\n{"n": %s, "g": "g%s"}\n', i, i, i % 7), '') FROM generate_series(1, 50) i)
  || (SELECT string_agg(format(E'{"delete": {"_id": "d%s"}}\n', i), '') FROM generate_series(1, 30) i)
  || E'{"index": {"_id": "d50"}}\n{"n": 5000, "g": "changed"}\n');
SELECT status FROM search_engine.request('POST', '/pages/_forcemerge?max_num_segments=1');
-- a new connection: the point in time's segments are no longer published,
-- their files are kept for it and opened from disk
\c
SELECT body->'hits'->'total' AS now FROM search_engine.request('POST', '/pages/_search', '{"size": 0}');
SELECT status, body->'hits'->'total' AS at_pit, body->>'pit_id' = (SELECT id FROM pit_ids WHERE name = 'a') AS same_id,
       body->'hits'->'hits'->0->'_source' AS d50, jsonb_array_length(body->'hits'->'hits'->0->'sort') AS sort_values
  FROM search_engine.request('POST', '/_search', jsonb_build_object('size', 1, 'query', '{"ids": {"values": ["d50"]}}'::jsonb,
         'pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a'), 'keep_alive', '2m'))::text);
-- pages by g (many ties: _shard_doc breaks them) equal the whole sorted result at the point in time
CREATE TEMP TABLE pit_whole AS
  SELECT array_agg(h->>'_id' ORDER BY o) AS ids
    FROM search_engine.request('POST', '/_search', jsonb_build_object('size', 200, 'sort', '[{"g": "asc"}]'::jsonb,
           'pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a')))::text) r,
         jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS e(h, o);
WITH RECURSIVE p(k, after, ids) AS (
  SELECT 0, NULL::jsonb, ARRAY[]::text[]
  UNION ALL
  SELECT k + 1, r.body->'hits'->'hits'->-1->'sort',
         ids || ARRAY(SELECT h->>'_id' FROM jsonb_array_elements(r.body->'hits'->'hits') h)
    FROM p, LATERAL search_engine.request('POST', '/_search',
         (jsonb_build_object('size', 9, 'sort', '[{"g": "asc"}]'::jsonb,
                             'pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a')))
          || CASE WHEN after IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('search_after', after) END)::text) r
   WHERE k < 30 AND (k = 0 OR after IS NOT NULL)
)
SELECT max(k) AS pages, cardinality((SELECT ids FROM p ORDER BY k DESC LIMIT 1)) AS hits,
       (SELECT count(DISTINCT x) FROM p, unnest(ids) x) AS distinct_ids,
       (SELECT ids FROM p ORDER BY k DESC LIMIT 1) = (SELECT ids FROM pit_whole) AS same_as_one_result,
       (SELECT bool_and(x LIKE 'd%') FROM p, unnest(ids) x) AS only_old_docs
  FROM p;
-- relevance order at a point in time: [_score, _shard_doc], with max_score
SELECT status, jsonb_array_length(body->'hits'->'hits'->0->'sort') AS sort_values,
       (body->'hits'->'hits'->0->'sort'->>0)::float = (body->'hits'->>'max_score')::float AS score_first
  FROM search_engine.request('POST', '/_search', jsonb_build_object('size', 1, 'query', '{"match": {"t": "word1"}}'::jsonb,
         'pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a')))::text);
-- slices of a point in time: disjoint, together every doc
SELECT count(*) AS hits, count(DISTINCT h->>'_id') AS distinct_ids, count(DISTINCT s) AS slices, min(n) > 0 AS each_has_some
  FROM generate_series(0, 2) s,
       LATERAL search_engine.request('POST', '/_search', jsonb_build_object('size', 200,
         'slice', jsonb_build_object('id', s, 'max', 3), 'pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a')))::text) r,
       LATERAL (SELECT jsonb_array_length(r.body->'hits'->'hits') AS n) c,
       LATERAL jsonb_array_elements(r.body->'hits'->'hits') h;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_search', jsonb_build_object('slice', '{"id": 3, "max": 3}'::jsonb,
         'pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a')))::text);
-- ES's errors
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search', jsonb_build_object('pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a')))::text);
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_search', '{"pit": {"id": "bm90IGFuIGlk"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_pit');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_pit?keep_alive=2d');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('POST', '/nosuchindex/_pit?keep_alive=1m');
-- closing frees its three shard contexts; a search of it then fails
SELECT status, body FROM search_engine.request('DELETE', '/_pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a'))::text);
SELECT status, body FROM search_engine.request('DELETE', '/_pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a'))::text);
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/_search', jsonb_build_object('pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'a')))::text);
-- keep_alive runs out
INSERT INTO pit_ids SELECT 'short', body->>'id' FROM search_engine.request('POST', '/pages/_pit?keep_alive=1s');
SELECT pg_sleep(1.5);
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/_search', jsonb_build_object('pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'short')))::text);
-- the node-wide limit on open contexts (one per shard); expired ones do not count
SET search_engine.max_open_scroll_context = 4;
INSERT INTO pit_ids SELECT 'b', body->>'id' FROM search_engine.request('POST', '/pages/_pit?keep_alive=1m');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_pit?keep_alive=1m');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('POST', '/pages/_search?scroll=1m');
SELECT status, body->'num_freed' AS freed FROM search_engine.request('DELETE', '/_pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'b'))::text);
SELECT status, body->'_shards'->'total' AS shards FROM search_engine.request('POST', '/pages/_pit?keep_alive=1s');
RESET search_engine.max_open_scroll_context;

-- scroll: the first page opens a point in time, each next page resumes after the last hit
SELECT status, body->'_scroll_id' IS NOT NULL AS has_scroll_id, body->'hits'->'total' AS total,
       body->'hits'->'hits'->0->'sort' AS sort, body->'hits'->'max_score' IS NOT NULL AS has_max_score
  FROM search_engine.request('POST', '/pages/_search?scroll=1m', '{"size": 4, "query": {"match": {"t": "word1"}}}');
CREATE TEMP TABLE s AS
  SELECT body->>'_scroll_id' AS id, body FROM search_engine.request('POST', '/pages/_search?scroll=1m&size=7', '{"sort": ["n"]}');
SELECT body->'hits'->'hits'->0->'sort' AS only_the_body_sort FROM s;
-- written meanwhile: not seen by the scroll
SELECT status FROM search_engine.request('POST', '/pages/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "f%s"}}\n{"n": %s}\n', i, i), '') FROM generate_series(1, 20) i)
  || E'{"delete": {"_id": "e1"}}\n');
WITH RECURSIVE p(k, sid, ids) AS (
  SELECT 0, (SELECT id FROM s), ARRAY(SELECT h->>'_id' FROM s, jsonb_array_elements(s.body->'hits'->'hits') h)
  UNION ALL
  SELECT k + 1, r.body->>'_scroll_id', ids || ARRAY(SELECT h->>'_id' FROM jsonb_array_elements(r.body->'hits'->'hits') h)
    FROM p, LATERAL search_engine.request('POST', '/_search/scroll', jsonb_build_object('scroll', '1m', 'scroll_id', sid)::text) r
   WHERE k < 40 AND jsonb_array_length(r.body->'hits'->'hits') > 0
)
SELECT max(k) AS pages, cardinality((SELECT ids FROM p ORDER BY k DESC LIMIT 1)) AS hits,
       (SELECT count(DISTINCT x) FROM p, unnest(ids) x) AS distinct_ids,
       (SELECT bool_and(x NOT LIKE 'f%') FROM p, unnest(ids) x) AS none_written_since,
       (SELECT bool_or(x = 'e1') FROM p, unnest(ids) x) AS deleted_since_still_there
  FROM p;
-- the same through GET with the id in the path
SELECT status, jsonb_array_length(body->'hits'->'hits') AS hits
  FROM search_engine.request('GET', '/_search/scroll/' || (SELECT id FROM s) || '?scroll=1m');
-- sliced scrolls: disjoint, together every doc
SELECT count(*) AS hits, count(DISTINCT h->>'_id') AS distinct_ids
  FROM generate_series(0, 1) sl,
       LATERAL search_engine.request('POST', '/pages/_search?scroll=1m', jsonb_build_object('size', 500, 'slice', jsonb_build_object('id', sl, 'max', 2))::text) r,
       LATERAL jsonb_array_elements(r.body->'hits'->'hits') h;
SELECT status, body FROM search_engine.request('DELETE', '/_search/scroll', jsonb_build_object('scroll_id', (SELECT id FROM s))::text);
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('POST', '/_search/scroll', jsonb_build_object('scroll', '1m', 'scroll_id', (SELECT id FROM s))::text);
-- ES's errors
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search?scroll=1m', '{"size": 0}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/pages/_search?scroll=1m', '{"sort": ["n"], "search_after": [1]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_search/scroll', '{"scroll": "1m"}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('DELETE', '/_search/scroll', '{}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_search/scroll', '{"scroll_id": "%%%"}');
-- open contexts in _stats and _nodes/stats (ES's search.open_contexts,
-- scroll_current): one per shard of a point in time or scroll
SELECT search_engine.create_index('ctxs', '{"settings": {"number_of_shards": 2}}') IS NOT NULL AS created;
CREATE FUNCTION ctx_counts() RETURNS text LANGUAGE sql AS $$
  SELECT (s.body->'_all'->'primaries'->'search'->>'open_contexts') || ' open, ' ||
         (s.body->'_all'->'primaries'->'search'->>'scroll_current') || ' scrolls; node >= that: ' ||
         ((n.body->'nodes'->(SELECT k FROM jsonb_object_keys(n.body->'nodes') k LIMIT 1)->'indices'->'search'->>'open_contexts')::int
          >= (s.body->'_all'->'primaries'->'search'->>'open_contexts')::int)
    FROM search_engine.request('GET', '/ctxs/_stats/search') s,
         search_engine.request('GET', '/_nodes/stats/indices') n $$;
SELECT ctx_counts();
INSERT INTO pit_ids SELECT 'c', body->>'id' FROM search_engine.request('POST', '/ctxs/_pit?keep_alive=1m');
SELECT ctx_counts();
INSERT INTO pit_ids SELECT 'cs', body->>'_scroll_id' FROM search_engine.request('POST', '/ctxs/_search?scroll=1m', '{"size": 1}');
SELECT ctx_counts();
SELECT status FROM search_engine.request('DELETE', '/_search/scroll', jsonb_build_object('scroll_id', (SELECT id FROM pit_ids WHERE name = 'cs'))::text);
SELECT ctx_counts();
SELECT status FROM search_engine.request('DELETE', '/_pit', jsonb_build_object('id', (SELECT id FROM pit_ids WHERE name = 'c'))::text);
SELECT ctx_counts();
DROP FUNCTION ctx_counts();
SELECT status FROM search_engine.request('DELETE', '/ctxs');
DROP TABLE pit_ids;
SELECT status FROM search_engine.request('DELETE', '/pages');
