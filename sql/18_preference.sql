-- Read and small write options on a single node (ES 8): search and count
-- `preference` (_shards:S[|pref], _only_local, _local, _prefer_nodes,
-- _only_nodes, a custom string), `seq_no_primary_term` on hits, and
-- wait_for_active_shards on single-document writes.  On one node every
-- shard is local, so the preferences differ only in which shards they
-- name and in their errors.
SELECT status FROM search_engine.request('PUT', '/pref', '{"settings": {"number_of_shards": 3, "number_of_replicas": 0}}');
SELECT status FROM search_engine.request('POST', '/pref/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "d%s"}}\n{"n": %s}\n', i, i), '') FROM generate_series(1, 30) i));
-- _shards: only the shards named are searched, and counted
SELECT status, body->'_shards', body->'hits'->'total'->'value' AS hits
  FROM search_engine.request('GET', '/pref/_search?preference=_shards:0,2&size=0');
SELECT (SELECT sum((body->'hits'->'total'->>'value')::int)
          FROM generate_series(0, 2) s,
               LATERAL search_engine.request('GET', format('/pref/_search?preference=_shards:%s&size=0', s))) AS sum_of_shards,
       (SELECT body->'hits'->'total'->'value' FROM search_engine.request('GET', '/pref/_search?size=0')) AS all_shards;
-- each id is found in exactly one shard
SELECT count(DISTINCT h->>'_id') AS ids, count(*) AS hits
  FROM generate_series(0, 2) s,
       LATERAL search_engine.request('GET', format('/pref/_search?preference=_shards:%s&size=100', s)) r,
       LATERAL jsonb_array_elements(r.body->'hits'->'hits') h;
SELECT status, body->'_shards' FROM search_engine.request('GET', '/pref/_search?preference=_shards:1%7C_only_local&size=0');
SELECT status, body->'_shards' FROM search_engine.request('GET', '/pref/_search?preference=_shards:7&size=0');
SELECT p, status, body->'_shards', body->'hits'->'total'->'value' AS hits
  FROM unnest(ARRAY['_only_local', '_local', '_prefer_nodes:nowhere', '_only_nodes:*', 'my-session-42', '_shards:0,1,2']) p,
       LATERAL search_engine.request('GET', '/pref/_search?size=0&preference=' || p);
-- a custom string always reads the same copies: the same hits in the same order
SELECT (SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') FROM search_engine.request('GET', '/pref/_search?preference=abc&size=5&sort=n'))
     = (SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') FROM search_engine.request('GET', '/pref/_search?preference=abc&size=5&sort=n')) AS stable;
-- ES's errors
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('GET', '/pref/_search?preference=_primary');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('GET', '/pref/_search?preference=_shards:x');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('GET', '/pref/_search?preference=_shards:0%7C_shards:1');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('GET', '/pref/_search?preference=_only_nodes:nosuchnode');
-- _count takes it too
SELECT status, body FROM search_engine.request('GET', '/pref/_count?preference=_shards:0,1,2');
SELECT status, body->'_shards' FROM search_engine.request('GET', '/pref/_count?preference=_shards:1');
SELECT status, body->'error'->>'type' FROM search_engine.request('GET', '/pref/_count?preference=_nope');
-- get and mget
SELECT status, body->>'found' FROM search_engine.request('GET', '/pref/_doc/d3?preference=_only_local');
SELECT status, body->'error'->>'reason' FROM search_engine.request('GET', '/pref/_doc/d3?preference=_only_nodes:elsewhere');
SELECT status, jsonb_path_query_array(body, '$.docs[*].found') FROM search_engine.request('GET', '/pref/_mget?preference=custom', '{"ids": ["d1", "d2", "nope"]}');
SELECT status, body->'error'->>'type' FROM search_engine.request('GET', '/pref/_mget?preference=_x', '{"ids": ["d1"]}');

-- seq_no_primary_term: hits carry _seq_no and _primary_term, before _score
SELECT status FROM search_engine.request('PUT', '/pref/_doc/d5?refresh=true', '{"n": 500}');
SELECT (SELECT body->'hits'->'hits'->0 FROM search_engine.request('GET', '/pref/_search', '{"query": {"term": {"_id": "d5"}}, "seq_no_primary_term": true}'))
         - '_score' - '_source' - '_index'
     = (SELECT jsonb_build_object('_id', body->'_id', '_seq_no', body->'_seq_no', '_primary_term', body->'_primary_term')
          FROM search_engine.request('GET', '/pref/_doc/d5')) AS same_as_get;
SELECT body->'hits'->'hits'->0 ? '_seq_no' AS without FROM search_engine.request('GET', '/pref/_search?q=n:500');
SELECT body->'hits'->'hits'->0 ? '_seq_no' AS url_false FROM search_engine.request('GET', '/pref/_search?seq_no_primary_term=false&q=n:500');
SELECT body->'hits'->'hits'->0 ? '_seq_no' AS body_false FROM search_engine.request('GET', '/pref/_search', '{"query": {"match_all": {}}, "seq_no_primary_term": false}');
SELECT count(*) FILTER (WHERE h ? '_seq_no' AND h ? '_primary_term') AS with_meta, count(*) AS hits
  FROM search_engine.request('GET', '/pref/_search?size=100', '{"seq_no_primary_term": true}') r,
       LATERAL jsonb_array_elements(r.body->'hits'->'hits') h;

-- wait_for_active_shards on single-document writes: with one replica that
-- cannot be placed (one node) only the primary is active; checked before
-- the write (nothing is written), 503 after the timeout
SELECT status FROM search_engine.request('PUT', '/wfas?wait_for_active_shards=0', '{"settings": {"number_of_shards": 1, "number_of_replicas": 1}}');
SELECT status, body->'error'->>'type', body->'error'->>'reason'
  FROM search_engine.request('PUT', '/wfas/_doc/1?wait_for_active_shards=all&timeout=100ms', '{"v": 1}');
SELECT status, body->'error'->>'type' FROM search_engine.request('PUT', '/wfas/_create/2?wait_for_active_shards=2&timeout=50ms', '{"v": 2}');
SELECT status, body->'error'->>'type' FROM search_engine.request('POST', '/wfas/_doc?wait_for_active_shards=2&timeout=50ms', '{"v": 3}');
SELECT status, body->'result' FROM search_engine.request('PUT', '/wfas/_doc/1?wait_for_active_shards=1&refresh=true', '{"v": 1}');
SELECT status, body->'error'->>'type' FROM search_engine.request('POST', '/wfas/_update/1?wait_for_active_shards=all&timeout=50ms', '{"doc": {"v": 9}}');
SELECT status, body->'error'->>'type' FROM search_engine.request('DELETE', '/wfas/_doc/1?wait_for_active_shards=all&timeout=50ms');
-- nothing of the refused writes happened
SELECT status, body->'_source', body->'_version' FROM search_engine.request('GET', '/wfas/_doc/1');
SELECT status, body->'count' FROM search_engine.request('GET', '/wfas/_count');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('PUT', '/wfas/_doc/5?wait_for_active_shards=-2', '{"v": 5}');
SELECT status, body->'error'->>'type' FROM search_engine.request('PUT', '/wfas/_doc/5?wait_for_active_shards=two', '{"v": 5}');
SELECT status, body->'result' FROM search_engine.request('DELETE', '/wfas/_doc/1?wait_for_active_shards=0');
SELECT status FROM search_engine.request('DELETE', '/pref');
SELECT status FROM search_engine.request('DELETE', '/wfas');
