-- Index stats (ES 8 GET /_stats, /{index}/_stats[/{metric}], level=
-- cluster|indices|shards): each figure is a shard copy's counter, summed
-- into the index's primaries/total and _all.  Times vary, counts do not:
-- the tests compare counts before and after operations.
SET client_min_messages = warning;
SELECT status FROM search_engine.request('PUT', '/st', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}}');
SELECT status FROM search_engine.request('POST', '/st/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "d%s"}}\n{"n": %s, "t": "word %s"}\n', i, i, i), '') FROM generate_series(1, 10) i));
SELECT status FROM search_engine.request('DELETE', '/st/_doc/d1?refresh=true');
CREATE TEMP TABLE st0 AS SELECT body FROM search_engine.request('GET', '/st/_stats');

-- the shape: _shards, _all and indices, each with primaries and total
SELECT status, body->'_shards' AS shards, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k) AS keys
  FROM search_engine.request('GET', '/st/_stats');
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body->'_all'->'primaries') k) AS sections,
       body->'indices'->'st'->>'status' AS status,
       body->'indices'->'st'->'uuid' = to_jsonb((SELECT uuid FROM search_engine.indices WHERE index = 'st')) AS uuid_ok
  FROM st0;
SELECT body->'_all'->'primaries'->'docs' AS docs,
       body->'_all'->'primaries'->'indexing' AS indexing,
       body->'_all'->'total' = body->'_all'->'primaries' AS total_is_primaries,
       body->'indices'->'st'->'primaries' = body->'_all'->'primaries' AS one_index,
       (body->'_all'->'primaries'->'store'->>'size_in_bytes')::bigint > 0 AS store_nonzero,
       (body->'_all'->'primaries'->'translog'->>'size_in_bytes')::bigint > 0 AS translog_nonzero,
       (body->'_all'->'primaries'->'refresh'->>'total')::int >= 2 AS refreshed
  FROM st0;

-- gets: one found, one missing, counted on the shard that answered
SELECT status FROM search_engine.request('GET', '/st/_doc/d2');
SELECT status FROM search_engine.request('GET', '/st/_doc/nope');
SELECT (s.body->'_all'->'total'->'get'->>'total')::int - (st0.body->'_all'->'total'->'get'->>'total')::int AS gets,
       (s.body->'_all'->'total'->'get'->>'exists_total')::int - (st0.body->'_all'->'total'->'get'->>'exists_total')::int AS exists,
       (s.body->'_all'->'total'->'get'->>'missing_total')::int - (st0.body->'_all'->'total'->'get'->>'missing_total')::int AS missing,
       s.body->'_all'->'total'->'get'->'current' AS current
  FROM search_engine.request('GET', '/st/_stats/get') s, st0;
-- a search or a count runs a query phase on each shard
SELECT body->'hits'->'total'->'value' AS hits FROM search_engine.request('GET', '/st/_search?size=0');
SELECT body->'count' AS count FROM search_engine.request('GET', '/st/_count');
SELECT (SELECT sum((body->'hits'->'total'->>'value')::int) FROM search_engine.request('POST', '/st/_search', '{"query": {"match": {"t": "word"}}}')) AS hits;
SELECT (s.body->'_all'->'total'->'search'->>'query_total')::int - (st0.body->'_all'->'total'->'search'->>'query_total')::int AS query_phases,
       s.body->'_all'->'total'->'search'->'query_current' AS current
  FROM search_engine.request('GET', '/st/_stats/search') s, st0;
-- flush and merges: a second segment per shard, merged into one
SELECT status FROM search_engine.request('POST', '/st/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "e%s"}}\n{"n": %s}\n', i, i), '') FROM generate_series(1, 10) i));
SELECT status FROM search_engine.request('POST', '/st/_forcemerge?max_num_segments=1');
SELECT status FROM search_engine.request('POST', '/st/_flush');
SELECT (s.body->'_all'->'total'->'flush'->>'total')::int - (st0.body->'_all'->'total'->'flush'->>'total')::int >= 2 AS flushed,
       (s.body->'_all'->'total'->'merges'->>'total')::int >= 2 AS merged,
       (s.body->'_all'->'total'->'merges'->>'total_docs')::int >= 19 AS merged_docs,
       (s.body->'_all'->'total'->'merges'->>'total_size_in_bytes')::bigint > 0 AS merged_bytes,
       s.body->'_all'->'total'->'docs' AS docs,
       (s.body->'_all'->'total'->'indexing'->>'index_total')::int AS index_total
  FROM search_engine.request('GET', '/st/_stats') s, st0;
SELECT count(*) AS segments FROM search_engine.request('GET', '/_cat/segments/st?format=json') r, jsonb_array_elements(r.body);

-- metrics: a comma list keeps those sections ("merge" answers "merges")
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body->'_all'->'total') k) AS sections
  FROM search_engine.request('GET', '/st/_stats/docs,merge,translog');
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body->'indices'->'st'->'primaries') k) AS sections
  FROM search_engine.request('GET', '/_stats/store');
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body->'_all'->'total') k) AS sections
  FROM search_engine.request('GET', '/st/_stats/_all');
SELECT body->'_all'->'total' AS sections FROM search_engine.request('GET', '/st/_stats/segments');

-- level=shards: each copy with its routing, seq_no and retention leases
SELECT s.key AS shard, jsonb_array_length(s.value) AS copies,
       s.value->0->'routing' AS routing,
       (s.value->0->'seq_no'->>'max_seq_no')::int = (s.value->0->'seq_no'->>'local_checkpoint')::int AS lcp_is_max,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(s.value->0->'retention_leases') k) AS lease_keys,
       s.value->0->'retention_leases'->'leases' AS leases,
       (s.value->0->'retention_leases'->>'primary_term')::int AS term,
       s.value->0->'docs' AS docs
  FROM search_engine.request('GET', '/st/_stats?level=shards') r,
       jsonb_each(r.body->'indices'->'st'->'shards') s
 WHERE r.body->'indices'->'st'->'shards' ? '0'
 ORDER BY s.key;
-- the copies' max_seq_no: every operation once (10 + 1 delete + 10 per shard, from 0)
SELECT sum((s.value->0->'seq_no'->>'max_seq_no')::int + 1) AS operations
  FROM search_engine.request('GET', '/st/_stats?level=shards') r,
       jsonb_each(r.body->'indices'->'st'->'shards') s;
SELECT body->'indices'->'st' ? 'shards' AS shards_at_indices FROM search_engine.request('GET', '/st/_stats?level=indices');
SELECT body ? 'indices' AS indices, body->'_shards' AS shards FROM search_engine.request('GET', '/st/_stats?level=cluster');

-- several indices: _all sums them
SELECT status FROM search_engine.request('PUT', '/st2', '{"settings": {"number_of_shards": 1}}');
SELECT status FROM search_engine.request('PUT', '/st2/_doc/1?refresh=true', '{"n": 1}');
SELECT body->'_shards' AS shards,
       (body->'_all'->'primaries'->'docs'->>'count')::int
         = (body->'indices'->'st'->'primaries'->'docs'->>'count')::int
         + (body->'indices'->'st2'->'primaries'->'docs'->>'count')::int AS sums
  FROM search_engine.request('GET', '/st,st2/_stats/docs');

-- ES's errors
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/st/_stats?level=node');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/st/_stats/docs,nonsense');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('GET', '/nosuchindex/_stats');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('POST', '/st/_stats');
-- privileges: only the indices the role may see
CREATE ROLE st_lr;            -- read on st2 only
SELECT search_engine.grant('read', 'st2', 'st_lr');
SET ROLE st_lr;
SELECT status, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body->'indices') k) AS indices
  FROM search_engine.request('GET', '/_stats/docs');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('GET', '/st/_stats');
RESET ROLE;
SELECT search_engine.revoke('read', 'st2', 'st_lr');
DROP ROLE st_lr;
SELECT status FROM search_engine.request('DELETE', '/st,st2');
