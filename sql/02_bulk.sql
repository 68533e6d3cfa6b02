-- Bulk indexing, per-item results, versioning, conflicts, realtime get.
SELECT mask(search_engine.bulk($$
{"index": {"_index": "products", "_id": "1"}}
{"name": "Running shoes for trail running", "price": 89.5, "qty": 3, "tags": ["sport", "shoes"], "released": "2023-04-01", "active": true}
{"index": {"_index": "products", "_id": "2"}}
{"name": "Road running shoe", "price": 120, "qty": 0, "tags": ["sport"], "released": "2024-01-15T10:00:00Z", "active": false}
{"create": {"_index": "products", "_id": "3"}}
{"name": "Leather boots", "price": 150.25, "qty": 7, "tags": ["boots"], "released": "2022-11-30", "active": true}
{"index": {"_index": "products", "_id": "4"}}
{"name": "Wool socks, the warmest socks", "price": 9.99, "qty": 100, "tags": ["socks", "wool"], "active": true}
$$, refresh => 'true'));

-- create of an existing id: 409 for that item only
SELECT mask(search_engine.bulk($$
{"create": {"_index": "products", "_id": "3"}}
{"name": "dup"}
{"index": {"_index": "products", "_id": "5"}}
{"name": "Sandals", "price": 30, "qty": 1}
$$));

-- the answer is ES's JSON text, in ES's key order (json, not jsonb)
SELECT pg_typeof(r), regexp_replace(regexp_replace(r::text, '"took":[0-9]+', '"took":0'),
                                    '"index_uuid":"[^"]*"', '"index_uuid":"-"')
  FROM search_engine.bulk($$
{"index": {"_index": "es_order", "_id": "1"}}
{"name": "Sandals"}
{"create": {"_index": "es_order", "_id": "1"}}
{"name": "dup"}
{"delete": {"_index": "es_order", "_id": "nope \" \\ \u00e9"}}
$$) AS r;
SELECT search_engine.delete_index('es_order')->>'acknowledged';

-- a value that does not fit its mapping fails that item only
SELECT mask(search_engine.bulk($$
{"index": {"_index": "products", "_id": "6"}}
{"name": "Bad price", "price": "cheap"}
{"index": {"_index": "products", "_id": "7"}}
{"name": "Not json
{"delete": {"_index": "products", "_id": "404"}}
{"index": {"_index": "products", "_id": "8"}}
["not", "an", "object"]
$$));

-- request-level errors fail the whole bulk
SELECT search_engine.bulk('{"index": {"_index": "products"}');
SELECT search_engine.bulk('{"frobnicate": {"_index": "products", "_id": "1"}}
{}');
SELECT search_engine.bulk('{"index": {"_id": "1"}}
{}');
SELECT search_engine.bulk('');

-- realtime get sees unrefreshed writes
SELECT mask(search_engine.get_doc('products', '5'));
SELECT mask(search_engine.get_doc('products', '6'));
SELECT search_engine.get_doc('nope', '1');

-- versions and seq_no move forward; update merges partial docs
SELECT mask(search_engine.index_doc('products', '5', '{"name": "Sandals", "price": 35, "qty": 2}'));
SELECT mask(search_engine.update_doc('products', '5', '{"doc": {"qty": 5, "color": "brown"}}'));
SELECT search_engine.get_doc('products', '5')->'_source';
-- noop update
SELECT mask(search_engine.update_doc('products', '5', '{"doc": {"qty": 5}}'))->>'result';
-- upsert
SELECT mask(search_engine.update_doc('products', '9', '{"doc": {"name": "Cap"}, "doc_as_upsert": true}'));
SELECT search_engine.update_doc('products', '10', '{"doc": {"name": "x"}}');

-- optimistic concurrency with if_seq_no / if_primary_term
SELECT (search_engine.get_doc('products', '5')->>'_seq_no')::bigint AS seq \gset
SELECT mask(search_engine.index_doc('products', '5', '{"name": "Sandals v2"}', if_seq_no => :seq, if_primary_term => 1))->>'result';
SELECT search_engine.index_doc('products', '5', '{"name": "Sandals v3"}', if_seq_no => :seq, if_primary_term => 1);
SELECT search_engine.index_doc('products', '3', '{"name": "again"}', op_type => 'create');

-- delete
SELECT mask(search_engine.delete_doc('products', '9'));
SELECT search_engine.get_doc('products', '9');
SELECT search_engine.delete_doc('products', '9');

-- auto-generated ids: 20 characters, created
SELECT length(search_engine.index_doc('products', NULL, '{"name": "auto"}')->>'_id');
SELECT (r->'items'->0->'index'->>'result'), length(r->'items'->0->'index'->>'_id')
  FROM search_engine.bulk('{"index": {"_index": "products"}}
{"name": "auto bulk"}') AS r;

-- mget
SELECT mask(search_engine.mget('{"docs": [{"_index": "products", "_id": "1"}, {"_index": "products", "_id": "nope"}, {"_index": "missing", "_id": "1"}]}'));
SELECT jsonb_path_query_array(search_engine.mget('{"ids": ["2", "3"]}', 'products'), '$.docs[*]._id');

-- bulk into a missing index creates it (action.auto_create_index)
SELECT search_engine.bulk('{"index": {"_index": "autocreated", "_id": "1"}}
{"msg": "hello world", "n": 1, "ok": true, "when": "2024-05-01T12:00:00Z", "ratio": 0.5}', refresh => 'true')->'errors';
SELECT search_engine.get_mapping('autocreated');

SELECT search_engine.refresh('products')->'_shards';
SELECT search_engine.count('products');
SELECT name, threads, queue, queue_size, rejected FROM search_engine.thread_pool;

-- responses are the jsonb that jsonb_in builds from the ES body: key order
-- (length, then bytes; more than 16 keys take the sorted path), numbers as
-- written (scale, exponent, -0, past int64), escapes (\u0000: 13_bad_input)
SELECT search_engine.create_index('shapes', '{"mappings": {"dynamic": false}}')->'acknowledged';
SELECT search_engine.bulk('{"index": {"_index": "shapes", "_id": "1"}}
{"zeta": 1, "b": 1.50, "a": [1, -0, 1e3, 2E-2, 12345678901234567890, 999999999999999999, -999999999999999999, 0.000, []], "ü": "\u00fc\"\\\n", "ab": {}, "aa": {"z": null, "y": [true, false]}, "k01": 1, "k09": 9, "k05": 5, "k03": 3, "k07": 7, "k02": 2, "k08": 8, "k04": 4, "k06": 6, "k10": 10, "k11": 11, "k12": 12}
', refresh => 'true')->'errors';
SELECT s, s::text = '{"zeta": 1, "b": 1.50, "a": [1, -0, 1e3, 2E-2, 12345678901234567890, 999999999999999999, -999999999999999999, 0.000, []], "ü": "\u00fc\"\\\n", "ab": {}, "aa": {"z": null, "y": [true, false]}, "k01": 1, "k09": 9, "k05": 5, "k03": 3, "k07": 7, "k02": 2, "k08": 8, "k04": 4, "k06": 6, "k10": 10, "k11": 11, "k12": 12}'::jsonb::text AS same
  FROM (SELECT search_engine.get_doc('shapes', '1')->'_source' AS s) AS t;
SELECT search_engine.get_doc('shapes', '1') = (search_engine.get_doc('shapes', '1')::text)::jsonb;
SELECT search_engine.delete_index('shapes')->'acknowledged';

-- a write worker with nothing else queued acknowledges a bulk once its items
-- are checked and logged, and indexes them afterwards (engine.c, deferred
-- indexing): within one bulk, repeated ids, creates, updates and deletes
-- must see what came before them, and realtime gets and searches after the
-- answer must see all of it
SELECT search_engine.create_index('deferred', '{"settings": {"number_of_shards": 1, "refresh_interval": "-1"}, "mappings": {"properties": {"t": {"type": "text"}, "k": {"type": "keyword"}, "big": {"type": "text", "analyzer": "keyword"}}}}')->'acknowledged';
SELECT string_agg(x.s, ' ' ORDER BY o) FROM json_array_elements(search_engine.bulk(format($$
{"index": {"_index": "deferred", "_id": "a"}}
{"t": "first words", "k": "x"}
{"index": {"_index": "deferred", "_id": "a"}}
{"t": "second words", "k": "y"}
{"create": {"_index": "deferred", "_id": "a"}}
{"t": "never"}
{"update": {"_index": "deferred", "_id": "a"}}
{"doc": {"n": 7}}
{"index": {"_index": "deferred", "_id": "b"}}
{"t": "to be deleted"}
{"delete": {"_index": "deferred", "_id": "b"}}
{"index": {"_index": "deferred", "_id": "c"}}
{"t": "bad", "k": {"not": "a keyword"}}
{"index": {"_index": "deferred", "_id": "d"}}
{"big": "%s"}
{"index": {"_index": "deferred", "_id": "e"}}
{"big": "%s", "t": "long enough to analyze now"}
{"index": {"_index": "deferred", "_id": "f"}}
{"t": "last words"}
$$, repeat('z', 10000), repeat('z', 40000)))->'items')
  WITH ORDINALITY AS t(i, o), LATERAL (SELECT (SELECT k || ':' || (v->>'status') || coalesce(':' || (v->>'_version'), '') || coalesce(':' || (v->'error'->>'type'), '') FROM json_each(i) AS e(k, v)) AS s) AS x;
SELECT search_engine.get_doc('deferred', 'a')->'_source', search_engine.get_doc('deferred', 'a')->'_version',
       search_engine.get_doc('deferred', 'b')->'found', search_engine.get_doc('deferred', 'f')->'found';
SELECT search_engine.refresh('deferred')->'_shards'->'failed';
SELECT jsonb_path_query_array(search_engine.search('deferred', '{"query": {"match": {"t": "words"}}, "sort": ["_doc"]}'), '$.hits.hits[*]._id'),
       search_engine.count('deferred', ('{"query": {"term": {"big": "' || repeat('z', 10000) || '"}}}')::jsonb),
       search_engine.count('deferred', '{"query": {"match": {"k": "y"}}}');
-- more _source than a shard lets wait (8 MB) is indexed as it goes
SELECT search_engine.bulk((SELECT string_agg(format(E'{"index": {"_index": "deferred", "_id": "m%s"}}\n{"k": "m", "t": "%s"}', g, repeat('word ', 200000)), E'\n') || E'\n' FROM generate_series(1, 12) g))->'errors';
SELECT search_engine.get_doc('deferred', 'm12')->'found', search_engine.refresh('deferred')->'_shards'->'failed',
       search_engine.count('deferred', '{"query": {"term": {"k": "m"}}}');
SELECT search_engine.delete_index('deferred')->'acknowledged';

-- a bulk larger than the whole indexing pressure limit is rejected (429),
-- as ES's coordinating check does, even on an idle node
ALTER SYSTEM SET search_engine.indexing_pressure_limit = '64kB';
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SHOW search_engine.indexing_pressure_limit;
SELECT r->>'errors' AS errors, jsonb_path_query_array(r, '$.items[*].index.status') AS statuses,
       r->'items'->0->'index'->'error'->>'type' AS type,
       r->'items'->0->'index'->'error'->>'reason' LIKE 'rejected execution of coordinating operation%' AS coordinating
  FROM (SELECT search_engine.bulk(
          '{"index": {"_index": "pressure", "_id": "1"}}' || E'\n' ||
          json_build_object('big', repeat('x', 70000))::text || E'\n' ||
          '{"index": {"_index": "pressure", "_id": "2"}}' || E'\n{"small": 1}\n')::jsonb AS r) b;
SELECT r->>'errors' AS errors_when_small
  FROM (SELECT search_engine.bulk('{"index": {"_index": "pressure", "_id": "3"}}' || E'\n{"small": 1}\n')::jsonb AS r) b;
ALTER SYSTEM RESET search_engine.indexing_pressure_limit;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SELECT search_engine.delete_index('pressure')->>'acknowledged' AS deleted;
