-- Response bodies are written from our JSON straight into jsonb's format
-- (src/api/jsonb_encode.c) instead of through a JsonbValue tree; the result
-- must be the very jsonb that jsonb_in makes of the same text: equal, the
-- same text, and the same size (the size catches a numeric in another form,
-- a missing pad or a wrong offset, which equality and text do not see).
-- Documents with numbers of every form, escapes, empty and nested
-- containers, and containers past jsonb's offset stride of 32 children.
SELECT status FROM search_engine.request('PUT', '/jb', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"dynamic": false}}');
CREATE TEMP TABLE jb_docs AS
SELECT 't' AS id, $j${"a":1,"b":-1,"c":0,"d":-0,"e":10000,"f":-100000000,"g":123456789012345678,"h":-999999999999999999,
  "i":1234567890123456789,"j":99999999999999999999999,"k":1.5,"l":-0.0,"m":1e3,"n":1.0E-10,"o":2.50,"p":1e-400,
  "q":"\u00e9\ud83d\ude00\n\t\"\\\/ snow \u2603","r":[],"s":{},"t":[1,[2,[3,{}]],{"z":null,"y":true,"x":false}],
  "u":{"dup":2,"aa":3,"b":4,"ccc":[]},"v":"","w":[""],"x":[[]],"y":[{}],"z":9999,"zz":100000001}$j$::text AS doc
UNION ALL
SELECT 'wide', (SELECT jsonb_object_agg('k' || i, CASE WHEN i % 3 = 0 THEN to_jsonb(i * 1.25) WHEN i % 3 = 1 THEN to_jsonb('v' || repeat('x', i)) ELSE to_jsonb(i) END)::text
                  FROM generate_series(1, 70) i)
UNION ALL
SELECT 'long', (SELECT jsonb_build_object('arr', jsonb_agg(CASE WHEN i % 4 = 0 THEN to_jsonb(i) WHEN i % 4 = 1 THEN to_jsonb(i || '') WHEN i % 4 = 2 THEN to_jsonb(i / 7.0) ELSE jsonb_build_object('i', i, 'l', jsonb_build_array(i, -i)) END))::text
                  FROM generate_series(1, 100) i);
SELECT id, status FROM jb_docs, search_engine.request('PUT', '/jb/_doc/' || id || '?refresh=true', doc) ORDER BY id;
-- get, mget, search and a scroll's pages: each body is the jsonb of its own
-- text.  Not through a table (it would compress them); a result row packs a
-- value of up to 127 bytes under a one-byte header: 3 bytes less.
CREATE FUNCTION pg_temp.row_size(j jsonb) RETURNS int LANGUAGE sql
  AS $$ SELECT CASE WHEN pg_column_size(j) - 3 <= 127 THEN pg_column_size(j) - 3 ELSE pg_column_size(j) END $$;
WITH jb_bodies AS (
SELECT 'get ' || id AS what, body FROM jb_docs, search_engine.request('GET', '/jb/_doc/' || id)
UNION ALL
SELECT 'mget', body FROM search_engine.request('POST', '/jb/_mget', '{"ids": ["t", "wide", "long", "none"]}')
UNION ALL
SELECT 'search', body FROM search_engine.request('POST', '/jb/_search', '{"sort": ["_doc"], "version": true}')
UNION ALL
SELECT 'scroll', body FROM search_engine.request('POST', '/jb/_search?scroll=1m', '{"size": 2, "sort": ["_doc"]}')
UNION ALL
SELECT 'error', body FROM search_engine.request('GET', '/jb/_doc/none')
UNION ALL
SELECT 'text', body FROM search_engine.request('GET', '/_cat/indices/jb?h=index'))
SELECT what, body = body::text::jsonb AS equal, body::text = body::text::jsonb::text AS same_text,
       pg_column_size(body) = pg_temp.row_size(body::text::jsonb) AS same_size
  FROM jb_bodies ORDER BY what;
-- each document comes back as it went in
SELECT d.id, r.body->'_source' = d.doc::jsonb AS same_source,
       (r.body->'_source')::text = d.doc::jsonb::text AS same_text,
       pg_column_size(r.body->'_source') = pg_column_size(d.doc::jsonb) AS same_size
  FROM jb_docs d, search_engine.request('GET', '/jb/_doc/' || d.id) r ORDER BY d.id;
SELECT r.body->'_source'->'a' AS a, r.body->'_source'->'g' AS g, r.body->'_source'->'j' AS j,
       r.body->'_source'->'l' AS l, r.body->'_source'->'n' AS n, r.body->'_source'->'o' AS o,
       r.body->'_source'->'q' AS q, r.body->'_source'->'u' AS u
  FROM search_engine.request('GET', '/jb/_doc/t') r;
SELECT status FROM search_engine.request('DELETE', '/_search/scroll/_all');
SELECT status FROM search_engine.request('DELETE', '/jb');
