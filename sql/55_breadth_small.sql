-- Issue 17 leftovers (session 15, "small"): each case below failed before
-- its change.
--
-- 1. Highlighting counts fragment_size and no_match_size in UTF-16 units as
-- ES (Java strings) does, not bytes: "é" is 1 unit (2 bytes), "😀" 2 units
-- (4 bytes, 1 code point).
SELECT status FROM search_engine.request('PUT', '/bsm_hl', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"body": {"type": "text"}}}}');
SELECT status FROM search_engine.request('POST', '/bsm_hl/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"body": "The fox sleeps here. Café crème brûlée à côté. The end."}\n{"index": {"_id": "2"}}\n{"body": "The fox sleeps here. Nice 😀 day. The end."}\n{"index": {"_id": "3"}}\n{"body": "Café crème brûlée fox à côté été"}\n{"index": {"_id": "4"}}\n{"body": "Ça été très café"}\n');
-- unified: sentences "The fox sleeps here. " (21 units) and "Café crème
-- brûlée à côté. " (26 units, 33 bytes) fit fragment_size 47 together
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/bsm_hl/_search', '{"query": {"ids": {"values": ["1"]}}, "highlight": {"highlight_query": {"match": {"body": "fox"}}, "fragment_size": 47, "fields": {"body": {}}}}');
-- "Nice 😀 day. " is 13 units (12 code points, 15 bytes): 21 + 13 = 34
-- fits 34, not 33
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/bsm_hl/_search', '{"query": {"ids": {"values": ["2"]}}, "highlight": {"highlight_query": {"match": {"body": "fox"}}, "fragment_size": 34, "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/bsm_hl/_search', '{"query": {"ids": {"values": ["2"]}}, "highlight": {"highlight_query": {"match": {"body": "fox"}}, "fragment_size": 33, "fields": {"body": {}}}}');
-- plain: "brûlée" ends at unit 17 (byte 20), within fragment_size 18 of
-- the start; "fox" (ends at 21) starts the next fragment
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/bsm_hl/_search', '{"query": {"ids": {"values": ["3"]}}, "highlight": {"type": "plain", "highlight_query": {"match": {"body": "fox"}}, "fragment_size": 18, "fields": {"body": {}}}}');
-- no_match_size 3: unified to the word boundary after unit 3 (the start
-- of "été"); plain: the tokens ending within 8 units ("Ça été")
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/bsm_hl/_search', '{"query": {"ids": {"values": ["4"]}}, "highlight": {"highlight_query": {"match": {"body": "zzz"}}, "no_match_size": 3, "fields": {"body": {}}}}');
SELECT body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/bsm_hl/_search', '{"query": {"ids": {"values": ["4"]}}, "highlight": {"type": "plain", "highlight_query": {"match": {"body": "zzz"}}, "no_match_size": 8, "fields": {"body": {}}}}');
SELECT status FROM search_engine.request('DELETE', '/bsm_hl');
