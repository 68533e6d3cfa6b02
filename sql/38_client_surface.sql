-- What real Elasticsearch clients read before and around their calls
-- (issue 18): GET / (the product check of the Python and Node clients,
-- curator's and the exporter's version parse), _nodes, _nodes/stats with
-- the fields the Prometheus exporter scrapes, _cat/health (rsyslog's
-- omelasticsearch probe), _cat's format/v/h/bytes parameters, and what
-- curator 5.8 reads: settings with creation_date, _cluster/state/metadata
-- of named indices, multi-index stats and deletion.  Ids, uuids, dates
-- and disk sizes vary: the tests look at shapes and at what is fixed.
SET client_min_messages = warning;

-- GET /: the keys clients read, an 8.x version and ES's tagline
SELECT status, body->>'tagline' AS tagline, body->>'cluster_name' AS cluster,
       body->>'name' AS name,
       body->'version'->>'number' AS number,
       body->'version'->>'build_flavor' AS flavor,
       body->'version'->>'lucene_version' AS lucene,
       body->'version'->>'minimum_wire_compatibility_version' AS wire,
       body->'version'->'build_snapshot' AS snapshot,
       body->'version'->>'build_date' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$' AS date_ok,
       length(body->>'cluster_uuid') = 22 AS uuid_ok,
       body->>'cluster_uuid' = (SELECT body->>'cluster_uuid' FROM search_engine.request('GET', '/_cluster/state/metadata')) AS uuid_is_state
  FROM search_engine.request('GET', '/');
-- HEAD / answers 200 with no body
SELECT status, body FROM search_engine.request('HEAD', '/');
-- the 7.x override is a server setting (SIGHUP), checked when set
SET search_engine.override_main_response_version = '7.10.2';
ALTER SYSTEM SET search_engine.override_main_response_version = '7.10';
ALTER SYSTEM SET search_engine.override_main_response_version = '9.0.0';
SHOW search_engine.override_main_response_version;

-- _nodes: this node, its version, roles, attributes and thread pools
SELECT status, body->'_nodes' AS counts, body->>'cluster_name' AS cluster,
       (SELECT count(*) FROM jsonb_object_keys(body->'nodes')) AS nodes
  FROM search_engine.request('GET', '/_nodes');
SELECT n.value->>'name' AS name, n.value->>'version' AS version, n.value->'roles' AS roles,
       n.value->'attributes' AS attributes, n.value->'thread_pool'->'write'->>'type' AS write_type,
       (n.value->'thread_pool'->'write'->>'size')::int = current_setting('search_engine.write_threads')::int AS write_size_ok,
       (n.value->'thread_pool'->'write'->>'queue_size')::int = current_setting('search_engine.write_queue_size')::int AS queue_size_ok,
       n.value->>'transport_address' ~ ':\d+$' AS address_ok,
       n.key = (SELECT body->>'master_node' FROM search_engine.request('GET', '/_cluster/state/master_node')) AS id_is_master
  FROM search_engine.request('GET', '/_nodes/_local') r, jsonb_each(r.body->'nodes') n;
SELECT status, (SELECT count(*) FROM jsonb_object_keys(body->'nodes')) AS nodes
  FROM search_engine.request('GET', '/_nodes/no-such-node');

-- _nodes/_local/stats (the exporter's default): host, roles, thread pools, fs
SELECT n.value->>'name' AS name, n.value ? 'host' AS host, n.value ? 'ip' AS ip,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(n.value->'thread_pool') k) AS pools,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(n.value->'thread_pool'->'write') k) AS pool_fields,
       (n.value->'fs'->'total'->>'total_in_bytes')::bigint >= (n.value->'fs'->'total'->>'free_in_bytes')::bigint AS fs_ok,
       (n.value->'fs'->'total'->>'free_in_bytes')::bigint >= (n.value->'fs'->'total'->>'available_in_bytes')::bigint AS fs_free_ok,
       jsonb_array_length(n.value->'fs'->'data') AS data_paths,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(n.value->'os'->'cpu'->'load_average') k) AS loads,
       (n.value->'os'->'mem'->>'total_in_bytes')::bigint = (n.value->'os'->'mem'->>'free_in_bytes')::bigint
         + (n.value->'os'->'mem'->>'used_in_bytes')::bigint AS mem_ok
  FROM search_engine.request('GET', '/_nodes/_local/stats') r, jsonb_each(r.body->'nodes') n;

-- _cluster/health: the fields the exporter's health collector reads
SELECT status, body->>'status' IN ('green', 'yellow') AS health_ok,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k) AS fields
  FROM search_engine.request('GET', '/_cluster/health');

-- _cat/health (rsyslog's probe): text, with header under v, json
SELECT status, body::text ~ '^"epoch +timestamp +cluster +status ' AS header,
       body::text ~ 'search_engine +(green|yellow)' AS row
  FROM search_engine.request('GET', '/_cat/health?v');
SELECT status, jsonb_array_length(body) AS rows,
       body->0->>'cluster' AS cluster, body->0->>'node.total' AS nodes,
       body->0->>'active_shards_percent' ~ '%$' AS percent
  FROM search_engine.request('GET', '/_cat/health?format=json');

-- _cat parameters: h= picks columns, bytes= a unit, format=text|json only
SELECT status FROM search_engine.request('PUT', '/cs-2020.01.01', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}');
SELECT status FROM search_engine.request('PUT', '/cs-2020.01.02', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}');
SELECT status FROM search_engine.request('POST', '/cs-2020.01.01/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {}}\n{"message": "line %s of a syslog day"}\n', i), '') FROM generate_series(1, 300) i));
SELECT status, body FROM search_engine.request('GET', '/_cat/indices/cs-*?h=index,docs.count&format=json');
SELECT status, body FROM search_engine.request('GET', '/_cat/indices/cs-2020.01.01?h=index,health,docs.count&v&format=text');
WITH b AS (
  SELECT (SELECT body->0->>'store.size' FROM search_engine.request('GET', '/_cat/indices/cs-2020.01.01?h=store.size&bytes=b&format=json'))::bigint AS b,
         (SELECT body->0->>'store.size' FROM search_engine.request('GET', '/_cat/indices/cs-2020.01.01?h=store.size&bytes=kb&format=json'))::bigint AS kb,
         (SELECT body->0->>'store.size' FROM search_engine.request('GET', '/_cat/indices/cs-2020.01.01?h=store.size&format=json')) AS human
)
SELECT b > 0 AS bytes_nonzero, kb = b / 1024 AS kb_floor, human ~ '^[0-9.]+(b|kb|mb|gb)$' AS human_ok FROM b;
-- _cat/count: what _count counts, all indices or the named ones
SELECT status, body->0->>'count' AS count, body->0->>'epoch' ~ '^\d+$' AS epoch_ok
  FROM search_engine.request('GET', '/_cat/count/cs-*?format=json');
SELECT (SELECT body->0->>'count' FROM search_engine.request('GET', '/_cat/count?format=json'))::bigint =
       (SELECT body->>'count' FROM search_engine.request('GET', '/_count'))::bigint AS all_ok;
-- s= sorts by any column, numbers as numbers; an unknown key is a 400
SELECT status, body FROM search_engine.request('GET', '/_cat/indices/cs-*?h=index&s=docs.count:desc,index&format=json');
SELECT status, body FROM search_engine.request('GET', '/_cat/indices/cs-*?h=index,docs.count&s=docs.count,index:desc&format=json');
SELECT status, body->'error' AS error FROM search_engine.request('GET', '/_cat/indices?s=nope');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('GET', '/_cat/indices?bytes=furlongs');
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('GET', '/_cat/indices?format=cbor');

-- curator 5.8: all indices' settings (with creation_date), the metadata
-- of named ones, their stats, and a deletion of several by name
SELECT status, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k WHERE k LIKE 'cs-%') AS indices
  FROM search_engine.request('GET', '/_all/_settings?expand_wildcards=open,closed');
SELECT k AS index, v->>'state' AS state, v->'settings'->'index'->>'number_of_shards' AS shards,
       v->'settings'->'index'->>'number_of_replicas' AS replicas,
       (v->'settings'->'index'->>'creation_date')::bigint BETWEEN
         extract(epoch FROM now() - interval '1 hour') * 1000 AND extract(epoch FROM now()) * 1000 + 1000 AS created_ok
  FROM search_engine.request('GET', '/_cluster/state/metadata/cs-2020.01.01,cs-2020.01.02') r,
       jsonb_each(r.body->'metadata'->'indices') AS e(k, v)
 ORDER BY k;
SELECT status, body ? 'routing_table' AS has_routing FROM search_engine.request('GET', '/_cluster/state/metadata/cs-2020.01.02');
SELECT body->'indices'->'cs-2020.01.01'->'primaries'->'docs'->>'count' AS docs01,
       body->'indices'->'cs-2020.01.02'->'primaries'->'docs'->>'count' AS docs02,
       (body->'indices'->'cs-2020.01.01'->'total'->'store'->>'size_in_bytes')::bigint > 0 AS store_ok
  FROM search_engine.request('GET', '/cs-2020.01.01,cs-2020.01.02/_stats/store,docs');
SELECT status, body FROM search_engine.request('DELETE', '/cs-2020.01.01,cs-2020.01.02?master_timeout=30s');
SELECT count(*) FROM search_engine.indices WHERE index LIKE 'cs-%';
