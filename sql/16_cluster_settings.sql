-- PUT/GET /_cluster/settings on a single node: persistent and transient
-- layers (transient wins), nested or flat output, defaults, resets, ES's
-- errors, and only search_engine_admin may change them.
SELECT search_engine.cluster_settings();
SELECT status, body FROM search_engine.request('PUT', '/_cluster/settings',
  '{"persistent": {"cluster.routing.allocation.enable": "primaries",
                   "cluster": {"routing": {"allocation": {"disk": {"watermark": {"low": "80%"}}}}}},
    "transient": {"cluster.routing.allocation.enable": "none"}}');
SELECT status, body FROM search_engine.request('GET', '/_cluster/settings');
SELECT status, body FROM search_engine.request('GET', '/_cluster/settings?flat_settings=true');
SELECT body->'defaults'->'cluster.routing.allocation.disk.watermark.high' AS high,
       body->'defaults' ? 'cluster.routing.allocation.disk.watermark.low' AS low_is_set
  FROM search_engine.request('GET', '/_cluster/settings?flat_settings&include_defaults');
-- the SQL functions
SELECT search_engine.put_cluster_settings('{"persistent": {"cluster.routing.allocation.awareness.attributes": ["zone", "rack"],
  "cluster.routing.allocation.exclude._name": "n1,n2"}}');
SELECT search_engine.cluster_settings(flat_settings => true);
-- resets: null, and a wildcard
SELECT search_engine.put_cluster_settings('{"transient": {"cluster.routing.allocation.enable": null}}');
SELECT search_engine.put_cluster_settings('{"persistent": {"cluster.routing.allocation.awareness.*": null}}');
SELECT search_engine.cluster_settings(true);
-- errors
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_cluster/settings', '{"persistent": {"cluster.routing.allocation.enabel": "all"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_cluster/settings', '{"transient": {"cluster.routing.allocation.enable": "sometimes"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_cluster/settings', '{"persistent": {"cluster.routing.allocation.disk.watermark.high": "70%"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_cluster/settings', '{"persistent": {}}');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('PUT', '/_cluster/settings', '{"persistant": {}}');
SELECT search_engine.put_cluster_settings('{"persistent": {"cluster.routing.allocation.balance.threshold": 0.2}}');
-- nothing above changed anything
SELECT search_engine.cluster_settings(true);
-- only administrators change cluster settings; anyone may read them
CREATE ROLE se_settings_user LOGIN IN ROLE search_engine_write;
SET ROLE se_settings_user;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_cluster/settings', '{"persistent": {"cluster.routing.allocation.enable": "all"}}');
SELECT search_engine.put_cluster_settings('{"persistent": {"cluster.routing.allocation.enable": "all"}}');
SELECT status, body FROM search_engine.request('GET', '/_cluster/settings?flat_settings=true');
RESET ROLE;
DROP ROLE se_settings_user;
-- back to the defaults for the tests that follow
SELECT search_engine.put_cluster_settings('{"persistent": {"cluster.*": null}, "transient": {"cluster.*": null}}');
-- index-level allocation settings and blocks (index.blocks.*)
SELECT search_engine.create_index('blk', '{"settings": {"number_of_shards": 2,
  "index.routing.allocation.require.box_type": "hot",
  "index": {"routing": {"allocation": {"total_shards_per_node": 1, "exclude": {"_name": "n9"}}},
            "unassigned.node_left.delayed_timeout": "5m", "allocation.max_retries": 3}}}');
SELECT body->'blk'->'settings'->'index'->'routing' AS routing,
       body->'blk'->'settings'->'index'->'unassigned' AS unassigned,
       body->'blk'->'settings'->'index'->'allocation' AS allocation
  FROM search_engine.request('GET', '/blk/_settings');
-- an empty value removes a filter
SELECT search_engine.put_settings('blk', '{"index.routing.allocation.exclude._name": ""}');
SELECT body->'blk'->'settings'->'index'->'routing' AS routing FROM search_engine.request('GET', '/blk/_settings');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/blk/_settings', '{"index.blocks.write": "maybe"}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/blk/_settings', '{"index.routing.allocation.enable": "sometimes"}');
SELECT search_engine.index_doc('blk', '1', '{"t": "before the block"}', 'true')->>'result';
-- the write block: documents refused (403), mappings may still change
SELECT search_engine.put_settings('blk', '{"index": {"blocks": {"write": true}}}');
SELECT body->'blk'->'settings'->'index'->'blocks' AS blocks FROM search_engine.request('GET', '/blk/_settings');
SELECT search_engine.index_doc('blk', '2', '{"t": "blocked"}');
SELECT jsonb_path_query(search_engine.bulk(E'{"index": {"_id": "3"}}\n{"t": "x"}\n{"delete": {"_id": "1"}}\n', 'blk')::jsonb,
                        '$.items[*].*.error.type') AS item_errors;
SELECT search_engine.put_mapping('blk', '{"properties": {"k": {"type": "keyword"}}}');
-- the flood stage's block: 429, mapping changes refused too, reads go on
SELECT search_engine.put_settings('blk', '{"index.blocks.write": false, "index.blocks.read_only_allow_delete": true}');
SELECT jsonb_path_query(search_engine.bulk(E'{"index": {"_id": "3"}}\n{"t": "x"}\n', 'blk')::jsonb, '$.items[*].*.status') AS status;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/blk/_doc/4', '{"t": "y"}');
SELECT status, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/blk/_mapping', '{"properties": {"k2": {"type": "keyword"}}}');
SELECT search_engine.count('blk') AS count;
-- lifted: writes again
SELECT search_engine.put_settings('blk', '{"index.blocks.read_only_allow_delete": null}');
SELECT body->'blk'->'settings'->'index' ? 'blocks' AS has_blocks FROM search_engine.request('GET', '/blk/_settings');
SELECT search_engine.index_doc('blk', '4', '{"t": "after"}', 'true')->>'result';
-- a blocked index can still be deleted
SELECT search_engine.put_settings('blk', '{"index.blocks.read_only": true}');
SELECT search_engine.index_doc('blk', '5', '{"t": "no"}');
SELECT search_engine.delete_index('blk');
