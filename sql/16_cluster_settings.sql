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
