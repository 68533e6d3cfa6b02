-- The REST surface clients and exporters read (issue 18): GET /_cat and
-- _cat/<x>?help, ?format=yaml on any API, and the _nodes/stats sections
-- the Prometheus exporter scrapes -- indices (the node's copies, as _stats
-- sums them), process, jvm and breakers (PostgreSQL's figures in ES's
-- shapes), os.cpu.percent, thread pools' largest.  Figures vary: the tests
-- look at shapes, types and what is fixed.  (The 406 for an unreadable
-- Content-Type is the HTTP server's: TAP 320.)
SET client_min_messages = warning;

-- GET /_cat: ES's cat face and the endpoints served
SELECT status, body #>> '{}' AS text FROM search_engine.request('GET', '/_cat');
-- ?help: a table's columns
SELECT body #>> '{}' AS text FROM search_engine.request('GET', '/_cat/count?help');
SELECT body #>> '{}' AS text FROM search_engine.request('GET', '/_cat/templates?help');

-- ?format=yaml: the JSON answer in ES's YAML
SELECT status FROM search_engine.request('PUT', '/_component_template/hs-c',
  '{"template":{"settings":{"number_of_shards":1},"mappings":{"properties":{"t":{"type":"text"},"k":{"type":"keyword"}}},"aliases":{}},"version":2,"_meta":{"a b":[1,"x",true,null,[],{}]}}');
SELECT body #>> '{}' AS yaml FROM search_engine.request('GET', '/_component_template/hs-c?format=yaml');
SELECT status FROM search_engine.request('PUT', '/hs1', '{"settings":{"number_of_shards":1}}');
SELECT status FROM search_engine.request('POST', '/_bulk?refresh=true',
  E'{"index":{"_index":"hs1","_id":"1"}}\n{"t":"a"}\n{"index":{"_index":"hs1","_id":"2"}}\n{"t":"b"}\n');
SELECT body #>> '{}' AS yaml FROM search_engine.request('GET', '/_cat/indices/hs1?format=yaml&h=index,docs.count');
SELECT body #>> '{}' AS yaml FROM search_engine.request('GET', '/hs1/_count?format=yaml');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('GET', '/_cat/indices?format=smile');

-- _nodes/stats: the sections, in ES's shapes
WITH n AS (SELECT n.value AS node
             FROM search_engine.request('GET', '/_nodes/stats') r, jsonb_each(r.body->'nodes') n)
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node) k) AS sections,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'process') k) AS process,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'process'->'cpu') k) AS process_cpu,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'jvm') k) AS jvm,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'jvm'->'mem'->'pools') k) AS pools,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'breakers'->'in_flight_requests') k) AS breaker,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'indices') k) AS indices
  FROM n;
WITH n AS (SELECT n.value AS node
             FROM search_engine.request('GET', '/_nodes/stats') r, jsonb_each(r.body->'nodes') n)
SELECT (node->'process'->>'open_file_descriptors')::int > 0 AS fds,
       (node->'process'->>'max_file_descriptors')::bigint > 0 AS max_fds,
       (node->'process'->'cpu'->>'total_in_millis')::bigint > 0 AS cpu_ms,
       (node->'process'->'cpu'->>'percent')::int BETWEEN 0 AND 100 AS cpu_pct,
       (node->'process'->'mem'->>'resident_in_bytes')::bigint > 0 AS rss,
       (node->'os'->'cpu'->>'percent')::int BETWEEN 0 AND 100 AS os_cpu,
       (node->'jvm'->'mem'->>'heap_max_in_bytes')::bigint =
         (SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers') AS heap_is_shared_buffers,
       (node->'jvm'->'mem'->>'heap_used_in_bytes')::bigint > 0 AS heap_used,
       (node->'jvm'->'threads'->>'count')::int > 1 AS processes,
       (node->'jvm'->>'uptime_in_millis')::bigint > 0 AS uptime,
       jsonb_typeof(node->'jvm'->'gc'->'collectors'->'old'->'collection_count') AS checkpoints,
       (node->'breakers'->'in_flight_requests'->>'limit_size_in_bytes')::bigint > 0 AS breaker_limit,
       (node->'thread_pool'->'write'->>'largest')::int >= 1 AS write_largest,
       jsonb_typeof(node->'thread_pool'->'search'->'largest') AS search_largest
  FROM n;
-- indices: this node's copies summed with _stats's code (one node: _all's total)
SELECT (SELECT n.value->'indices'->'docs' FROM search_engine.request('GET', '/_nodes/stats') r,
          jsonb_each(r.body->'nodes') n) =
       (SELECT body->'_all'->'total'->'docs' FROM search_engine.request('GET', '/_stats/docs')) AS same_docs,
       (SELECT (n.value->'indices'->'indexing'->>'index_total')::int >= 2
          FROM search_engine.request('GET', '/_nodes/stats') r, jsonb_each(r.body->'nodes') n) AS indexed;

-- a metric list keeps those sections (ES's "breaker" answers "breakers")
SELECT status, (SELECT array_agg(k ORDER BY k) FROM jsonb_each(r.body->'nodes') n, jsonb_object_keys(n.value) k) AS keys
  FROM search_engine.request('GET', '/_nodes/_local/stats/jvm,breaker,http') r;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/_nodes/stats/jvm,nonsense');

-- transport (the libpq pool's traffic), http (the HTTP workers' connections;
-- none in this test: TAP 320) and ingest (no pipelines: ES's empty shape)
WITH n AS (SELECT n.value AS node
             FROM search_engine.request('GET', '/_nodes/stats/transport,http,ingest') r, jsonb_each(r.body->'nodes') n)
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node) k
         WHERE k NOT IN ('name', 'roles', 'timestamp', 'host', 'ip', 'transport_address')) AS sections,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'transport') k) AS transport,
       (SELECT bool_and(jsonb_typeof(v) = 'number') FROM jsonb_each(node->'transport') e(k, v)) AS transport_numbers,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(node->'http') k) AS http,
       jsonb_typeof(node->'http'->'clients') AS clients,
       node->'ingest' AS ingest
  FROM n;

-- _cat columns by ES's aliases (h= and s=), headed as asked; ?help lists them
SELECT status FROM search_engine.request('PUT', '/hs2', '{"settings":{"number_of_shards":1}}');
SELECT status FROM search_engine.request('POST', '/hs2/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index":{}}\n{"t":"%s"}\n', repeat(md5(i::text), 20)), '') FROM generate_series(1, 300) i));
SELECT body FROM search_engine.request('GET', '/_cat/indices/hs*?h=i,dc&s=dc:desc&format=json');
SELECT body #>> '{}' AS text FROM search_engine.request('GET', '/_cat/indices/hs*?h=idx,docsCount,s&s=i&v');
SELECT body->0 AS shard FROM search_engine.request('GET', '/_cat/shards/hs1?h=i,sh,p,st&format=json');
-- a name wins over an alias; the later of two columns sharing one (health's "t") takes it
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body->0) k) AS keys,
       (body->0->>'t') = (SELECT body->0->>'shards' FROM search_engine.request('GET', '/_cat/health?format=json')) AS t_is_shards
  FROM search_engine.request('GET', '/_cat/health?h=status,t&format=json');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('GET', '/_cat/indices?s=nope');
SELECT body #>> '{}' AS text FROM search_engine.request('GET', '/_cat/shards?help');
-- s= on human sizes sorts by the bytes behind them ("12.3kb" after "900b"),
-- the order bytes=b gives; the strings alone would sort otherwise
WITH human AS (SELECT body FROM search_engine.request('GET', '/_cat/indices/hs*?h=index,store.size&s=store.size&format=json')),
     bytes AS (SELECT body FROM search_engine.request('GET', '/_cat/indices/hs*?h=index,store.size&s=store.size&bytes=b&format=json'))
SELECT (SELECT jsonb_agg(e->'index') FROM human, jsonb_array_elements(body) e) =
       (SELECT jsonb_agg(e->'index') FROM bytes, jsonb_array_elements(body) e) AS same_order,
       (SELECT array_agg(e->>'store.size' ORDER BY e->>'store.size' COLLATE "C") FROM human, jsonb_array_elements(body) e) <>
       (SELECT array_agg(e->>'store.size') FROM human, jsonb_array_elements(body) e) AS strings_differ,
       (SELECT array_agg(e->>'store.size') FROM human, jsonb_array_elements(body) e)::text ~ '^\{[0-9.]+b,[0-9.]+kb\}$' AS units;

SELECT status FROM search_engine.request('DELETE', '/hs1');
SELECT status FROM search_engine.request('DELETE', '/hs2');
SELECT status FROM search_engine.request('DELETE', '/_component_template/hs-c');
