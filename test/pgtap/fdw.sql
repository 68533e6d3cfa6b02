-- The foreign data wrapper (src/fdw): results equal to search_engine.search
-- and to PostgreSQL on a copy of the data; what is pushed down; the
-- transactional writes (commits run in a second session through dblink,
-- so a failing COMMIT is an error this script can test).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
SET search_path = public, search_engine;
SELECT plan(55);

-- 300 generated documents: words for full text, a keyword, numbers, dates,
-- booleans, arrays, and some missing values
CREATE TEMP TABLE tap_src AS
  SELECT i AS id,
         jsonb_strip_nulls(jsonb_build_object(
           'title', (SELECT string_agg((ARRAY['red','green','blue','fast','slow','shoe','boot','sock','trail','road'])[1 + (i * k * 7 + k) % 10], ' ')
                     FROM generate_series(1, 1 + i % 6) k),
           'cat', CASE WHEN i % 11 = 0 THEN NULL ELSE (ARRAY['a','b','c','d'])[1 + i % 4] END,
           'n', CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 37) % 101 END,
           'x', CASE WHEN i % 17 = 0 THEN NULL ELSE round(((i * 7919) % 1000) / 7.0, 3) END,
           'at', to_char(timestamptz '2020-01-01' + (i * 13 || ' hours')::interval, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           'ok', i % 3 = 0,
           'seq', i,
           'tags', to_jsonb(ARRAY['t' || (i % 5), 't' || (i % 7)]))) AS doc
  FROM generate_series(1, 300) i;

SELECT ok((search_engine.create_index('tap_fdw', '{"settings": {"number_of_shards": 3},
  "mappings": {"properties": {"title": {"type": "text"}, "cat": {"type": "keyword"}, "n": {"type": "long"},
  "x": {"type": "double"}, "at": {"type": "date"}, "ok": {"type": "boolean"}, "seq": {"type": "long"}, "tags": {"type": "keyword"}}}}')->>'acknowledged')::bool,
  'index created');
SELECT ok(NOT (search_engine.bulk((SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n%s', id, doc), E'\n') || E'\n' FROM tap_src),
                                  'tap_fdw', refresh => 'true')->>'errors')::bool, 'documents indexed');

CREATE SERVER tap_se FOREIGN DATA WRAPPER search_engine;
IMPORT FOREIGN SCHEMA "tap_fdw" FROM SERVER tap_se INTO public;
CREATE TEMP TABLE tap_local AS
  SELECT id::text AS _id, doc->>'title' AS title, doc->>'cat' AS cat, (doc->>'n')::bigint AS n,
         (doc->>'x')::float8 AS x, (doc->>'at')::timestamptz AS at, (doc->>'ok')::bool AS ok, (doc->>'seq')::bigint AS seq,
         ARRAY(SELECT jsonb_array_elements_text(doc->'tags')) AS tags
  FROM tap_src;

SELECT has_foreign_table('public', 'tap_fdw', 'IMPORT FOREIGN SCHEMA made the table');
SELECT col_type_is('public', 'tap_fdw', 'tags', 'text[]', 'arrays seen in the sample become array columns');
SELECT col_type_is('public', 'tap_fdw', 'at', 'timestamp with time zone', 'date fields are timestamptz');
SELECT col_type_is('public', 'tap_fdw', 'n', 'bigint', 'long fields are bigint');

-- conditions: the same rows as PostgreSQL on the copy
CREATE FUNCTION pg_temp.explain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP r := concat_ws(E'\n', r, l); END LOOP;
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.ids(tbl text, cond text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SELECT coalesce(string_agg(_id, '','' ORDER BY _id::int), '''') FROM %s WHERE %s', tbl, cond) INTO r;
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.pushed(cond text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE format('EXPLAIN (VERBOSE, FORMAT JSON) SELECT _id FROM tap_fdw WHERE %s', cond) INTO plan;
  RETURN plan->0->'Plan'->>'Filter' IS NULL;
END $$;
SELECT is(pg_temp.ids('tap_fdw', c), pg_temp.ids('tap_local', c), 'same rows: ' || c)
  FROM unnest(ARRAY[
    'cat = ''b''', 'cat <> ''b''', 'NOT (cat IN (''a'', ''c''))', 'cat IS NULL',
    'n BETWEEN 10 AND 40', 'NOT (n > 50 OR x < 20)', 'n IS NULL OR x IS NULL',
    'at >= ''2020-02-01'' AND at < ''2020-02-10''', 'ok AND ''t3'' = ANY(tags)',
    'NOT ok OR cat LIKE ''c%''']) AS c;
SELECT ok(bool_and(pg_temp.pushed(c)), 'all those conditions were pushed down')
  FROM unnest(ARRAY[
    'cat = ''b''', 'cat <> ''b''', 'NOT (cat IN (''a'', ''c''))', 'cat IS NULL',
    'n BETWEEN 10 AND 40', 'NOT (n > 50 OR x < 20)', 'n IS NULL OR x IS NULL',
    'at >= ''2020-02-01'' AND at < ''2020-02-10''', 'ok AND ''t3'' = ANY(tags)',
    'NOT ok OR cat LIKE ''c%''']) AS c;

-- full text: hits and scores equal to search_engine.search
SELECT results_eq(
  $$SELECT _id, _score FROM tap_fdw WHERE title @@@ 'red shoe' ORDER BY _score DESC, _id$$,
  $$SELECT _id, _score FROM search_engine.search_hits('tap_fdw', '{"size": 1000, "query": {"match": {"title": "red shoe"}}}') ORDER BY _score DESC, _id$$,
  'title @@@ ''red shoe'': the hits and scores of the match query');
SELECT results_eq(
  $$SELECT _id, _score FROM tap_fdw t WHERE t @@@ '{"match_phrase": {"title": "fast trail"}}' AND cat = 'a' ORDER BY _score DESC, _id$$,
  $$SELECT _id, _score FROM search_engine.search_hits('tap_fdw', '{"size": 1000, "query": {"bool": {"must": {"match_phrase": {"title": "fast trail"}}, "filter": {"term": {"cat": "a"}}}}}') ORDER BY _score DESC, _id$$,
  'row @@@ DSL AND a filter: the scores of bool must + filter');
SELECT results_eq(
  $$SELECT _id, _score FROM tap_fdw WHERE title @@@ 'boot sock' ORDER BY _score DESC LIMIT 5$$,
  $$SELECT _id, _score FROM search_engine.search_hits('tap_fdw', '{"size": 5, "query": {"match": {"title": "boot sock"}}}')$$,
  'ORDER BY _score DESC LIMIT 5 is the engine''s top 5, in its order');
SELECT ok((SELECT count(*) FROM tap_fdw WHERE NOT (title @@@ 'red')) +
          (SELECT count(*) FROM tap_fdw WHERE title @@@ 'red') = 300, 'NOT @@@ is the complement');
SELECT throws_ok($$SELECT * FROM tap_local WHERE title @@@ 'red'$$, 'HV000', NULL,
                 '@@@ outside a foreign scan raises an error');

-- top-k by field, offset
SELECT results_eq(
  $$SELECT _id, x FROM tap_fdw WHERE ok ORDER BY x DESC, seq LIMIT 7 OFFSET 3$$,
  $$SELECT _id, x FROM tap_local WHERE ok ORDER BY x DESC NULLS FIRST, seq LIMIT 7 OFFSET 3$$,
  'ORDER BY x DESC LIMIT 7 OFFSET 3 (nulls first, as PostgreSQL)');
SELECT results_eq(
  $$SELECT _id, n FROM tap_fdw ORDER BY n, x, seq LIMIT 10$$,
  $$SELECT _id, n FROM tap_local ORDER BY n, x, seq LIMIT 10$$,
  'ORDER BY two fields LIMIT 10');
SELECT ok(pg_temp.explain('SELECT _id FROM tap_fdw ORDER BY x DESC LIMIT 3') ~ 'top-k search.*"sort":\[\{"x".*"size":3'
          AND pg_temp.explain('SELECT _id FROM tap_fdw ORDER BY x DESC LIMIT 3') !~ 'Limit',
  'EXPLAIN VERBOSE shows the top-k DSL (sort + size) and no local Limit');

-- aggregates in the engine equal PostgreSQL's
SELECT results_eq(
  $$SELECT cat, count(*), min(n), max(n), sum(n), avg(n), round(avg(x)::numeric, 9), max(at) FROM tap_fdw GROUP BY cat ORDER BY cat$$,
  $$SELECT cat, count(*), min(n), max(n), sum(n), avg(n), round(avg(x)::numeric, 9), max(at) FROM tap_local GROUP BY cat ORDER BY cat$$,
  'GROUP BY cat with count/min/max/sum/avg');
SELECT results_eq(
  $$SELECT ok, round(sum(x)::numeric, 9), min(cat), max(cat) FROM tap_fdw WHERE n > 20 GROUP BY ok ORDER BY ok$$,
  $$SELECT ok, round(sum(x)::numeric, 9), min(cat), max(cat) FROM tap_local WHERE n > 20 GROUP BY ok ORDER BY ok$$,
  'GROUP BY a boolean with a pushed filter');
SELECT is((SELECT count(*) FROM tap_fdw WHERE cat = 'a'), (SELECT count(*) FROM tap_local WHERE cat = 'a'),
          'count(*) with a condition');
SELECT ok(pg_temp.explain('SELECT cat, count(*) FROM tap_fdw GROUP BY cat') !~ 'Aggregate'
          AND pg_temp.explain('SELECT cat, count(*) FROM tap_fdw GROUP BY cat') ~ 'aggregation over doc values',
  'the aggregation ran in the engine (no local Agg node)');

-- joins: a nested loop of _id lookups
CREATE TEMP TABLE tap_orders AS SELECT g AS oid, ((g * 7) % 320)::text AS pid FROM generate_series(1, 40) g;
ANALYZE tap_orders;
SELECT results_eq(
  $$SELECT o.oid, f.title FROM tap_orders o JOIN tap_fdw f ON f._id = o.pid ORDER BY 1$$,
  $$SELECT o.oid, l.title FROM tap_orders o JOIN tap_local l ON l._id = o.pid ORDER BY 1$$,
  'join on _id');
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_memoize = off;
SELECT results_eq(
  $$SELECT o.oid, f.title FROM tap_orders o JOIN tap_fdw f ON f._id = o.pid ORDER BY 1$$,
  $$SELECT o.oid, l.title FROM tap_orders o JOIN tap_local l ON l._id = o.pid ORDER BY 1$$,
  'join on _id as a parameterized nested loop');
SELECT ok(pg_temp.explain('SELECT f.title FROM tap_orders o JOIN tap_fdw f ON f._id = o.pid') ~ '"ids":\{"values":\[\$1\]',
  'a join on _id can be a parameterized ids lookup');
SELECT results_eq(
  $$SELECT o.oid, count(*) FROM tap_orders o JOIN tap_fdw f ON f.cat = (ARRAY['a','b','c','d'])[1 + o.oid % 4] AND f.n = o.oid GROUP BY 1 ORDER BY 1$$,
  $$SELECT o.oid, count(*) FROM tap_orders o JOIN tap_local l ON l.cat = (ARRAY['a','b','c','d'])[1 + o.oid % 4] AND l.n = o.oid GROUP BY 1 ORDER BY 1$$,
  'join on a keyword and a long field');
RESET enable_hashjoin; RESET enable_mergejoin; RESET enable_memoize;

-- ANALYZE: real row counts for the planner
ANALYZE tap_fdw;
SELECT is((SELECT reltuples::int FROM pg_class WHERE oid = 'tap_fdw'::regclass), 300, 'ANALYZE counted the documents');
SELECT ok((SELECT n_distinct FROM pg_stats WHERE tablename = 'tap_fdw' AND attname = 'cat') = 4, 'ANALYZE sampled the columns');

-- a scan larger than work_mem spills its tuplestore to disk
SET work_mem = '64kB';
SELECT results_eq(
  $$SELECT _id, title, cat, n, x, at, ok, tags FROM tap_fdw ORDER BY _id::int$$,
  $$SELECT _id, title, cat, n, x, at, ok, tags FROM tap_local ORDER BY _id::int$$,
  'every row and column, through a tuplestore on disk');
RESET work_mem;

-- writes, each transaction in a second session so COMMIT errors are testable
CREATE FUNCTION pg_temp.other(q text) RETURNS text LANGUAGE sql AS $$
  SELECT dblink_exec('dbname=' || current_database() || ' port=' || current_setting('port') || ' host=' ||
                     split_part(current_setting('unix_socket_directories'), ',', 1), 'SET search_path = public, search_engine; ' || q)
$$;
SELECT lives_ok($$SELECT pg_temp.other('INSERT INTO tap_fdw (_id, title, cat, n) VALUES (''new1'', ''brand new'', ''z'', 7)')$$, 'INSERT commits');
SELECT is((SELECT title FROM tap_fdw WHERE _id = 'new1'), 'brand new', 'the inserted row is there after commit (refreshed)');
SELECT throws_ok($$SELECT pg_temp.other('INSERT INTO tap_fdw (_id, title) VALUES (''new1'', ''again'')')$$, '23505', NULL,
                 'an existing _id: unique_violation at commit');
SELECT lives_ok($$SELECT pg_temp.other('INSERT INTO tap_fdw (_id, title) VALUES (''new1'', ''again'') ON CONFLICT DO NOTHING')$$,
                'ON CONFLICT DO NOTHING skips it');
SELECT lives_ok($$SELECT pg_temp.other('BEGIN; INSERT INTO tap_fdw (_id) VALUES (''rb1''); DELETE FROM tap_fdw WHERE _id = ''1''; ROLLBACK')$$, 'rolled back');
SELECT is((SELECT count(*) FROM tap_fdw WHERE _id IN ('rb1', '1')), 1::bigint, 'rollback: nothing sent');
SELECT lives_ok($$SELECT pg_temp.other('BEGIN; INSERT INTO tap_fdw (_id) VALUES (''sp1''); SAVEPOINT a; INSERT INTO tap_fdw (_id) VALUES (''sp2''); ROLLBACK TO a; INSERT INTO tap_fdw (_id) VALUES (''sp3''); COMMIT')$$, 'savepoint');
SELECT is((SELECT string_agg(_id, ',' ORDER BY _id) FROM tap_fdw WHERE _id LIKE 'sp%'), 'sp1,sp3', 'rolled-back savepoint: its insert is gone');
SELECT throws_ok($$SELECT pg_temp.other('BEGIN; INSERT INTO tap_fdw (_id, title) VALUES (''at1'', ''x''); UPDATE tap_fdw SET n = 1 WHERE _id = ''2''; DELETE FROM tap_fdw WHERE _id = ''3''; INSERT INTO tap_fdw (_id, title) VALUES (''new1'', ''dup''); COMMIT')$$,
                 '23505', NULL, 'a rejected item fails the whole commit');
SELECT is((SELECT count(*) FROM tap_fdw WHERE _id = 'at1'), 0::bigint, 'the insert sent before the rejection was undone');
SELECT is((SELECT n FROM tap_fdw WHERE _id = '2'), (SELECT n FROM tap_local WHERE _id = '2'), 'the update was undone');
SELECT is((SELECT count(*) FROM tap_fdw WHERE _id = '3'), 1::bigint, 'the delete was undone');
-- PostgreSQL's own commit fails after the engine writes went out (a
-- serialization failure is detected after the commit callbacks): undone
CREATE TABLE tap_ssi (k int, v int);
INSERT INTO tap_ssi VALUES (1, 1), (2, 1);
SELECT dblink_connect('tap_a', 'dbname=' || current_database() || ' port=' || current_setting('port') || ' host=' || split_part(current_setting('unix_socket_directories'), ',', 1));
SELECT dblink_connect('tap_b', 'dbname=' || current_database() || ' port=' || current_setting('port') || ' host=' || split_part(current_setting('unix_socket_directories'), ',', 1));
SELECT dblink_exec('tap_a', 'BEGIN ISOLATION LEVEL SERIALIZABLE');
SELECT * FROM dblink('tap_a', 'SELECT sum(v) FROM tap_ssi WHERE k = 1') AS t(s bigint);
SELECT dblink_exec('tap_b', 'BEGIN ISOLATION LEVEL SERIALIZABLE');
SELECT * FROM dblink('tap_b', 'SELECT sum(v) FROM tap_ssi WHERE k = 2') AS t(s bigint);
SELECT dblink_exec('tap_b', 'INSERT INTO tap_fdw (_id, title) VALUES (''ssi1'', ''written, then undone'')');
SELECT dblink_exec('tap_a', 'INSERT INTO tap_ssi VALUES (2, 5)');
SELECT dblink_exec('tap_b', 'INSERT INTO tap_ssi VALUES (1, 5)');
SELECT dblink_exec('tap_a', 'COMMIT');
SELECT throws_ok($$SELECT dblink_exec('tap_b', 'COMMIT')$$, '40001', NULL,
                 'a serialization failure at commit, after the flush');
SELECT is((SELECT count(*) FROM tap_fdw WHERE _id = 'ssi1'), 0::bigint,
          'the aborted transaction''s engine write was undone');
SELECT dblink_disconnect('tap_a');
SELECT dblink_disconnect('tap_b');
DROP TABLE tap_ssi;
SELECT lives_ok($$SELECT pg_temp.other('UPDATE tap_fdw SET n = n + 1000, tags = NULL WHERE cat = ''c''')$$, 'UPDATE of many rows');
SELECT is((SELECT count(*) FROM tap_fdw WHERE n >= 1000), (SELECT count(*) FROM tap_local WHERE cat = 'c' AND n IS NOT NULL), 'every row updated');
SELECT is((SELECT search_engine.get_doc('tap_fdw', _id)->'_source' ? 'title' FROM tap_local WHERE cat = 'c' ORDER BY _id LIMIT 1), true,
          'fields not set by the UPDATE stay in _source');
SELECT lives_ok($$SELECT pg_temp.other('DELETE FROM tap_fdw WHERE cat = ''c'' OR _id LIKE ''sp%'' OR _id = ''new1''')$$, 'DELETE');
SELECT is((SELECT count(*) FROM tap_fdw), (SELECT count(*) FROM tap_local WHERE cat IS DISTINCT FROM 'c'), 'deleted');

SELECT * FROM finish();
DROP SERVER tap_se CASCADE;
SELECT search_engine.delete_index('tap_fdw') IS NOT NULL AS dropped;
