/* search_engine--0.1.sql: the SQL face of the search engine. */

\echo Use "CREATE EXTENSION search_engine" to load this file. \quit

DO $$
BEGIN
  IF current_database() <> current_setting('search_engine.database', true) THEN
    RAISE EXCEPTION 'search_engine can only be created in database "%"',
        coalesce(current_setting('search_engine.database', true), 'postgres')
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Connect to that database, or set search_engine.database and restart the server.';
  END IF;
END
$$;

-- Roles: read < write < admin, each "that privilege on every index"; all
-- three are members of search_engine_user, which may call the functions
-- (each checks the caller's index privileges itself).  Nothing is granted
-- to PUBLIC.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'search_engine_user') THEN
    CREATE ROLE search_engine_user NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'search_engine_read') THEN
    CREATE ROLE search_engine_read NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'search_engine_write') THEN
    CREATE ROLE search_engine_write NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'search_engine_admin') THEN
    CREATE ROLE search_engine_admin NOLOGIN;
  END IF;
END
$$;
-- Peers of a cluster log in to each other as a member of this role (the
-- libpq transport); its logins are given with PostgreSQL's own
-- authentication (SCRAM or certificates through pg_hba.conf).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'search_engine_node') THEN
    CREATE ROLE search_engine_node NOLOGIN;
  END IF;
END
$$;
COMMENT ON ROLE search_engine_node IS
  'search_engine cluster peers: the role other nodes log in as (through a LOGIN member of it) to reach this node''s shards';
GRANT search_engine_user TO search_engine_read;
GRANT search_engine_read TO search_engine_write;
GRANT search_engine_write TO search_engine_admin;
-- admins hand out search_engine_user through grant()
GRANT search_engine_user TO search_engine_admin WITH ADMIN OPTION;

REVOKE ALL ON SCHEMA @extschema@ FROM PUBLIC;
GRANT USAGE ON SCHEMA @extschema@ TO search_engine_user;

-- ---------- index-level privileges (src/security) ----------
-- A role's privileges on an index: those of the group roles it has, plus
-- these grants on index patterns (* matches any run of characters).
CREATE TABLE _index_grants (
  role oid NOT NULL,
  index_pattern text NOT NULL,
  privilege text NOT NULL CHECK (privilege IN ('read', 'write', 'manage', 'all')),
  PRIMARY KEY (role, index_pattern, privilege)
);
CREATE FUNCTION _acl_grants_changed() RETURNS trigger
AS 'MODULE_PATHNAME', 'se_acl_grants_changed' LANGUAGE C;
CREATE TRIGGER _index_grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
  ON _index_grants FOR EACH STATEMENT EXECUTE FUNCTION _acl_grants_changed();
CREATE FUNCTION _acl_validate(privilege text, index_pattern text) RETURNS void
AS 'MODULE_PATHNAME', 'se_sql_acl_validate' LANGUAGE C STRICT;

-- grant('read', 'logs-*', 'alice'): alice may search every logs-* index
-- (also ones created later).  Runs as its caller (an admin), who holds
-- search_engine_user WITH ADMIN OPTION to make alice a member of it.
CREATE FUNCTION "grant"(privilege text, index_pattern text, role regrole) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM @extschema@._acl_validate($1, $2);
  INSERT INTO @extschema@._index_grants VALUES ($3, $2, $1) ON CONFLICT DO NOTHING;
  IF NOT pg_has_role($3, 'search_engine_user', 'MEMBER') THEN
    EXECUTE format('GRANT search_engine_user TO %s', $3);
  END IF;
END
$$;
-- revoke('read', 'logs-*', 'alice') removes that grant; 'all' removes every
-- grant of the role on the pattern.  Group roles are revoked with REVOKE.
CREATE FUNCTION "revoke"(privilege text, index_pattern text, role regrole) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n bigint;
BEGIN
  PERFORM @extschema@._acl_validate($1, $2);
  DELETE FROM @extschema@._index_grants g
   WHERE g.role = $3 AND g.index_pattern = $2 AND ($1 = 'all' OR g.privilege = $1);
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 0 THEN
    RAISE WARNING 'no privileges could be revoked'
      USING DETAIL = format('%s holds no grant of %s on "%s".', $3, $1, $2);
  END IF;
END
$$;
-- the grants a role can see: its own (and its roles'), or all for admins
CREATE VIEW index_grants AS
  SELECT g.role::regrole AS role, g.index_pattern, g.privilege
    FROM _index_grants g
   WHERE pg_has_role(g.role, 'USAGE') OR pg_has_role('search_engine_admin', 'USAGE');

-- ---------- index management (admin) ----------
CREATE FUNCTION create_index(index text, body jsonb DEFAULT '{}')
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_create_index' LANGUAGE C VOLATILE;
CREATE FUNCTION delete_index(index text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_delete_index' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION get_index(index text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_get_index' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION get_mapping(index text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_get_mapping' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION put_mapping(index text, body jsonb)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_put_mapping' LANGUAGE C VOLATILE;
CREATE FUNCTION put_settings(index text, body jsonb)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_put_settings' LANGUAGE C VOLATILE;
CREATE FUNCTION close_index(index text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_close_index' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION open_index(index text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_open_index' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION refresh(index text DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_refresh' LANGUAGE C VOLATILE;
CREATE FUNCTION flush(index text DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_flush' LANGUAGE C VOLATILE;
CREATE FUNCTION force_merge(index text DEFAULT NULL, max_num_segments int DEFAULT 1)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_force_merge' LANGUAGE C VOLATILE;
CREATE FUNCTION verify_index(index text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_verify_index' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION cluster_health(index text DEFAULT NULL, wait_for_status text DEFAULT NULL,
                               timeout_ms int DEFAULT 30000)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_cluster_health' LANGUAGE C VOLATILE;

-- ---------- writes (write) ----------
-- GET/PUT /_cluster/settings (persistent and transient; PUT: search_engine_admin)
CREATE FUNCTION cluster_settings(flat_settings boolean DEFAULT false,
  include_defaults boolean DEFAULT false)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_cluster_settings' LANGUAGE C STABLE;
CREATE FUNCTION put_cluster_settings(body jsonb)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_put_cluster_settings' LANGUAGE C VOLATILE;
-- GET /_cluster/allocation/explain (the copy named in body, else the first unassigned)
CREATE FUNCTION allocation_explain(body jsonb DEFAULT NULL, include_yes_decisions boolean DEFAULT false)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_allocation_explain' LANGUAGE C STABLE;
-- POST /_cluster/reroute (search_engine_admin)
CREATE FUNCTION cluster_reroute(body jsonb DEFAULT NULL, dry_run boolean DEFAULT false,
  explain boolean DEFAULT false, retry_failed boolean DEFAULT false)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_cluster_reroute' LANGUAGE C VOLATILE;
CREATE FUNCTION bulk(body text, index text DEFAULT NULL, refresh text DEFAULT 'false',
                     max_retries int DEFAULT 0)
RETURNS json AS 'MODULE_PATHNAME', 'se_sql_bulk' LANGUAGE C VOLATILE;
CREATE FUNCTION index_doc(index text, id text, doc jsonb, refresh text DEFAULT 'false',
                          routing text DEFAULT NULL, op_type text DEFAULT 'index',
                          if_seq_no bigint DEFAULT NULL, if_primary_term bigint DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_index_doc' LANGUAGE C VOLATILE;
CREATE FUNCTION delete_doc(index text, id text, refresh text DEFAULT 'false',
                           routing text DEFAULT NULL, if_seq_no bigint DEFAULT NULL,
                           if_primary_term bigint DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_delete_doc' LANGUAGE C VOLATILE;
CREATE FUNCTION update_doc(index text, id text, body jsonb, refresh text DEFAULT 'false',
                           routing text DEFAULT NULL, if_seq_no bigint DEFAULT NULL,
                           if_primary_term bigint DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_update_doc' LANGUAGE C VOLATILE;

-- ---------- reads (read) ----------
CREATE FUNCTION get_doc(index text, id text, routing text DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_get_doc' LANGUAGE C VOLATILE;
CREATE FUNCTION mget(body jsonb, index text DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_mget' LANGUAGE C VOLATILE;
CREATE FUNCTION search(index text, body jsonb DEFAULT '{}',
                       search_type text DEFAULT 'query_then_fetch')
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_search' LANGUAGE C VOLATILE;
CREATE FUNCTION count(index text, body jsonb DEFAULT '{}')
RETURNS bigint AS 'MODULE_PATHNAME', 'se_sql_count' LANGUAGE C VOLATILE;
CREATE FUNCTION search_hits(index text, body jsonb DEFAULT '{}')
RETURNS TABLE(_index text, _id text, _score real, _source jsonb)
LANGUAGE sql VOLATILE AS $$
  SELECT h->>'_index', h->>'_id', (h->>'_score')::real, h->'_source'
  FROM jsonb_array_elements(@extschema@.search(index, body)->'hits'->'hits') AS h
$$;

-- ---------- update/delete by query, reindex, tasks (write) ----------
CREATE FUNCTION update_by_query(index text, body jsonb DEFAULT '{}', slices text DEFAULT '1',
                                conflicts text DEFAULT 'abort', scroll_size int DEFAULT 1000,
                                max_docs bigint DEFAULT NULL, requests_per_second real DEFAULT -1,
                                refresh boolean DEFAULT false, wait_for_completion boolean DEFAULT true)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_update_by_query' LANGUAGE C VOLATILE;
CREATE FUNCTION delete_by_query(index text, body jsonb DEFAULT '{}', slices text DEFAULT '1',
                                conflicts text DEFAULT 'abort', scroll_size int DEFAULT 1000,
                                max_docs bigint DEFAULT NULL, requests_per_second real DEFAULT -1,
                                refresh boolean DEFAULT false, wait_for_completion boolean DEFAULT true)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_delete_by_query' LANGUAGE C VOLATILE;
CREATE FUNCTION reindex(body jsonb, slices text DEFAULT '1', requests_per_second real DEFAULT -1,
                        refresh boolean DEFAULT false, wait_for_completion boolean DEFAULT true)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_reindex' LANGUAGE C VOLATILE;
CREATE FUNCTION get_task(id text, wait_for_completion boolean DEFAULT false)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_get_task' LANGUAGE C VOLATILE;
CREATE FUNCTION cancel_task(id text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_cancel_task' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION rethrottle_task(id text, requests_per_second real)
RETURNS jsonb AS 'MODULE_PATHNAME', 'se_sql_rethrottle_task' LANGUAGE C VOLATILE;
CREATE FUNCTION _tasks(OUT task_id text, OUT node text, OUT action text, OUT status text,
                       OUT started timestamptz, OUT running_time interval, OUT total bigint,
                       OUT updated bigint, OUT created bigint, OUT deleted bigint, OUT batches bigint,
                       OUT version_conflicts bigint, OUT noops bigint, OUT requests_per_second real,
                       OUT cancellable boolean, OUT slices jsonb, OUT description text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_tasks' LANGUAGE C VOLATILE;
CREATE VIEW tasks AS SELECT * FROM _tasks();

-- ---------- the ES REST entry point (each route checks as its typed function does) ----------
CREATE FUNCTION request(method text, path text, body text DEFAULT NULL,
                        OUT status int, OUT body jsonb)
AS 'MODULE_PATHNAME', 'se_sql_request' LANGUAGE C VOLATILE;

-- ---------- views (read) ----------
CREATE FUNCTION _cat_indices(OUT health text, OUT status text, OUT index text, OUT uuid text,
                             OUT pri int, OUT rep int, OUT "docs.count" bigint,
                             OUT "docs.deleted" bigint, OUT "store.size" bigint,
                             OUT "pri.store.size" bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_indices' LANGUAGE C VOLATILE;
CREATE VIEW indices AS SELECT * FROM _cat_indices();

-- _cat/aliases: one row per alias and index (those the caller may view)
CREATE FUNCTION _cat_aliases(OUT alias text, OUT index text, OUT filter jsonb,
                             OUT index_routing text, OUT search_routing text,
                             OUT is_write_index boolean, OUT is_hidden boolean)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_aliases' LANGUAGE C VOLATILE;
CREATE VIEW aliases AS SELECT * FROM _cat_aliases();
-- (granted here: PUBLIC's revoke below leaves search_engine_user's grants)
GRANT EXECUTE ON FUNCTION _cat_aliases() TO search_engine_user;
GRANT SELECT ON aliases TO search_engine_user;

-- _cat/templates: composable (order = priority) and legacy index templates
CREATE FUNCTION _cat_templates(OUT name text, OUT index_patterns text, OUT "order" bigint,
                               OUT version bigint, OUT composed_of text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_templates' LANGUAGE C VOLATILE;
CREATE VIEW templates AS SELECT * FROM _cat_templates();
-- (granted here: PUBLIC's revoke below leaves search_engine_user's grants)
GRANT EXECUTE ON FUNCTION _cat_templates() TO search_engine_user;
GRANT SELECT ON templates TO search_engine_user;

CREATE FUNCTION _cat_thread_pool(OUT node_name text, OUT name text, OUT threads int,
                                 OUT active int, OUT queue int, OUT queue_size int,
                                 OUT rejected bigint, OUT completed bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_thread_pool' LANGUAGE C VOLATILE;
CREATE VIEW thread_pool AS SELECT * FROM _cat_thread_pool();

CREATE FUNCTION _cat_segments(OUT index text, OUT shard int, OUT prirep text, OUT ip text,
                              OUT segment text, OUT generation bigint, OUT "docs.count" bigint,
                              OUT "docs.deleted" bigint, OUT size text, OUT committed text,
                              OUT searchable text, OUT version text, OUT compound text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_segments' LANGUAGE C VOLATILE;
CREATE VIEW segments AS SELECT * FROM _cat_segments();

CREATE FUNCTION _cat_shards(OUT index text, OUT shard int, OUT prirep text, OUT state text,
                            OUT docs bigint, OUT store bigint, OUT ip text, OUT node text,
                            OUT write_worker int)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_shards' LANGUAGE C VOLATILE;
CREATE VIEW shards AS SELECT * FROM _cat_shards();

-- Peer recoveries (src/replication) every node remembers, as _cat/recovery;
-- times in ms, sizes in bytes.
CREATE FUNCTION _cat_recovery(OUT index text, OUT shard int, OUT start_time text,
                              OUT start_time_millis bigint, OUT stop_time text,
                              OUT stop_time_millis bigint, OUT "time" bigint, OUT type text,
                              OUT stage text, OUT source_host text, OUT source_node text,
                              OUT target_host text, OUT target_node text, OUT repository text,
                              OUT snapshot text, OUT files int, OUT files_recovered int,
                              OUT files_percent text, OUT files_total int, OUT bytes bigint,
                              OUT bytes_recovered bigint, OUT bytes_percent text,
                              OUT bytes_total bigint, OUT translog_ops bigint,
                              OUT translog_ops_recovered bigint, OUT translog_ops_percent text,
                              OUT throttle_time bigint, OUT attempts int, OUT failure text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_recovery' LANGUAGE C VOLATILE;
CREATE VIEW recovery AS SELECT * FROM _cat_recovery();

-- Shard copies and disk per data node, as _cat/allocation (the last row,
-- node 'UNASSIGNED', counts the unassigned copies); sizes in bytes.
CREATE FUNCTION _cat_allocation(OUT shards int, OUT disk_indices bigint, OUT disk_used bigint,
                                OUT disk_avail bigint, OUT disk_total bigint,
                                OUT disk_percent int, OUT host text, OUT ip text, OUT node text,
                                OUT node_role text)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_cat_allocation' LANGUAGE C VOLATILE;
CREATE VIEW allocation AS SELECT * FROM _cat_allocation();

-- ---------- transport ----------
-- Peers call _transport over libpq (src/transport): one action of a node's
-- request on this node.  Only search_engine_node may, the role peers log
-- in as (a LOGIN role made a member of it, authenticated as pg_hba.conf
-- says: SCRAM or certificates).
CREATE FUNCTION _transport(action text, payload bytea) RETURNS bytea
AS 'MODULE_PATHNAME', 'se_sql_transport' LANGUAGE C VOLATILE STRICT;
-- The same for an action whose answer is a stream of rows (a peer
-- recovery's file chunks), sent as they are made.
CREATE FUNCTION _transport_stream(action text, payload bytea) RETURNS SETOF bytea
AS 'MODULE_PATHNAME', 'se_sql_transport_stream' LANGUAGE C VOLATILE STRICT ROWS 100;
-- Replica apply on one node (src/replication): shard's operations read from
-- source's translog applied to target's copy as a primary's replica_ops are
-- (chunk operations a request, the chunks in reverse order if asked).
-- Superuser only (REVOKEd below with every function): for tests.
CREATE FUNCTION _replica_apply_from(source text, target text, shard int, primary_term bigint,
                                    chunk int, reverse boolean) RETURNS text
AS 'MODULE_PATHNAME', 'se_sql_replica_apply_from' LANGUAGE C VOLATILE STRICT;
-- The nodes of the cluster as this node applied them (one on a
-- single-node cluster); term is the master's.
CREATE FUNCTION _cluster_nodes(OUT name text, OUT ephemeral_id text, OUT "node.role" text,
                               OUT master boolean, OUT attributes text, OUT conninfo text,
                               OUT ip text, OUT disk_total_bytes bigint, OUT disk_free_bytes bigint,
                               OUT started_at timestamptz, OUT term bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'se_sql_nodes' LANGUAGE C VOLATILE;
CREATE VIEW nodes AS SELECT * FROM _cluster_nodes();

-- One fenced write of state/<key_suffix> through the master (value NULL:
-- delete); the etcd revision it was applied at.  Superusers only: for
-- operators and tests (nothing is granted on it below).
CREATE FUNCTION _cluster_commit(key_suffix text, value text) RETURNS bigint
AS 'MODULE_PATHNAME', 'se_sql_cluster_commit' LANGUAGE C VOLATILE;

-- ---------- privileges ----------
-- Functions are for search_engine_user (so for every group role and every
-- role given an index grant); each checks the caller's privileges on the
-- indices it touches (src/security/acl.c) and refuses with 42501, ES 403.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @extschema@ FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA @extschema@ FROM PUBLIC;

GRANT EXECUTE ON FUNCTION search(text, jsonb, text), search_hits(text, jsonb), count(text, jsonb),
  get_doc(text, text, text), mget(jsonb, text), _cat_indices(), _cat_thread_pool(),
  _cat_segments(), _cat_shards(), _cat_recovery(), _cluster_nodes(), get_mapping(text), get_index(text), cluster_health(text, text, int),
  cluster_settings(boolean, boolean), put_cluster_settings(jsonb), allocation_explain(jsonb, boolean),
  cluster_reroute(jsonb, boolean, boolean, boolean),
  _tasks(), get_task(text, boolean),
  bulk(text, text, text, int),
  index_doc(text, text, jsonb, text, text, text, bigint, bigint),
  delete_doc(text, text, text, text, bigint, bigint),
  update_doc(text, text, jsonb, text, text, bigint, bigint), refresh(text),
  update_by_query(text, jsonb, text, text, int, bigint, real, boolean, boolean),
  delete_by_query(text, jsonb, text, text, int, bigint, real, boolean, boolean),
  reindex(jsonb, text, real, boolean, boolean), cancel_task(text), rethrottle_task(text, real),
  create_index(text, jsonb), delete_index(text), put_mapping(text, jsonb), put_settings(text, jsonb),
  close_index(text), open_index(text), flush(text), force_merge(text, int), verify_index(text),
  request(text, text, text)
  TO search_engine_user;
GRANT SELECT ON indices, thread_pool, segments, shards, recovery, nodes, tasks, index_grants TO search_engine_user;
-- _cat/allocation (cluster:monitor/allocation is checked inside)
GRANT EXECUTE ON FUNCTION _cat_allocation() TO search_engine_user;
GRANT SELECT ON allocation TO search_engine_user;

GRANT EXECUTE ON FUNCTION "grant"(text, text, regrole), "revoke"(text, text, regrole),
  _acl_validate(text, text) TO search_engine_admin;
GRANT SELECT, INSERT, DELETE ON _index_grants TO search_engine_admin;
GRANT USAGE ON SCHEMA @extschema@ TO search_engine_node;
GRANT EXECUTE ON FUNCTION _transport(text, bytea), _transport_stream(text, bytea)
  TO search_engine_node;

-- =====================================================================
-- Foreign data wrapper (src/fdw): indices as foreign tables.
--   CREATE SERVER s FOREIGN DATA WRAPPER search_engine;
--   CREATE FOREIGN TABLE products (_id text, name text, price float8,
--     _score real) SERVER s OPTIONS (index 'products');
--   SELECT _id, _score FROM products WHERE name @@@ 'running shoe'
--     ORDER BY _score DESC LIMIT 10;
-- =====================================================================
CREATE FUNCTION fdw_handler() RETURNS fdw_handler
AS 'MODULE_PATHNAME', 'se_fdw_handler' LANGUAGE C STRICT;
CREATE FUNCTION fdw_validator(text[], oid) RETURNS void
AS 'MODULE_PATHNAME', 'se_fdw_validator' LANGUAGE C STRICT;
CREATE FOREIGN DATA WRAPPER search_engine HANDLER fdw_handler VALIDATOR fdw_validator;

-- The full-text operator @@@: "the document matches the query".  Only a
-- search_engine foreign scan can evaluate it (it is pushed into the DSL);
-- evaluated anywhere else its function raises an error saying so.
--   text   @@@ text   column @@@ 'query string'  -> {"match": {"<field>": ...}}
--   text[] @@@ text   the same on an array column
--   jsonb  @@@ jsonb  _source @@@ '{"match": {"name": "shoe"}}'  (query DSL)
--   record @@@ jsonb  t @@@ '{"bool": {...}}'  (the table's row, query DSL)
CREATE FUNCTION fdw_match(text, text) RETURNS boolean
AS 'MODULE_PATHNAME', 'se_fdw_match_text' LANGUAGE C STABLE;
CREATE FUNCTION fdw_match(text[], text) RETURNS boolean
AS 'MODULE_PATHNAME', 'se_fdw_match_text_array' LANGUAGE C STABLE;
CREATE FUNCTION fdw_match(jsonb, jsonb) RETURNS boolean
AS 'MODULE_PATHNAME', 'se_fdw_match_dsl' LANGUAGE C STABLE;
CREATE FUNCTION fdw_match(record, jsonb) RETURNS boolean
AS 'MODULE_PATHNAME', 'se_fdw_match_row' LANGUAGE C STABLE;
CREATE FUNCTION fdw_match_sel(internal, oid, internal, integer) RETURNS float8
AS 'MODULE_PATHNAME', 'se_fdw_match_restrict' LANGUAGE C STABLE STRICT;
CREATE OPERATOR @@@ (LEFTARG = text, RIGHTARG = text, FUNCTION = fdw_match, RESTRICT = fdw_match_sel);
CREATE OPERATOR @@@ (LEFTARG = text[], RIGHTARG = text, FUNCTION = fdw_match, RESTRICT = fdw_match_sel);
CREATE OPERATOR @@@ (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = fdw_match, RESTRICT = fdw_match_sel);
CREATE OPERATOR @@@ (LEFTARG = record, RIGHTARG = jsonb, FUNCTION = fdw_match, RESTRICT = fdw_match_sel);

-- Column types are checked against the index mapping when a foreign table
-- is created, altered or imported (and again when it is queried).
CREATE FUNCTION _fdw_check_table(regclass) RETURNS void
AS 'MODULE_PATHNAME', 'se_fdw_check_table' LANGUAGE C STRICT;
CREATE FUNCTION _fdw_ddl_check() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT objid FROM pg_event_trigger_ddl_commands()
           WHERE classid = 'pg_catalog.pg_class'::regclass AND object_type = 'foreign table'
  LOOP
    PERFORM @extschema@._fdw_check_table(r.objid::regclass);
  END LOOP;
END
$$;
CREATE EVENT TRIGGER search_engine_fdw_check ON ddl_command_end
  WHEN TAG IN ('CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE', 'IMPORT FOREIGN SCHEMA')
  EXECUTE FUNCTION _fdw_ddl_check();

-- Privileges: admins create servers; access to each foreign table is then
-- governed by its own table privileges (GRANT SELECT/INSERT/... ON it).
REVOKE ALL ON FUNCTION fdw_handler(), fdw_validator(text[], oid), _fdw_check_table(regclass),
  _fdw_ddl_check() FROM PUBLIC;
REVOKE ALL ON FUNCTION fdw_match(text, text), fdw_match(text[], text), fdw_match(jsonb, jsonb),
  fdw_match(record, jsonb), fdw_match_sel(internal, oid, internal, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fdw_match(text, text), fdw_match(text[], text), fdw_match(jsonb, jsonb),
  fdw_match(record, jsonb), fdw_match_sel(internal, oid, internal, integer) TO search_engine_user;
GRANT USAGE ON FOREIGN DATA WRAPPER search_engine TO search_engine_admin;
