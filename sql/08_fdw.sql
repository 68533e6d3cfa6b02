-- Foreign data wrapper: indices as foreign tables (src/fdw).
-- The @@@ operator lives in schema search_engine: put it on the path.
SET search_path = public, search_engine;
\set SHOW_CONTEXT never

-- ---------------------------------------------------------------------
-- Data: the same documents in an index and, independently, in a table
-- ---------------------------------------------------------------------
CREATE TABLE fdw_src (id text, doc jsonb);
INSERT INTO fdw_src VALUES
 ('1', '{"name": "Trail running shoes", "brand": "acme", "price": 89.5, "qty": 10, "rating": 4.5, "tags": ["sport", "running"], "released": "2023-03-01T10:00:00Z", "active": true, "meta": {"color": "red"}}'),
 ('2', '{"name": "Leather boots", "brand": "bolt", "price": 150, "qty": 3, "rating": 3.9, "tags": ["boots"], "released": "2022-11-15", "active": false, "meta": {"color": "brown"}}'),
 ('3', '{"name": "Running socks", "brand": "acme", "price": 9.99, "qty": 100, "rating": 4.1, "tags": ["sport", "socks"], "active": true, "meta": {"color": "white"}}'),
 ('4', '{"name": "Hiking boots", "brand": "bolt", "price": 120, "qty": 5, "rating": 4.8, "tags": ["boots", "hiking"], "released": "2024-02-01T10:00:00.123Z", "active": true}'),
 ('5', '{"name": "Rain jacket", "brand": "cirrus", "price": 75, "qty": 0, "rating": null, "tags": ["outdoor"], "released": "2023-09-10", "active": true, "meta": {"color": "blue"}}'),
 ('6', '{"name": "Running shorts", "brand": "acme", "price": 25, "qty": 40, "rating": 3.5, "tags": ["sport", "running"], "released": "2023-05-05", "active": false, "meta": {"color": "black"}}'),
 ('7', '{"name": "Wool socks", "price": 12.5, "qty": 60, "rating": 4.0, "tags": ["socks"], "released": "2021-01-20", "active": true, "meta": {"color": "grey"}}'),
 ('8', '{"name": "Trail map", "brand": "dune", "qty": 7, "tags": [], "active": false}');

SELECT search_engine.create_index('fdw_products', '{
  "settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {
    "name": {"type": "text", "analyzer": "english", "fields": {"raw": {"type": "keyword"}}},
    "brand": {"type": "keyword"}, "price": {"type": "double"}, "qty": {"type": "integer"},
    "rating": {"type": "float"}, "tags": {"type": "keyword"}, "released": {"type": "date"},
    "active": {"type": "boolean"}, "meta": {"properties": {"color": {"type": "keyword"}}}}}}')->'acknowledged';
SELECT search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s"}}\n%s', id, doc), E'\n' ORDER BY id) || E'\n',
                          'fdw_products', refresh => 'true')->'errors'
  FROM fdw_src;

CREATE TABLE fdw_local AS
  SELECT id AS _id, doc->>'name' AS name, doc->>'brand' AS brand, (doc->>'price')::float8 AS price,
         (doc->>'qty')::int AS qty, (doc->>'rating')::real AS rating,
         nullif(ARRAY(SELECT jsonb_array_elements_text(doc->'tags')), '{}') AS tags,
         (doc->>'released')::timestamptz AS released, (doc->>'active')::boolean AS active,
         doc->'meta'->>'color' AS color
  FROM fdw_src;

-- ---------------------------------------------------------------------
-- Server, table, options
-- ---------------------------------------------------------------------
CREATE SERVER fdw_se FOREIGN DATA WRAPPER search_engine;
CREATE FOREIGN TABLE fdw_products (
  _id text, name text, brand text, price float8, qty int, rating real, tags text[],
  released timestamptz, active boolean, color text OPTIONS (field 'meta.color'),
  _score real, _source jsonb, _seq_no bigint
) SERVER fdw_se OPTIONS (index 'fdw_products');

-- bad options name the valid ones
CREATE SERVER fdw_bad FOREIGN DATA WRAPPER search_engine OPTIONS (host 'localhost');
CREATE FOREIGN TABLE fdw_bad (_id text) SERVER fdw_se;
CREATE FOREIGN TABLE fdw_bad (_id text) SERVER fdw_se OPTIONS (index 'fdw_products', colour 'red');
CREATE FOREIGN TABLE fdw_bad (_id text) SERVER fdw_se OPTIONS (index 'fdw_products', batch_size '0');
CREATE FOREIGN TABLE fdw_bad (_id text) SERVER fdw_se OPTIONS (index 'Bad*Name');
CREATE FOREIGN TABLE fdw_bad (_id text OPTIONS (field 'a..b')) SERVER fdw_se OPTIONS (index 'fdw_products');
CREATE USER MAPPING FOR CURRENT_USER SERVER fdw_se OPTIONS (user 'x');
-- column types that cannot hold the field fail when created (and altered)
CREATE FOREIGN TABLE fdw_bad (_id text, price integer) SERVER fdw_se OPTIONS (index 'fdw_products');
CREATE FOREIGN TABLE fdw_bad (_id text, active text, name boolean) SERVER fdw_se OPTIONS (index 'fdw_products');
CREATE FOREIGN TABLE fdw_bad (_id integer) SERVER fdw_se OPTIONS (index 'fdw_products');
CREATE FOREIGN TABLE fdw_ok (_id text, p float8 OPTIONS (field 'price')) SERVER fdw_se OPTIONS (index 'fdw_products');
ALTER FOREIGN TABLE fdw_ok ALTER COLUMN p TYPE date;
DROP FOREIGN TABLE fdw_ok;

-- ---------------------------------------------------------------------
-- Reading: every column type, arrays, nested fields, metadata
-- ---------------------------------------------------------------------
SELECT _id, name, brand, price, qty, rating, tags, released, active, color
  FROM fdw_products ORDER BY _id;
SELECT _id, _source->'meta' AS meta, _seq_no >= 0 AS has_seq_no FROM fdw_products WHERE _id = '1';

-- ---------------------------------------------------------------------
-- Pushdown: the same rows as PostgreSQL computes on the copy, and the
-- condition went to the engine (no local Filter)
-- ---------------------------------------------------------------------
CREATE FUNCTION fdw_check(c text, OUT cond text, OUT rows text, OUT same boolean, OUT pushed boolean)
LANGUAGE plpgsql AS $$
DECLARE a text; b text; plan json;
BEGIN
  EXECUTE format('SELECT string_agg(_id, '','' ORDER BY _id) FROM fdw_products WHERE %s', c) INTO a;
  EXECUTE format('SELECT string_agg(_id, '','' ORDER BY _id) FROM fdw_local WHERE %s', c) INTO b;
  EXECUTE format('EXPLAIN (VERBOSE, FORMAT JSON) SELECT _id FROM fdw_products WHERE %s', c) INTO plan;
  cond := c;
  rows := coalesce(a, '-');
  same := a IS NOT DISTINCT FROM b;
  pushed := (plan->0->'Plan'->>'Filter') IS NULL;
END $$;

SELECT (fdw_check(c)).* FROM (VALUES
  ('brand = ''acme'''), ('brand <> ''acme'''), ('NOT (brand = ''acme'')'), ('brand IN (''bolt'', ''dune'')'),
  ('brand NOT IN (''bolt'', ''dune'')'), ('brand IN (''bolt'', NULL)'), ('brand NOT IN (''bolt'', NULL)'),
  ('brand IS NULL'), ('brand IS NOT NULL'), ('brand LIKE ''ac%'''), ('brand NOT LIKE ''ac%'''), ('brand LIKE ''acme'''),
  ('price < 50'), ('price <= 75'), ('price > 100'), ('price >= 120'), ('NOT (price > 100)'), ('price BETWEEN 20 AND 100'),
  ('price NOT BETWEEN 20 AND 100'), ('price = 9.99'), ('price <> 150'), ('price IS NULL'), ('price < ''Infinity'''),
  ('price > ''NaN'''), ('price IN (''NaN'', 9.99, ''Infinity'')'), ('qty = 10'), ('qty IN (3, 5, 7)'), ('qty NOT IN (3, 5, 7)'), ('qty >= 40 OR price > 100'),
  ('NOT (qty >= 40 OR price > 100)'), ('rating > 4::real'), ('rating IS NULL'), ('active'), ('NOT active'),
  ('active IS NOT TRUE'), ('active IS FALSE'), ('released >= ''2023-01-01'''), ('released < ''2023-03-01 10:00:00+00'''),
  ('released = ''2024-02-01 10:00:00.123+00'''), ('released = ''2024-02-01 10:00:00.1234+00'''),
  ('released > ''2024-02-01 10:00:00.1229+00'''), ('released IS NULL'), ('color = ''red'''), ('color IS NULL'),
  ('''sport'' = ANY(tags)'), ('_id = ''3'''), ('_id IN (''1'', ''4'', ''zz'')'), ('_id <> ''1'''),
  ('name = ''Wool socks'''), ('(brand = ''acme'' AND NOT active) OR qty < 5'),
  ('name LIKE ''Run%'''), ('upper(brand) = ''ACME''')
) AS t(c);

-- what the engine receives
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT _id, name FROM fdw_products WHERE brand = 'acme' AND NOT (price > 50 OR qty < 20);
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT _id FROM fdw_products WHERE released >= now() - interval '10 years' AND name LIKE '%socks';

-- ---------------------------------------------------------------------
-- Full-text operator and _score: equal to search_engine.search
-- ---------------------------------------------------------------------
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT _id, _score FROM fdw_products WHERE name @@@ 'running shoe' ORDER BY _score DESC LIMIT 3;
SELECT f._id, f._score = h._score AS same_score, f.rank = h.rank AS same_rank
  FROM (SELECT _id, _score, row_number() OVER (ORDER BY _score DESC, _id) AS rank
          FROM fdw_products WHERE name @@@ 'running shoe') f
  FULL JOIN (SELECT _id, _score, row_number() OVER (ORDER BY _score DESC, _id) AS rank
               FROM search_engine.search_hits('fdw_products', '{"query": {"match": {"name": "running shoe"}}}')) h
  USING (_id) ORDER BY f.rank;
SELECT _id, _score FROM fdw_products WHERE name @@@ 'running shoe' ORDER BY _score DESC LIMIT 3;
SELECT _id, _score FROM search_engine.search_hits('fdw_products', '{"query": {"match": {"name": "running shoe"}}, "size": 3}');
-- the DSL forms: the row, the _source column; scoring and filtering mixed
SELECT _id FROM fdw_products p WHERE p @@@ '{"match_phrase": {"name": "running shoes"}}';
SELECT _id, _score > 0 AS scored FROM fdw_products
  WHERE _source @@@ '{"bool": {"must": {"match": {"name": "socks"}}}}' AND price < 12 ORDER BY _id;
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT _id FROM fdw_products WHERE (name @@@ 'boots' OR tags @@@ 'socks') AND NOT active;
SELECT _id FROM fdw_products WHERE (name @@@ 'boots' OR tags @@@ 'socks') AND NOT active ORDER BY _id;
SELECT _id FROM fdw_products WHERE NOT (name @@@ 'boots') ORDER BY _id;
-- _score without a scoring condition is the engine's constant
SELECT DISTINCT _score FROM fdw_products WHERE active;
-- a parameter in a prepared statement
PREPARE fdw_q(text, int) AS
  SELECT _id FROM fdw_products WHERE name @@@ $1 ORDER BY _score DESC, _id LIMIT $2;
EXECUTE fdw_q('socks', 5);
EXECUTE fdw_q('boots', 1);
EXECUTE fdw_q(NULL, 5);
DEALLOCATE fdw_q;
-- @@@ outside a pushed-down scan says what is wrong
SELECT * FROM fdw_local WHERE name @@@ 'boots';
SELECT _id FROM fdw_products WHERE name @@@ 'boots' OR upper(name) = 'X';
-- a bad DSL is the engine's error
SELECT _id FROM fdw_products WHERE fdw_products @@@ '{"frobnicate": {}}';

-- ---------------------------------------------------------------------
-- ORDER BY / LIMIT / OFFSET as the engine's sort, from, size
-- ---------------------------------------------------------------------
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT _id, price FROM fdw_products WHERE active ORDER BY price DESC LIMIT 2 OFFSET 1;
SELECT _id, price FROM fdw_products WHERE active ORDER BY price DESC LIMIT 2 OFFSET 1;
SELECT _id, price FROM fdw_local WHERE active ORDER BY price DESC LIMIT 2 OFFSET 1;
SELECT _id, price FROM fdw_products ORDER BY price NULLS FIRST, _id LIMIT 3;
SELECT _id, released FROM fdw_products ORDER BY released DESC NULLS LAST LIMIT 3;
SELECT _id, released FROM fdw_local ORDER BY released DESC NULLS LAST LIMIT 3;
-- a sort the engine cannot do, or a local filter, keeps LIMIT local
EXPLAIN (VERBOSE, COSTS OFF) SELECT _id FROM fdw_products ORDER BY name LIMIT 2;
EXPLAIN (VERBOSE, COSTS OFF) SELECT _id FROM fdw_products WHERE upper(name) > 'A' ORDER BY price LIMIT 2;
SELECT _id FROM fdw_products LIMIT 0;

-- ---------------------------------------------------------------------
-- Aggregates in the engine
-- ---------------------------------------------------------------------
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM fdw_products WHERE active;
SELECT count(*) FROM fdw_products WHERE active;
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT brand, count(*), count(price), min(price), max(price), sum(qty), avg(qty), avg(price), max(released)
  FROM fdw_products GROUP BY brand;
SELECT brand, count(*), count(price), min(price), max(price), sum(qty), avg(qty), avg(price), max(released)
  FROM fdw_products GROUP BY brand ORDER BY brand;
SELECT brand, count(*), count(price), min(price), max(price), sum(qty), avg(qty), avg(price), max(released)
  FROM fdw_local GROUP BY brand ORDER BY brand;
SELECT active, sum(rating), avg(rating), min(brand), max(brand) FROM fdw_products
  WHERE price IS NOT NULL GROUP BY active HAVING count(*) > 1 ORDER BY active;
SELECT active, sum(rating), avg(rating), min(brand), max(brand) FROM fdw_local
  WHERE price IS NOT NULL GROUP BY active HAVING count(*) > 1 ORDER BY active;
SELECT count(*), max(price) FROM fdw_products WHERE brand = 'nobody';
-- not pushable (a text field, an expression): computed by PostgreSQL
EXPLAIN (VERBOSE, COSTS OFF) SELECT max(name) FROM fdw_products;
SELECT max(name), sum(price * 2) FROM fdw_products;

-- ---------------------------------------------------------------------
-- Joins with ordinary tables: a parameterized scan does _id lookups
-- ---------------------------------------------------------------------
CREATE TABLE fdw_orders (order_id int, product_id text, brand text);
INSERT INTO fdw_orders VALUES (1, '1', 'acme'), (2, '4', 'bolt'), (3, '4', 'bolt'), (4, 'nope', 'x');
ANALYZE fdw_orders;
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT o.order_id, p.name FROM fdw_orders o JOIN fdw_products p ON p._id = o.product_id;
SELECT o.order_id, p.name FROM fdw_orders o JOIN fdw_products p ON p._id = o.product_id ORDER BY 1;
-- (with search_engine on the path, count(text) would be search_engine.count)
SELECT o.order_id, pg_catalog.count(p._id) FROM fdw_orders o LEFT JOIN fdw_products p ON p.brand = o.brand
  GROUP BY 1 ORDER BY 1;

-- ---------------------------------------------------------------------
-- Writes are buffered and sent at commit through the bulk path
-- ---------------------------------------------------------------------
INSERT INTO fdw_products (_id, name, brand, price, qty, tags, released, active, color)
  VALUES ('10', 'Trail gaiters', 'acme', 30, 8, '{sport,trail}', '2024-06-01 12:30:00.25+02', true, 'green');
SELECT _id, name, tags, released, color FROM fdw_products WHERE _id = '10';
SELECT search_engine.get_doc('fdw_products', '10')->'_source';
INSERT INTO fdw_products (name, price) VALUES ('No id', 1) RETURNING length(_id) AS generated_id_length;
DELETE FROM fdw_products WHERE name = 'No id';
-- an existing _id is a unique violation at commit; ON CONFLICT DO NOTHING skips it
INSERT INTO fdw_products (_id, name) VALUES ('10', 'duplicate');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fdw_products (_id, name) VALUES ('10', 'duplicate') ON CONFLICT DO NOTHING;
SELECT name FROM fdw_products WHERE _id = '10';
-- rollback discards, savepoints discard what they wrote
BEGIN;
INSERT INTO fdw_products (_id, name) VALUES ('11', 'rolled back');
UPDATE fdw_products SET price = 0 WHERE _id = '1';
DELETE FROM fdw_products WHERE _id = '2';
ROLLBACK;
SELECT _id, price FROM fdw_products WHERE _id IN ('1', '2', '11') ORDER BY 1;
BEGIN;
INSERT INTO fdw_products (_id, name) VALUES ('12', 'kept');
SAVEPOINT a;
INSERT INTO fdw_products (_id, name) VALUES ('13', 'dropped');
SAVEPOINT b;
INSERT INTO fdw_products (_id, name) VALUES ('14', 'dropped too');
ROLLBACK TO a;
INSERT INTO fdw_products (_id, name) VALUES ('15', 'kept too');
SAVEPOINT c;
INSERT INTO fdw_products (_id, name) VALUES ('16', 'kept as well');
RELEASE c;
-- not sent yet: the engine does not have them before COMMIT
SELECT search_engine.get_doc('fdw_products', '12')->'found' AS before_commit;
COMMIT;
SELECT _id, name FROM fdw_products WHERE _id BETWEEN '12' AND '16' ORDER BY 1;
-- UPDATE changes only the columns it sets (other fields of _source stay)
WITH u AS (UPDATE fdw_products SET price = price + 1, tags = NULL WHERE brand = 'bolt' RETURNING _id, price)
  SELECT * FROM u ORDER BY _id;
SELECT search_engine.get_doc('fdw_products', '2')->'_source';
UPDATE fdw_products SET _source = '{"name": "Replaced", "qty": 1}' WHERE _id = '15';
SELECT _id, name, qty, brand FROM fdw_products WHERE _id = '15';
BEGIN;
UPDATE fdw_products SET qty = 1 WHERE _id = '12';
UPDATE fdw_products SET price = 2 WHERE _id = '12';
COMMIT;
SELECT _id, qty, price FROM fdw_products WHERE _id = '12';
SELECT try($$UPDATE fdw_products SET _id = 'x' WHERE _id = '12'$$);
WITH d AS (DELETE FROM fdw_products WHERE _id IN ('12', '15', '16') RETURNING _id, name)
  SELECT * FROM d ORDER BY _id;
-- COPY FROM
COPY fdw_products (_id, name, brand, price) FROM stdin;
c1	Copied boots	bolt	99
c2	Copied socks	acme	4.5
\.
SELECT _id, name, brand, price FROM fdw_products WHERE _id LIKE 'c%' ORDER BY 1;
DELETE FROM fdw_products WHERE _id IN ('c1', 'c2');
-- a rejected item fails the commit and nothing of it stays applied
CREATE FOREIGN TABLE fdw_raw (_id text, qty text) SERVER fdw_se OPTIONS (index 'fdw_products', batch_size '1');
BEGIN;
INSERT INTO fdw_products (_id, name) VALUES ('20', 'first, applied then undone');
UPDATE fdw_products SET price = 1000 WHERE _id = '3';
INSERT INTO fdw_raw VALUES ('21', 'not a number');
INSERT INTO fdw_products (_id, name) VALUES ('22', 'never sent');
COMMIT;
SELECT _id, price FROM fdw_products WHERE _id IN ('3', '20', '21', '22') ORDER BY 1;
SELECT search_engine.get_doc('fdw_products', '20')->'found' AS undone;
-- a document changed by someone else after we read it fails the commit
BEGIN;
UPDATE fdw_products SET price = 1 WHERE _id = '7';
SELECT search_engine.update_doc('fdw_products', '7', '{"doc": {"price": 13}}')->>'result';
\set VERBOSITY terse
COMMIT;
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT price FROM fdw_products WHERE _id = '7';
BEGIN;
INSERT INTO fdw_products (_id) VALUES ('30');
PREPARE TRANSACTION 'fdw_2pc';
DROP FOREIGN TABLE fdw_raw;
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO fdw_products (_id, name) VALUES ('1', 'x');

-- ---------------------------------------------------------------------
-- Type errors at query time, with the column and the document
-- ---------------------------------------------------------------------
CREATE FOREIGN TABLE fdw_scalar (_id text, tags text) SERVER fdw_se OPTIONS (index 'fdw_products');
SELECT _id, tags FROM fdw_scalar WHERE _id = '1';
CREATE FOREIGN TABLE fdw_later (_id text, n int) SERVER fdw_se OPTIONS (index 'fdw_later');
SELECT search_engine.create_index('fdw_later', '{"mappings": {"properties": {"n": {"type": "keyword"}}}}')->'acknowledged';
SELECT * FROM fdw_later;
SELECT search_engine.delete_index('fdw_later')->'acknowledged';
DROP FOREIGN TABLE fdw_scalar, fdw_later;

-- ---------------------------------------------------------------------
-- ANALYZE samples through the engine
-- ---------------------------------------------------------------------
ANALYZE fdw_products;
SELECT reltuples FROM pg_class WHERE oid = 'fdw_products'::regclass;
SELECT attname, null_frac > 0 AS has_nulls FROM pg_stats
  WHERE tablename = 'fdw_products' AND attname IN ('brand', 'price', 'rating') ORDER BY attname;

-- ---------------------------------------------------------------------
-- IMPORT FOREIGN SCHEMA
-- ---------------------------------------------------------------------
SELECT search_engine.create_index('fdw_logs-a', '{"mappings": {"properties": {"msg": {"type": "text"}, "level": {"type": "keyword"}, "n": {"type": "long"}, "at": {"type": "date"}, "raw": {"type": "object", "enabled": false}}}}')->'acknowledged';
SELECT search_engine.create_index('fdw_logs-b', '{"mappings": {"properties": {"msg": {"type": "text"}}}}')->'acknowledged';
SELECT search_engine.bulk(E'{"index": {"_index": "fdw_logs-a", "_id": "1"}}\n{"msg": "hello", "level": ["info", "audit"], "n": 1, "at": "2024-01-01", "raw": {"x": 1}}\n', refresh => 'true')->'errors';
CREATE SCHEMA fdw_imp;
IMPORT FOREIGN SCHEMA "fdw_logs-*" FROM SERVER fdw_se INTO fdw_imp;
SELECT foreign_table_name FROM information_schema.foreign_tables WHERE foreign_table_schema = 'fdw_imp' ORDER BY 1;
SELECT column_name, data_type, udt_name FROM information_schema.columns
  WHERE table_schema = 'fdw_imp' AND table_name = 'fdw_logs-a' ORDER BY ordinal_position;
SELECT _id, msg, level, n, at, raw FROM fdw_imp."fdw_logs-a";
DROP SCHEMA fdw_imp CASCADE;
CREATE SCHEMA fdw_imp;
IMPORT FOREIGN SCHEMA "fdw_logs-*" LIMIT TO ("fdw_logs-b") FROM SERVER fdw_se INTO fdw_imp OPTIONS (source 'false');
IMPORT FOREIGN SCHEMA "fdw_logs-*" EXCEPT ("fdw_logs-b") FROM SERVER fdw_se INTO fdw_imp;
SELECT foreign_table_name FROM information_schema.foreign_tables WHERE foreign_table_schema = 'fdw_imp' ORDER BY 1;
SELECT column_name FROM information_schema.columns WHERE table_schema = 'fdw_imp' AND table_name = 'fdw_logs-b' ORDER BY ordinal_position;
IMPORT FOREIGN SCHEMA "no_such_index" FROM SERVER fdw_se INTO fdw_imp;
IMPORT FOREIGN SCHEMA "fdw_logs-a" FROM SERVER fdw_se INTO fdw_imp OPTIONS (colour 'red');
-- fields whose names share their first 63 bytes: the first gets a column,
-- the others are named in a warning and the rest of the table is imported;
-- a multi-byte name is cut on a character
SELECT search_engine.create_index('fdw_long', json_build_object('mappings', json_build_object('properties',
  json_build_object(repeat('a', 63) || '_one', json_build_object('type', 'keyword'),
                    repeat('a', 63) || '_two', json_build_object('type', 'long'),
                    repeat('a', 62) || 'é_x', json_build_object('type', 'keyword'),
                    'short', json_build_object('type', 'long'))))::jsonb)->'acknowledged';
IMPORT FOREIGN SCHEMA "fdw_long" FROM SERVER fdw_se INTO fdw_imp;
SELECT column_name, length(column_name) AS chars, octet_length(column_name) AS bytes
  FROM information_schema.columns WHERE table_schema = 'fdw_imp' AND table_name = 'fdw_long' ORDER BY ordinal_position;
SELECT search_engine.delete_index('fdw_long')->'acknowledged';
DROP SCHEMA fdw_imp CASCADE;

-- ---------------------------------------------------------------------
-- Clean up
-- ---------------------------------------------------------------------
DROP SERVER fdw_se CASCADE;
DROP TABLE fdw_src, fdw_local, fdw_orders;
DROP FUNCTION fdw_check(text);
SELECT search_engine.delete_index('fdw_products,fdw_logs-a,fdw_logs-b')->'acknowledged';
RESET search_path;
