-- Dynamic mapping, strict mappings, limits, bad documents.
SELECT search_engine.create_index('dyn', '{"settings": {"number_of_replicas": 0}}')->'acknowledged';
SELECT search_engine.index_doc('dyn', '1', '{"s": "some text", "i": 42, "f": 1.5, "b": true, "d": "2024-02-29T10:00:00Z", "o": {"x": "y", "n": {"deep": 1}}, "arr": ["a", "b"], "nul": null}', refresh => 'true')->>'result';
SELECT search_engine.get_mapping('dyn');
SELECT search_engine.count('dyn', '{"query": {"term": {"s.keyword": "some text"}}}');
SELECT search_engine.count('dyn', '{"query": {"term": {"o.n.deep": 1}}}');
SELECT search_engine.count('dyn', '{"query": {"range": {"d": {"gte": "2024-02-29", "lte": "2024-02-29T23:59:59Z"}}}}');
-- now "i" is a long: a string that is not a number fails that document
SELECT search_engine.index_doc('dyn', '2', '{"i": "forty-two"}');

SELECT search_engine.create_index('strict', '{"settings": {"number_of_replicas": 0}, "mappings": {"dynamic": "strict", "properties": {"a": {"type": "keyword"}}}}')->'acknowledged';
SELECT search_engine.index_doc('strict', '1', '{"a": "ok"}')->>'result';
SELECT search_engine.index_doc('strict', '2', '{"a": "ok", "b": 1}');

SELECT search_engine.create_index('limited', '{"settings": {"number_of_replicas": 0, "index.mapping.total_fields.limit": 3, "index.mapping.depth.limit": 2}}')->'acknowledged';
SELECT search_engine.index_doc('limited', '1', '{"a": 1, "b": 2, "c": 3, "d": 4}');
SELECT search_engine.index_doc('limited', '2', '{"a": {"b": {"c": 1}}}');
SELECT search_engine.index_doc('limited', '3', '{"a": 1}')->>'result';

-- malformed documents: clear errors, nothing indexed
SELECT mask(search_engine.bulk(E'{"index": {"_index": "dyn", "_id": "x1"}}\n{"a": 1, "a": 2}\n{"index": {"_index": "dyn", "_id": "x2"}}\n{"a": }\n')->'items');
-- invalid UTF-8 cannot even reach the engine: PostgreSQL rejects it at input
SELECT try($$SELECT search_engine.index_doc('dyn', 'u', convert_from('\x7b2261223a22ff227d', 'UTF8')::jsonb)$$);
SELECT search_engine.get_doc('dyn', 'x1')->'found', search_engine.get_doc('dyn', 'x2')->'found';
SELECT search_engine.delete_index('dyn')->'acknowledged', search_engine.delete_index('strict')->'acknowledged', search_engine.delete_index('limited')->'acknowledged';
