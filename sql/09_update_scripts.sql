-- Scripts in _update and in bulk update actions (painless subset).
SELECT search_engine.create_index('us', '{"settings": {"number_of_replicas": 0}}')->'acknowledged';
SELECT search_engine.index_doc('us', '1', '{"counter": 1, "tags": ["a"]}')->>'result';
SELECT search_engine.update_doc('us', '1', '{"script": {"source": "ctx._source.counter += params.n; ctx._source.tags.add(params.t)", "params": {"n": 4, "t": "b"}}}')->>'result';
SELECT search_engine.get_doc('us', '1')->'_source';
-- ctx.op = noop leaves the version alone
SELECT r->>'result', r->'_version' FROM search_engine.update_doc('us', '1', '{"script": "ctx.op = \"noop\""}') AS r;
-- scripted upsert on a missing document
SELECT search_engine.update_doc('us', '2', '{"script": {"source": "ctx._source.counter = (ctx._source.counter ?: 0) + 1"}, "upsert": {"counter": 10}, "scripted_upsert": true}')->>'result';
SELECT search_engine.get_doc('us', '2')->'_source';
-- plain upsert skips the script when the document is missing
SELECT search_engine.update_doc('us', '3', '{"script": "ctx._source.counter += 1", "upsert": {"counter": 0}}')->>'result';
SELECT search_engine.get_doc('us', '3')->'_source';
-- ctx.op = delete
SELECT search_engine.update_doc('us', '3', '{"script": "ctx.op = \"delete\""}')->>'result';
SELECT search_engine.get_doc('us', '3')->'found';
-- errors: runtime (with position), compile, missing document, lang sql
SELECT search_engine.update_doc('us', '1', '{"script": "ctx._source.nothing.x = 1"}');
SELECT search_engine.update_doc('us', '1', '{"script": "ctx._source.counter += "}');
SELECT search_engine.update_doc('us', '404', '{"script": "ctx._source.counter += 1"}');
SELECT search_engine.update_doc('us', '1', '{"script": {"lang": "sql", "source": "$1"}}');
-- the same through bulk, one failing item among good ones
SELECT jsonb_path_query_array(search_engine.bulk(E'{"update": {"_index": "us", "_id": "1"}}\n{"script": "ctx._source.counter *= 2"}\n{"update": {"_index": "us", "_id": "2"}}\n{"script": "ctx._source.missing.x = 1"}\n')::jsonb, '$.items[*].update.status');
SELECT search_engine.get_doc('us', '1')->'_source'->'counter';
SELECT search_engine.delete_index('us')->'acknowledged';
