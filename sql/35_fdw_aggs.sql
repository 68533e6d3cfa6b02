-- GROUP BY / aggregate pushdown of the foreign data wrapper runs on the
-- aggregations engine (src/fdw/aggregate.c -> src/search/aggs.c): the
-- pushed-down answers must equal the same query on a plain-table copy.
\set SHOW_CONTEXT never

-- ---------------------------------------------------------------------
-- Data: an index made by dynamic mapping (the issue's case: text fields
-- get a keyword sub-field) and the same documents in a table
-- ---------------------------------------------------------------------
CREATE TABLE fa_src AS
  SELECT i,
         jsonb_strip_nulls(jsonb_build_object(
           'package', 'pkg' || i,
           'section', CASE WHEN i % 11 = 0 THEN NULL
                           ELSE (ARRAY['libs', 'utils', 'devel', 'python', 'Ünïcode "q"'])[1 + i % 5] END,
           'installed_size', CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 37) % 1000 END,
           'size', i * 1000003,
           'score', CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 17) * 0.25 END,
           'built', CASE WHEN i % 9 = 0 THEN NULL ELSE to_char(timestamptz '2024-01-01 00:00Z' + i * interval '7 hours', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END,
           'essential', CASE WHEN i % 6 = 0 THEN NULL ELSE i % 4 = 0 END,
           'prio', CASE WHEN i % 8 = 0 THEN NULL ELSE (ARRAY['optional', 'required'])[1 + i % 2] END)) AS doc
    FROM generate_series(1, 300) i;

SELECT search_engine.create_index('fa_deb', '{"settings": {"number_of_shards": 3, "number_of_replicas": 0}}')->'acknowledged';
SELECT search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s"}}\n%s', i, doc), E'\n' ORDER BY i) || E'\n',
                          'fa_deb', refresh => 'true')->'errors'
  FROM fa_src;
SELECT search_engine.get_mapping('fa_deb')->'fa_deb'->'mappings'->'properties'->'section';

CREATE TABLE fa_local AS
  SELECT i::text AS _id, doc->>'package' AS package, doc->>'section' AS section,
         (doc->>'installed_size')::bigint AS installed_size, (doc->>'size')::bigint AS size,
         (doc->>'score')::float8 AS score, (doc->>'built')::timestamptz AS built,
         (doc->>'essential')::boolean AS essential, doc->>'prio' AS prio
    FROM fa_src;

CREATE SERVER fa_se FOREIGN DATA WRAPPER search_engine;
CREATE SCHEMA fa;
IMPORT FOREIGN SCHEMA "fa_deb" FROM SERVER fa_se INTO fa;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'fa.fa_deb'::regclass AND attnum > 0 ORDER BY attnum;

-- the same answer both ways, as multisets: 'equal (n rows)' or the rows that differ
CREATE FUNCTION fa_same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  qf text := replace(q, 'FROM T', 'FROM fa.fa_deb');
  ql text := replace(q, 'FROM T', 'FROM fa_local');
  n bigint;
  d text;
BEGIN
  EXECUTE format('SELECT string_agg(w || x::text, '' '') FROM ((SELECT ''foreign:'' w, x FROM (%s EXCEPT ALL %s) x)
                  UNION ALL (SELECT ''local:'', x FROM (%s EXCEPT ALL %s) x)) d', qf, ql, ql, qf) INTO d;
  EXECUTE format('SELECT count(*) FROM (%s) x', ql) INTO n;
  RETURN coalesce('differ: ' || d, format('equal (%s rows)', n));
END $$;
-- is the aggregate pushed down (no local Aggregate node)?
CREATE FUNCTION fa_pushed(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE p text := '';
        l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || replace(q, 'FROM T', 'FROM fa.fa_deb') LOOP
    p := p || l || E'\n';
  END LOOP;
  RETURN p ~ 'aggregation over doc values' AND p !~ 'Aggregate';
END $$;

-- ---------------------------------------------------------------------
-- The issue's query: text column grouped on its keyword sub-field,
-- NULL group kept, no _source read (EXPLAIN shows the aggs request)
-- ---------------------------------------------------------------------
EXPLAIN (VERBOSE, COSTS OFF) SELECT section, count(*), avg(installed_size) FROM fa.fa_deb GROUP BY section;
SELECT section, count(*), avg(installed_size) FROM fa.fa_deb GROUP BY section ORDER BY section NULLS FIRST;
SELECT section, count(*), avg(installed_size) FROM fa_local GROUP BY section ORDER BY section NULLS FIRST;

-- ---------------------------------------------------------------------
-- Equal to the plain table: keys of every type, NULL groups, every
-- aggregate, HAVING, ORDER BY / LIMIT on the groups, pushed WHERE
-- ---------------------------------------------------------------------
SELECT q, fa_pushed(q) AS pushed, fa_same(q) AS result FROM (VALUES
  ('SELECT section, count(*), avg(installed_size) FROM T GROUP BY section'),
  ('SELECT section, prio, count(*), count(installed_size), sum(installed_size), min(installed_size), max(installed_size) FROM T GROUP BY section, prio'),
  ('SELECT essential, count(*), sum(size), avg(size), min(built), max(built) FROM T GROUP BY essential'),
  ('SELECT installed_size, count(*) FROM T GROUP BY installed_size'),
  ('SELECT built, count(*), min(score), max(installed_size) FROM T GROUP BY built'),
  ('SELECT score, count(*), count(score), min(score), max(score) FROM T GROUP BY score'),
  ('SELECT prio, round(sum(score)::numeric, 9), round(avg(score)::numeric, 9) FROM T GROUP BY prio'),
  ('SELECT section, count(*) FROM T WHERE installed_size > 500 AND essential GROUP BY section'),
  ('SELECT section, count(*) FROM T WHERE prio = ''nothing'' GROUP BY section'),
  ('SELECT section, avg(installed_size) FROM T GROUP BY section HAVING count(*) > 55 AND avg(installed_size) > 400'),
  ('SELECT count(*), count(installed_size), sum(installed_size), avg(installed_size), min(size), max(size), min(built), max(score) FROM T'),
  ('SELECT count(*), sum(installed_size), avg(installed_size), min(built), max(score) FROM T WHERE prio = ''nothing'''),
  ('SELECT (SELECT x FROM (SELECT section x, count(*) c FROM T GROUP BY section ORDER BY c DESC, x LIMIT 2) s ORDER BY x LIMIT 1)')
) v(q);

-- ORDER BY and LIMIT over the pushed-down groups are done by PostgreSQL
EXPLAIN (COSTS OFF) SELECT section, count(*) FROM fa.fa_deb GROUP BY section ORDER BY count(*) DESC, section LIMIT 3;
SELECT section, count(*) FROM fa.fa_deb GROUP BY section ORDER BY count(*) DESC, section LIMIT 3;
SELECT section, count(*) FROM fa_local GROUP BY section ORDER BY count(*) DESC, section LIMIT 3;

-- not pushed (computed by PostgreSQL from rows): expressions, DISTINCT,
-- FILTER, count / min / max of text columns
SELECT q, fa_pushed(q) AS pushed, fa_same(q) AS result FROM (VALUES
  ('SELECT prio, count(*), count(prio), min(section), max(section) FROM T GROUP BY prio'),
  ('SELECT lower(section), count(*) FROM T GROUP BY 1'),
  ('SELECT count(DISTINCT section) FROM T'),
  ('SELECT section, count(*) FILTER (WHERE essential) FROM T GROUP BY section')
) v(q);

-- ---------------------------------------------------------------------
-- What doc values cannot answer as rows would
-- ---------------------------------------------------------------------
-- a value longer than the keyword sub-field's ignore_above has no
-- keyword: such an index is grouped by PostgreSQL (not silently put in
-- the NULL group)
SELECT search_engine.create_index('fa_long', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"t": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 5}}}, "n": {"type": "long"}}}}')->'acknowledged';
SELECT search_engine.bulk(E'{"index": {"_id": "1"}}\n{"t": "abc", "n": 1}\n{"index": {"_id": "2"}}\n{"t": "abc", "n": 2}\n{"index": {"_id": "3"}}\n{"n": 3}\n',
                          'fa_long', refresh => 'true')->'errors';
CREATE FOREIGN TABLE fa_long (_id text, t text, n bigint) SERVER fa_se OPTIONS (index 'fa_long');
PREPARE fa_long_q AS SELECT t, count(*), sum(n) FROM fa_long GROUP BY t ORDER BY t NULLS FIRST;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE fa_long_q;
EXECUTE fa_long_q;
SELECT search_engine.bulk(E'{"index": {"_id": "4"}}\n{"t": "a long value", "n": 4}\n', 'fa_long', refresh => 'true')->'errors';
-- the plan made before fails rather than put "a long value" in the NULL group
EXECUTE fa_long_q;
DEALLOCATE fa_long_q;
RESET plan_cache_mode;
-- planned now: grouped by PostgreSQL, correctly
EXPLAIN (COSTS OFF) SELECT t, count(*), sum(n) FROM fa_long GROUP BY t;
SELECT t, count(*), sum(n) FROM fa_long GROUP BY t ORDER BY t NULLS FIRST;

-- a scalar column meeting several values fails, as reading rows does
SELECT search_engine.bulk(E'{"index": {"_id": "5"}}\n{"t": "x", "n": [5, 6]}\n', 'fa_long', refresh => 'true')->'errors';
SELECT sum(n) FROM fa_long WHERE t = 'x';
SELECT sum(n) FROM fa_long WHERE _id = '5';
SELECT n, count(*) FROM fa_long GROUP BY n;

-- sums past 2^53 (where doubles stop being exact) are exact: the engine
-- adds the integers in 128 bits for the FDW, past 2^63 too
SELECT search_engine.bulk(E'{"index": {"_id": "6"}}\n{"t": "big", "n": 9007199254740000}\n{"index": {"_id": "7"}}\n{"t": "big", "n": 9007199254740001}\n{"index": {"_id": "8"}}\n{"t": "huge", "n": 9223372036854775807}\n{"index": {"_id": "9"}}\n{"t": "huge", "n": 9223372036854775806}\n{"index": {"_id": "10"}}\n{"t": "huge", "n": 3}\n{"index": {"_id": "11"}}\n{"t": "neg", "n": -9223372036854775808}\n{"index": {"_id": "12"}}\n{"t": "neg", "n": -9223372036854775807}\n',
                          'fa_long', refresh => 'true')->'errors';
EXPLAIN (COSTS OFF) SELECT sum(n) FROM fa_long WHERE t = 'big';
SELECT sum(n), avg(n), sum(n::numeric) = sum(n) AS as_numeric FROM fa_long WHERE t = 'big';
SELECT sum(n), sum(n::numeric) = sum(n) AS as_numeric FROM fa_long WHERE t = 'huge';
SELECT t, sum(n), avg(n) FROM fa_long WHERE t IN ('big', 'huge', 'neg') GROUP BY t ORDER BY t;
-- equal to PostgreSQL's own sum and avg over a local copy
CREATE TEMP TABLE fa_long_copy (t text, n bigint);
INSERT INTO fa_long_copy VALUES ('big', 9007199254740000), ('big', 9007199254740001),
  ('huge', 9223372036854775807), ('huge', 9223372036854775806), ('huge', 3),
  ('neg', -9223372036854775808), ('neg', -9223372036854775807);
SELECT count(*) AS differing FROM (
  (SELECT t, sum(n), avg(n)::text FROM fa_long WHERE t IN ('big', 'huge', 'neg') GROUP BY t
   EXCEPT SELECT t, sum(n), avg(n)::text FROM fa_long_copy GROUP BY t)
  UNION ALL
  (SELECT t, sum(n), avg(n)::text FROM fa_long_copy GROUP BY t
   EXCEPT SELECT t, sum(n), avg(n)::text FROM fa_long WHERE t IN ('big', 'huge', 'neg') GROUP BY t)) d;
-- the same through the aggregations API: "exact_sum" (engine-private) adds "sum_exact"
SELECT a->'s'->>'sum_exact' AS stats_sum_exact, a->'v'->>'sum_exact' AS sum_sum_exact
  FROM (SELECT search_engine.search('fa_long', '{"size": 0, "query": {"term": {"t": "neg"}},
          "aggs": {"s": {"stats": {"field": "n", "exact_sum": true}}, "v": {"sum": {"field": "n", "exact_sum": true}}}}')->'aggregations' a) x;

DROP SCHEMA fa CASCADE;
DROP SERVER fa_se CASCADE;
DROP TABLE fa_src, fa_local;
DROP FUNCTION fa_same(text), fa_pushed(text);
SELECT search_engine.delete_index('fa_deb')->'acknowledged', search_engine.delete_index('fa_long')->'acknowledged';
