-- Highlighting (ES 8 "highlight"), hand-worked cases: the query's terms
-- (match analyzed with the field's analyzer, term, prefix; not must_not)
-- tagged in the field's values re-analyzed from _source; fragments cut as
-- Lucene's plain highlighter with type plain (runs of tokens of about
-- fragment_size bytes, the best number_of_fragments in text order; the
-- default unified highlighter's sentences are 49_highlight2's), number_of_fragments 0 for
-- whole values, no_match_size, require_field_match, field wildcards and
-- multi-fields (their parent's values), pre/post tags, highlight_query.
SELECT status FROM search_engine.request('PUT', '/hl', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"title": {"type": "text", "fields": {"raw": {"type": "keyword"}}}, "body": {"type": "text"}, "tag": {"type": "keyword"}}}}');
SELECT status FROM search_engine.request('POST', '/hl/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"title": "The quick brown fox", "body": "A quick brown fox jumps over the lazy dog. Foxes are quick and clever animals that live in many places around the world, and the fox is known for its cunning.", "tag": "fox"}\n{"index": {"_id": "2"}}\n{"title": "Lazy dogs", "body": "Nothing here matches the words we search for at all.", "tag": "dog"}\n{"index": {"_id": "3"}}\n{"title": ["Fox one", "no match", "fox two"], "body": "x"}\n');
-- default: 100-byte fragments, <em>, the query's field only
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"match": {"body": "fox quick"}}, "highlight": {"type": "plain", "fields": {"body": {}}}}');
-- smaller fragments, the best two in text order; order: score puts the best first
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"match": {"body": "fox"}}, "highlight": {"type": "plain", "fragment_size": 40, "number_of_fragments": 2, "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"match": {"body": "fox quick"}}, "highlight": {"type": "plain", "order": "score", "fields": {"body": {"fragment_size": 40, "number_of_fragments": 1}}}}');
-- number_of_fragments 0: whole values; tags; a wildcard over fields
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"match": {"body": "fox"}}, "highlight": {"pre_tags": ["<b>"], "post_tags": ["</b>"], "number_of_fragments": 0, "fields": {"*": {}}}}');
-- require_field_match false: the terms of any field; a keyword and a multi-field
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"match": {"body": "fox"}}, "highlight": {"require_field_match": false, "fields": {"title": {}, "tag": {}, "title.raw": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"term": {"title.raw": "The quick brown fox"}}, "highlight": {"fields": {"title.raw": {}}}}');
-- values of an array: each matching one, no_match_size when none matched
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"ids": {"values": ["3"]}}, "highlight": {"highlight_query": {"match": {"title": "fox"}}, "fields": {"title": {}}}}');
SELECT jsonb_object_agg(h->>'_id', h->'highlight') AS highlights
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"bool": {"should": [{"term": {"tag": "dog"}}, {"match": {"body": "fox"}}], "must_not": {"match": {"body": "lazy"}}}}, "highlight": {"no_match_size": 20, "fields": {"body": {}}}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;
SELECT jsonb_object_agg(h->>'_id', h->'highlight') AS highlights
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"bool": {"should": [{"term": {"tag": "dog"}}, {"match": {"body": "fox"}}]}}, "highlight": {"no_match_size": 20, "fields": {"body": {}}}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;
-- a prefix query's matching tokens
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"query": {"prefix": {"body": "cle"}}, "highlight": {"type": "plain", "fields": {"body": {"fragment_size": 30, "number_of_fragments": 1}}}}');
-- with _source off the highlight still comes from it
SELECT body->'hits'->'hits'->0 ? '_source' AS has_source, body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl/_search', '{"_source": false, "query": {"match": {"title": "brown"}}, "highlight": {"fields": {"title": {}}}}');
-- errors
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/hl/_search', '{"highlight": {"foo": 1}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/hl/_search', '{"highlight": {"pre_tags": ["<b>"]}}');
SELECT status FROM search_engine.request('DELETE', '/hl');
