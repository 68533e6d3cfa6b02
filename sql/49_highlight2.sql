-- Highlighting, ES 8's unified highlighter (the default) and the rest of
-- the highlight options, hand-worked cases (fragments follow Lucene's
-- UnifiedHighlighter and ES's BoundedBreakIteratorScanner; see the header
-- of src/search/highlight.c).
SELECT status FROM search_engine.request('PUT', '/hl2', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"body": {"type": "text", "analyzer": "english", "fields": {"plain": {"type": "text", "analyzer": "standard"}}}, "title": {"type": "text"}, "tags": {"type": "keyword"}}}}');
SELECT status FROM search_engine.request('POST', '/hl2/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"title": ["The quick fox", "A slow turtle", "Another quick fox"], "body": "The quick brown fox jumps over the lazy dog. A brown bear is not quick at all! Is the fox quick? Dr. Smith said e.g. the fox runs 3.5 km. The end.", "tags": ["animal", "<fox>"]}\n{"index": {"_id": "2"}}\n{"title": "Running foxes", "body": "This very long sentence about a running fox goes on and on without any full stop for quite a while so that it is longer than the fragment size of one hundred bytes, and the fox keeps running."}\n{"index": {"_id": "3"}}\n{"title": "aaaa quick brown cccc", "body": "A fox sleeps here. Then the quick fox ran away."}\n');
-- sentences (UAX #29: "e.g. the" and "3.5" do not end one, "Dr. Smith"
-- does), whole ones up to fragment_size (100) from the match's sentence on
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"highlight_query": {"match": {"body": "quick fox"}}, "fields": {"body": {}}}}');
-- a sentence longer than fragment_size is cut at words around the match;
-- fragment_size 0: whole sentences
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["2"]}}, "highlight": {"highlight_query": {"match": {"body": "fox"}}, "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["2"]}}, "highlight": {"highlight_query": {"match": {"body": "fox"}}, "fields": {"body": {"fragment_size": 0}}}}');
-- passage scores (Lucene's PassageScorer): "A fox sleeps here." 1.07,
-- "Then the quick fox ran away." 2.45 (two terms, quick the rarer)
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["3"]}}, "highlight": {"highlight_query": {"match": {"body": "quick fox"}}, "fragment_size": 0, "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["3"]}}, "highlight": {"highlight_query": {"match": {"body": "quick fox"}}, "fragment_size": 0, "order": "score", "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["3"]}}, "highlight": {"highlight_query": {"match": {"body": "quick fox"}}, "fragment_size": 0, "number_of_fragments": 1, "fields": {"body": {}}}}');
-- boundary_scanner word: each match's word; chars (fvh): boundary_chars
-- within boundary_max_scan of a fragment_size window
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"boundary_scanner": "word", "highlight_query": {"match": {"body": "quick fox"}}, "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"type": "fvh", "boundary_scanner": "chars", "fragment_size": 20, "highlight_query": {"match": {"body": "bear"}}, "fields": {"body": {}}}}');
-- a phrase only where it matches (not "brown bear", not "not quick"), with slop
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"match_phrase": {"body": "quick brown"}}, "highlight": {"fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"match_phrase": {"body": {"query": "fox quick", "slop": 2}}}, "highlight": {"fields": {"body": {}}}}');
-- multi-term queries through their automata: fuzzy, fuzziness, wildcard,
-- regexp, query_string (a field's prefix and a phrase); each value of an
-- array its own fragments
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"fuzzy": {"title": "quikc"}}, "highlight": {"fields": {"title": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"match": {"title": {"query": "turtel", "fuzziness": "AUTO"}}}, "highlight": {"fields": {"title": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"wildcard": {"title": "qu?c*"}}, "highlight": {"fields": {"title": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"regexp": {"title": "tur.*|sl[aeiou]w"}}, "highlight": {"fields": {"title": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"query_string": {"query": "title:anoth* AND body:\"lazy dog\""}}, "highlight": {"fields": {"title": {}, "body": {}}}}');
-- matched_fields: the english field's stems and the standard sub-field's words
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"match": {"body": "jumping"}}, "highlight": {"fields": {"body": {"type": "fvh", "matched_fields": ["body", "body.plain"]}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"bool": {"should": [{"match": {"body": "running"}}, {"match": {"body.plain": "keeps"}}]}}, "highlight": {"fields": {"body": {"matched_fields": ["body", "body.plain"]}}}}');
-- plain: the span fragmenter does not cut a phrase, simple does
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"match_phrase": {"title": "quick brown"}}, "highlight": {"type": "plain", "fragment_size": 12, "number_of_fragments": 1, "fields": {"title": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"match_phrase": {"title": "quick brown"}}, "highlight": {"type": "plain", "fragmenter": "simple", "fragment_size": 12, "number_of_fragments": 1, "fields": {"title": {}}}}');
-- no_match_size: to the word boundary after it; encoder html
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"no_match_size": 10, "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"term": {"tags": "<fox>"}}, "highlight": {"encoder": "html", "pre_tags": "<b>", "post_tags": "</b>", "fields": {"tags": {}}}}');
-- max_analyzed_offset: the request's truncates the analysis (terms past
-- it are not tagged); text longer than the index's limit is ES's error
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"max_analyzed_offset": 50, "highlight_query": {"match": {"body": "quick fox"}}, "fields": {"body": {}}}}');
SELECT status FROM search_engine.request('PUT', '/hl2/_settings', '{"index": {"highlight.max_analyzed_offset": 60}}');
SELECT body->'hl2'->'settings'->'index'->'highlight' AS setting FROM search_engine.request('GET', '/hl2/_settings');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"fields": {"body": {}}}}');
SELECT status, body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/hl2/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"max_analyzed_offset": 30, "highlight_query": {"match": {"body": "fox"}}, "fields": {"body": {}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/hl2/_settings', '{"index": {"highlight.max_analyzed_offset": 0}}');
-- errors
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/hl2/_search', '{"highlight": {"type": "foo", "fields": {"body": {}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/hl2/_search', '{"highlight": {"max_analyzed_offset": 0, "fields": {"body": {}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/hl2/_search', '{"highlight": {"fields": {"body": {"boundary_scanner": "line"}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/hl2/_search', '{"highlight": {"fields": {"body": {"type": "plain", "fragmenter": "none"}}}}');
SELECT status FROM search_engine.request('DELETE', '/hl2');
