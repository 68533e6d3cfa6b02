-- The cluster APIs on a single-node cluster (no etcd_endpoints): the node
-- (test/regress.conf names it regress_node) is the only member and its own
-- master.  Ids and ports vary between runs, so they are masked.
CREATE FUNCTION pg_temp.masked(t text) RETURNS text LANGUAGE sql AS $$
  SELECT regexp_replace(regexp_replace(t, '[A-Za-z0-9_-]{22}', '<id>', 'g'),
                        '127\.0\.0\.1:[0-9]+', '127.0.0.1:<port>', 'g') $$;
SELECT name, "node.role", master, attributes, conninfo, term, ip,
       ephemeral_id ~ '^[A-Za-z0-9_-]{22}$' AS id_ok,
       disk_total_bytes >= disk_free_bytes AND disk_free_bytes > 0 AS disk_ok,
       started_at <= now() AS started
  FROM search_engine.nodes;
-- _cat/nodes: ES's default columns, ?v, ?h= (in h's order, wildcards), ?format=json
SELECT status, pg_temp.masked(body #>> '{}') FROM search_engine.request('GET', '/_cat/nodes?v');
SELECT status, pg_temp.masked(body #>> '{}') FROM search_engine.request('GET', '/_cat/nodes?h=master,node.role,name');
SELECT status, jsonb_array_length(body), body->0->>'node.role' AS role, body->0->>'master' AS master,
       length(body->0->>'id') AS id_len, body->0 ? 'disk.used_percent' AS disk
  FROM search_engine.request('GET', '/_cat/nodes?format=json&h=id,node.role,master,disk.*');
SELECT status, length(body->0->>'id') AS full_id_len FROM search_engine.request('GET', '/_cat/nodes?format=json&h=id&full_id');
SELECT status, body FROM search_engine.request('GET', '/_cat/nodes?format=json&h=nonesuch');
-- _cat/master: id host ip node
SELECT status, pg_temp.masked(body #>> '{}') FROM search_engine.request('GET', '/_cat/master?v');
SELECT status, body->0->>'id' = (SELECT ephemeral_id FROM search_engine.nodes) AS id_is_the_node
  FROM search_engine.request('GET', '/_cat/master?format=json');
-- _cluster/state: the nodes keyed by ephemeral id, the master, its filters
-- (metadata and routing_table are not served yet)
SELECT status, pg_temp.masked(body::text) FROM search_engine.request('GET', '/_cluster/state/nodes,master_node');
SELECT status, body->'nodes'->(SELECT ephemeral_id FROM search_engine.nodes)->>'transport_address'
       = '127.0.0.1:' || current_setting('port') AS own_port
  FROM search_engine.request('GET', '/_cluster/state/nodes');
SELECT status, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k)
  FROM search_engine.request('GET', '/_cluster/state');
SELECT status, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k)
  FROM search_engine.request('GET', '/_cluster/state/master_node');
SELECT status, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k)
  FROM search_engine.request('GET', '/_cluster/state/_all');
SELECT status, body FROM search_engine.request('GET', '/_cluster/state/nodes,bogus');
SELECT status, body FROM search_engine.request('POST', '/_cluster/state');
SELECT status, body->'cluster_name', body->'number_of_nodes', body->'number_of_data_nodes'
  FROM search_engine.request('GET', '/_cluster/health');
-- fenced commits need etcd: a single node has no cluster store to write
SELECT search_engine._cluster_commit('test/k', 'v');
SELECT has_function_privilege('search_engine_admin', 'search_engine._cluster_commit(text,text)', 'EXECUTE') AS admin_may_commit;
-- the role peers will log in as: a group role, no login of its own
SELECT rolname, rolcanlogin, shobj_description(oid, 'pg_authid') IS NOT NULL AS commented
  FROM pg_roles WHERE rolname = 'search_engine_node';
-- a cluster-level read, for every search_engine_user; nothing for PUBLIC
CREATE ROLE se_cluster_reader IN ROLE search_engine_read;
CREATE ROLE se_cluster_nobody;
SET ROLE se_cluster_reader;
SELECT count(*) FROM search_engine.nodes;
SELECT status FROM search_engine.request('GET', '/_cat/master');
RESET ROLE;
SET ROLE se_cluster_nobody;
SELECT count(*) FROM search_engine.nodes;
RESET ROLE;
DROP ROLE se_cluster_reader; DROP ROLE se_cluster_nobody;
-- _cluster/health: level, wait_for_nodes, wait_for_active_shards
SELECT search_engine.create_index('hl', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}}')->'acknowledged';
SELECT status, body->>'status' AS health, body->'indices'->'hl' AS hl
  FROM search_engine.request('GET', '/_cluster/health/hl?level=indices');
SELECT status, body->'indices'->'hl'->'shards' AS shards
  FROM search_engine.request('GET', '/_cluster/health/hl?level=shards');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('GET', '/_cluster/health?level=nodes');
SELECT status, body->>'timed_out' AS timed_out FROM search_engine.request('GET', '/_cluster/health/hl?wait_for_nodes=1');
SELECT status, body->>'timed_out' AS timed_out FROM search_engine.request('GET', '/_cluster/health/hl?wait_for_nodes=ge(1)');
SELECT status, body->>'timed_out' AS timed_out FROM search_engine.request('GET', '/_cluster/health/hl?wait_for_nodes=%3E%3D2&timeout=100ms');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('GET', '/_cluster/health?wait_for_nodes=many');
SELECT status, body->>'timed_out' AS timed_out, body->>'active_shards' AS active
  FROM search_engine.request('GET', '/_cluster/health/hl?wait_for_active_shards=all');
SELECT status, body->>'timed_out' AS timed_out
  FROM search_engine.request('GET', '/_cluster/health/hl?wait_for_active_shards=3&timeout=100ms');
SELECT search_engine.delete_index('hl')->'acknowledged';
