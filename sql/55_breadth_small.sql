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

-- 3. Decay functions' explanations as ES 8's DecayFunctionBuilder prints
-- them: multi_value_mode over each value's distance, the scale as
-- processed, numbers as Java's doubles (dates in ms: 1.7040672E12).
SELECT status FROM search_engine.request('PUT', '/bsm_decay', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "long"}, "d": {"type": "date"}}}}');
SELECT status FROM search_engine.request('POST', '/bsm_decay/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"n": 5, "d": "2024-01-11"}\n{"index": {"_id": "2"}}\n{"n": [3, 8]}\n{"index": {"_id": "3"}}\n{"d": "2024-01-01"}\n');
-- gauss: 0.5*10^2/ln(0.5) = -72.13475204444818
SELECT e->>'value' AS value, e->'details'->0->>'description' AS description
  FROM search_engine.request('POST', '/bsm_decay/_search', '{"explain": true, "query": {"function_score": {"query": {"ids": {"values": ["1", "3"]}}, "functions": [{"gauss": {"n": {"origin": 0, "scale": 10}}}], "boost_mode": "replace"}}, "sort": ["_doc"]}') r,
       jsonb_path_query(r.body, 'strict $.hits.hits[*]._explanation.** ? (@.description starts with "Function for field")') e;
-- exp on a date: ln(0.5)/10d in ms, offset 1d
SELECT e->>'value' AS value, e->'details'->0->>'description' AS description
  FROM search_engine.request('POST', '/bsm_decay/_search', '{"explain": true, "query": {"function_score": {"query": {"ids": {"values": ["1"]}}, "functions": [{"exp": {"d": {"origin": "2024-01-01", "scale": "10d", "offset": "1d"}}}], "boost_mode": "replace"}}}') r,
       jsonb_path_query(r.body, 'strict $.hits.hits[*]._explanation.** ? (@.description starts with "Function for field")') e;
-- linear, multi_value_mode max over two values: 4/(1-0.5) = 8.0
SELECT e->>'value' AS value, e->'details'->0->>'description' AS description
  FROM search_engine.request('POST', '/bsm_decay/_search', '{"explain": true, "query": {"function_score": {"query": {"ids": {"values": ["2"]}}, "functions": [{"linear": {"n": {"origin": 10, "scale": 4}, "multi_value_mode": "max"}}], "boost_mode": "replace"}}}') r,
       jsonb_path_query(r.body, 'strict $.hits.hits[*]._explanation.** ? (@.description starts with "Function for field")') e;
SELECT status FROM search_engine.request('DELETE', '/bsm_decay');

-- 4. match_phrase_prefix is one MultiPhraseQuery (Lucene's): "quick bro"
-- expands to brown and brownie, its last position their union; idf sums
-- every term's: quick (n 2) 0.47000363 + brown (n 3) 0.13353139 +
-- brownie (n 1) 0.98082925 = 1.5843643 (N 3, avgdl 8/3); doc 1 (freq 1,
-- length 2): 1.5843643 * 1 / (1 + 1.2 * (0.25 + 0.75 * 2 / 2.6666667))
-- = 0.8022098; doc 2 holds both phrases, freq 2 in one union (length 4):
-- 1.5843643 * 2 / (2 + 1.65) = 0.8681448.
SELECT status FROM search_engine.request('PUT', '/bsm_mpp', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"t": {"type": "text"}}}}');
SELECT status FROM search_engine.request('POST', '/bsm_mpp/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"t": "quick brown"}\n{"index": {"_id": "2"}}\n{"t": "quick brownie quick brown"}\n{"index": {"_id": "3"}}\n{"t": "slow brown"}\n');
SELECT h->>'_id' AS id, h->>'_score' AS score
  FROM search_engine.request('POST', '/bsm_mpp/_search', '{"query": {"match_phrase_prefix": {"t": "quick bro"}}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;
SELECT e->>'description' AS weight, e->'details'->0->>'description' AS score,
       e->'details'->0->'details'->0->>'value' AS idf,
       jsonb_array_length(e->'details'->0->'details'->0->'details') AS idf_terms
  FROM search_engine.request('POST', '/bsm_mpp/_search', '{"explain": true, "query": {"match_phrase_prefix": {"t": "quick bro"}}}') r,
       LATERAL (SELECT r.body->'hits'->'hits'->0->'_explanation' AS e) x;
SELECT status FROM search_engine.request('DELETE', '/bsm_mpp');

-- 5. FDW: count / min / max of a text column through its keyword
-- sub-field (as GROUP BY), min / max where the collation orders as bytes;
-- int8 min / max exact past 2^53 (the engine's exact integer bounds).
SELECT search_engine.create_index('bsm_fdw', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"t": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 8}}}, "n": {"type": "long"}}}}')->'acknowledged';
SELECT search_engine.bulk(E'{"index": {"_id": "1"}}\n{"t": "pear", "n": 9007199254740993}\n{"index": {"_id": "2"}}\n{"t": "Apple", "n": -9223372036854775807}\n{"index": {"_id": "3"}}\n{"n": 9223372036854775806}\n{"index": {"_id": "4"}}\n{"t": "éclair", "n": 5}\n{"index": {"_id": "5"}}\n{"t": "", "n": 9007199254740993}\n',
                          'bsm_fdw', refresh => 'true')->'errors';
CREATE SERVER bsm_se FOREIGN DATA WRAPPER search_engine;
CREATE FOREIGN TABLE bsm_fdw (_id text, t text, n bigint) SERVER bsm_se OPTIONS (index 'bsm_fdw');
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(t), min(t COLLATE "C"), max(t COLLATE "C") FROM bsm_fdw;
SELECT count(t), min(t COLLATE "C"), max(t COLLATE "C") FROM bsm_fdw;
EXPLAIN (COSTS OFF) SELECT min(n), max(n) FROM bsm_fdw;
SELECT min(n), max(n) FROM bsm_fdw;
SELECT n, count(t), min(t COLLATE "C"), max(n) FROM bsm_fdw GROUP BY n ORDER BY n;
-- a value past the keyword's ignore_above has no doc value: a plan made
-- before it fails, one made after aggregates in PostgreSQL
PREPARE bsm_q AS SELECT count(t) FROM bsm_fdw;
SET plan_cache_mode = force_generic_plan;
EXECUTE bsm_q;
SELECT search_engine.bulk(E'{"index": {"_id": "6"}}\n{"t": "a long value", "n": 6}\n', 'bsm_fdw', refresh => 'true')->'errors';
EXECUTE bsm_q;
DEALLOCATE bsm_q;
RESET plan_cache_mode;
EXPLAIN (COSTS OFF) SELECT count(t) FROM bsm_fdw;
SELECT count(t) FROM bsm_fdw;
DROP SERVER bsm_se CASCADE;
SELECT search_engine.delete_index('bsm_fdw')->'acknowledged';
