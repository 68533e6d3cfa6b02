-- Least privilege: group roles, index-level grants, scripts and tasks as
-- their caller.  Every refusal is SQLSTATE 42501 (ES 403 security_exception).
SET client_min_messages = warning;
CREATE ROLE sec_none;
CREATE ROLE sec_read IN ROLE search_engine_read;
CREATE ROLE sec_write IN ROLE search_engine_write;
CREATE ROLE sec_admin IN ROLE search_engine_admin;
CREATE ROLE sec_lr;          -- read on logs-*
CREATE ROLE sec_lw;          -- write on logs-*
CREATE ROLE sec_lm;          -- manage on logs-*
CREATE ROLE sec_lrw;         -- read and write on logs-*
-- no periodic refresh until the matrix sets one: its reindex rows copy what
-- is visible in logs-a, which must not depend on how fast the rows run
SELECT search_engine.create_index('logs-a', '{"settings": {"number_of_shards": 2, "refresh_interval": -1}}') IS NOT NULL AS created;
SELECT search_engine.create_index('other') IS NOT NULL AS created;
SELECT (search_engine.bulk($$
{"index": {"_index": "logs-a", "_id": "1"}}
{"m": "one", "n": 1}
{"index": {"_index": "logs-a", "_id": "2"}}
{"m": "two", "n": 2}
{"index": {"_index": "other", "_id": "1"}}
{"m": "secret", "n": 3}
$$, refresh => 'true')::jsonb->>'errors') AS errors;
-- an index per role that may be deleted
SELECT count(search_engine.create_index('logs-d-' || r))
  FROM unnest(ARRAY['sec_none','sec_read','sec_write','sec_admin','sec_lr','sec_lw','sec_lm','sec_lrw']) r;

-- grants: admin-only, validated, shown in a view
SELECT search_engine.grant('read', 'logs-*', 'sec_lr');
SELECT search_engine.grant('write', 'logs-*', 'sec_lw');
SELECT search_engine.grant('manage', 'logs-*', 'sec_lm');
SELECT search_engine.grant('read', 'logs-*', 'sec_lrw');
SELECT search_engine.grant('write', 'logs-*', 'sec_lrw');
SELECT search_engine.grant('read', 'logs-*', 'sec_lr');       -- again: no-op
SELECT search_engine.grant('delete', 'logs-*', 'sec_lr');
SELECT search_engine.grant('read', 'Logs-*', 'sec_lr');
SELECT search_engine.grant('read', 'a,b', 'sec_lr');
SELECT search_engine.grant('read', 'logs-*', 'no_such_role');
SELECT * FROM search_engine.index_grants ORDER BY 1::text, 2, 3;
SELECT pg_has_role('sec_lr', 'search_engine_user', 'MEMBER') AS lr_is_user,
       pg_has_role('sec_none', 'search_engine_user', 'MEMBER') AS none_is_user;
SET ROLE sec_write;
SELECT search_engine.grant('read', 'other', 'sec_write');
RESET ROLE;

-- try_as(role, sql): 'ok' or the SQLSTATE; %R in sql becomes the role name.
-- bulk items and mget documents fail one by one: bulk_ok and mget_ok raise.
CREATE FUNCTION try_as(r text, stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  res text := 'ok';
BEGIN
  PERFORM set_config('role', r, true);
  BEGIN
    EXECUTE replace(stmt, '%R', r);
  EXCEPTION WHEN OTHERS THEN
    res := SQLSTATE;
  END;
  PERFORM set_config('role', 'none', true);
  RETURN res;
END
$$;
CREATE FUNCTION bulk_ok(body text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  item jsonb;
BEGIN
  FOR item IN SELECT jsonb_path_query(search_engine.bulk(body)::jsonb, '$.items[*].*') LOOP
    IF (item->>'status')::int = 403 THEN
      RAISE EXCEPTION '%', item->'error'->>'reason' USING ERRCODE = 'insufficient_privilege';
    ELSIF (item->>'status')::int >= 300 THEN
      RAISE EXCEPTION '%', item->'error'->>'reason';
    END IF;
  END LOOP;
END
$$;
CREATE FUNCTION mget_ok(body jsonb, index text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF jsonb_path_exists(search_engine.mget(body, index), '$.docs[*].error ? (@.type == "security_exception")') THEN
    RAISE EXCEPTION 'mget refused a document' USING ERRCODE = 'insufficient_privilege';
  END IF;
END
$$;
CREATE FUNCTION rest_as(r text, method text, path text, body text DEFAULT NULL) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  st int;
BEGIN
  PERFORM set_config('role', r, true);
  BEGIN
    SELECT status INTO st FROM search_engine.request(method, replace(path, '%R', r), body);
  EXCEPTION WHEN OTHERS THEN
    st := -1;
  END;
  PERFORM set_config('role', 'none', true);
  RETURN st;
END
$$;
CREATE TABLE ops (ord serial, label text, stmt text);
INSERT INTO ops (label, stmt) VALUES
  ('search logs-a',         $$SELECT search_engine.search('logs-a')$$),
  ('search other',          $$SELECT search_engine.search('other')$$),
  ('search_hits logs-a',    $$SELECT * FROM search_engine.search_hits('logs-a')$$),
  ('count logs-a',          $$SELECT search_engine.count('logs-a')$$),
  ('count missing logs-zz', $$SELECT search_engine.count('logs-zz')$$),
  ('get_doc logs-a',        $$SELECT search_engine.get_doc('logs-a', '1')$$),
  ('get_doc other',         $$SELECT search_engine.get_doc('other', '1')$$),
  ('mget logs-a',           $$SELECT mget_ok('{"ids": ["1"]}', 'logs-a')$$),
  ('index_doc logs-a',      $$SELECT search_engine.index_doc('logs-a', '%R', '{"m": "x"}')$$),
  ('index_doc other',       $$SELECT search_engine.index_doc('other', '%R', '{"m": "x"}')$$),
  ('update_doc logs-a',     $$SELECT search_engine.update_doc('logs-a', '2', '{"doc": {"n": 5}}')$$),
  ('delete_doc logs-a',     $$SELECT search_engine.delete_doc('logs-a', 'gone')$$),
  ('bulk logs-a',           $$SELECT bulk_ok('{"index": {"_index": "logs-a", "_id": "b"}}' || E'\n{"m": "b"}\n')$$),
  ('bulk auto-create',      $$SELECT bulk_ok('{"index": {"_index": "logs-auto-%R", "_id": "b"}}' || E'\n{"m": "b"}\n')$$),
  ('bulk other',            $$SELECT bulk_ok('{"index": {"_index": "other", "_id": "b"}}' || E'\n{"m": "b"}\n')$$),
  ('update_by_query',       $$SELECT search_engine.update_by_query('logs-a', '{"query": {"term": {"m": "none"}}}')$$),
  ('delete_by_query',       $$SELECT search_engine.delete_by_query('logs-a', '{"query": {"term": {"m": "none"}}}')$$),
  ('reindex logs to logs',  $$SELECT search_engine.reindex('{"source": {"index": "logs-a", "query": {"ids": {"values": ["1", "2"]}}}, "dest": {"index": "logs-r-%R"}}')$$),
  ('reindex other to logs', $$SELECT search_engine.reindex('{"source": {"index": "other", "query": {"ids": {"values": ["1"]}}}, "dest": {"index": "logs-r2-%R"}}')$$),
  ('refresh logs-a',        $$SELECT search_engine.refresh('logs-a')$$),
  ('flush logs-a',          $$SELECT search_engine.flush('logs-a')$$),
  ('force_merge logs-a',    $$SELECT search_engine.force_merge('logs-a')$$),
  ('verify_index logs-a',   $$SELECT search_engine.verify_index('logs-a')$$),
  ('get_index logs-a',      $$SELECT search_engine.get_index('logs-a')$$),
  ('get_mapping logs-a',    $$SELECT search_engine.get_mapping('logs-a')$$),
  ('cluster_health logs-a', $$SELECT search_engine.cluster_health('logs-a')$$),
  ('create_index logs-c',   $$SELECT search_engine.create_index('logs-c-%R')$$),
  ('create_index other2',   $$SELECT search_engine.create_index('other2-%R')$$),
  ('put_mapping logs-a',    $$SELECT search_engine.put_mapping('logs-a', '{"properties": {"k": {"type": "keyword"}}}')$$),
  ('put_settings logs-a',   $$SELECT search_engine.put_settings('logs-a', '{"index": {"refresh_interval": "1s"}}')$$),
  ('close+open logs-a',     $$SELECT search_engine.close_index('logs-a'), search_engine.open_index('logs-a')$$),
  ('delete_index logs-d',   $$SELECT search_engine.delete_index('logs-d-%R')$$),
  ('delete_index other',    $$SELECT search_engine.delete_index('other-nope')$$),
  ('view indices',          $$SELECT * FROM search_engine.indices$$),
  ('view shards',           $$SELECT * FROM search_engine.shards$$),
  ('view segments',         $$SELECT * FROM search_engine.segments$$),
  ('view thread_pool',      $$SELECT * FROM search_engine.thread_pool$$),
  ('view tasks',            $$SELECT * FROM search_engine.tasks$$),
  ('view index_grants',     $$SELECT * FROM search_engine.index_grants$$),
  ('grant',                 $$SELECT search_engine.grant('read', 'x-*', '%R')$$);
-- rows: operations; columns: roles (ok, or the SQLSTATE)
SELECT label,
       try_as('sec_none', stmt) AS "none", try_as('sec_read', stmt) AS "read",
       try_as('sec_write', stmt) AS "write", try_as('sec_admin', stmt) AS "admin",
       try_as('sec_lr', stmt) AS "logs r", try_as('sec_lw', stmt) AS "logs w",
       try_as('sec_lm', stmt) AS "logs m", try_as('sec_lrw', stmt) AS "logs rw"
  FROM ops ORDER BY ord;

-- the REST face answers ES's status for the same rules
CREATE TABLE routes (ord serial, method text, path text, body text);
INSERT INTO routes (method, path, body) VALUES
  ('GET', '/', NULL),
  ('GET', '/logs-a/_search', NULL),
  ('GET', '/other/_search', NULL),
  ('GET', '/logs-a,other/_search', NULL),
  ('POST', '/logs-a/_count', '{"query": {"match_all": {}}}'),
  ('GET', '/logs-a/_doc/1', NULL),
  ('PUT', '/logs-a/_doc/rest-%R', '{"m": "rest"}'),
  ('POST', '/other/_doc', '{"m": "rest"}'),
  ('PUT', '/logs-rest-%R', NULL),
  ('GET', '/logs-a/_mapping', NULL),
  ('POST', '/logs-a/_refresh', NULL),
  ('POST', '/logs-a/_flush', NULL),
  ('GET', '/_cat/indices', NULL),
  ('GET', '/_tasks', NULL);
SELECT method, path,
       rest_as('sec_none', method, path, body) AS "none", rest_as('sec_read', method, path, body) AS "read",
       rest_as('sec_write', method, path, body) AS "write", rest_as('sec_admin', method, path, body) AS "admin",
       rest_as('sec_lr', method, path, body) AS "logs r", rest_as('sec_lw', method, path, body) AS "logs w",
       rest_as('sec_lm', method, path, body) AS "logs m"
  FROM routes ORDER BY ord;

-- the privilege matrix above wrote without refresh: make its documents visible
-- before counting them (the periodic refresh alone would make this racy)
SELECT search_engine.refresh('*') IS NOT NULL AS refreshed;

-- the 403 body, as an ES node answers a user
SET ROLE sec_lr;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/other/_search');
\set VERBOSITY verbose
SELECT search_engine.search('other');
\set VERBOSITY default
-- wildcards expand to what the role may read; an explicit name is checked
SELECT string_agg(index, ',' ORDER BY index) FROM search_engine.indices;
SELECT (search_engine.search('*', '{"size": 0}')->'hits'->'total'->>'value')::int AS visible_hits;
SELECT (search_engine.search('_all,-logs-a', '{"size": 0}')->'hits'->'total'->>'value')::int AS excluded;
SELECT search_engine.count('logs-*,other');
-- mget answers a per-document error for what the role may not read
SELECT d->>'_index' AS index, d->>'found' AS found, d->'error'->>'type' AS error
  FROM jsonb_array_elements(search_engine.mget('{"docs": [{"_index": "logs-a", "_id": "1"},
                                                          {"_index": "other", "_id": "1"}]}')->'docs') d;
RESET ROLE;
SET ROLE sec_read;
SELECT string_agg(index, ',' ORDER BY index) FROM search_engine.indices WHERE index LIKE 'other%';
RESET ROLE;

-- lang sql scripts run as the caller: current_user, no superuser functions,
-- no tables it cannot read, no SET ROLE; synchronous and as a task
CREATE TABLE private_table (secret text);
INSERT INTO private_table VALUES ('payroll');
SELECT search_engine.create_index('sec') IS NOT NULL AS created;
SELECT search_engine.index_doc('sec', '1', '{"f": "x"}', refresh => 'true')->>'result' AS result;
SET ROLE sec_write;
SELECT search_engine.update_by_query('sec', $${"script": {"lang": "sql",
  "source": "jsonb_build_object('f', left(pg_read_file('PG_VERSION'), 40))"}}$$, refresh => true)->'failures';
SELECT search_engine.update_by_query('sec', $${"script": {"lang": "sql",
  "source": "jsonb_build_object('f', (SELECT secret FROM public.private_table))"}}$$, refresh => true)->'failures';
SELECT search_engine.update_by_query('sec', $${"script": {"lang": "sql",
  "source": "jsonb_build_object('f', set_config('role', 'sec_admin', true))"}}$$, refresh => true)->'failures';
SELECT search_engine.update_by_query('sec', $${"script": {"lang": "sql",
  "source": "jsonb_build_object('user', current_user::text, 'path', current_setting('search_path'))"}}$$,
  refresh => true)->>'updated' AS updated;
SELECT search_engine.get_doc('sec', '1')->'_source' AS source;
-- as a task
SELECT search_engine.update_by_query('sec', $${"script": {"lang": "sql",
  "source": "jsonb_build_object('f', left(pg_read_file('PG_VERSION'), 40), 'u', current_user::text)"}}$$,
  wait_for_completion => false)->>'task' AS task \gset
SELECT search_engine.get_task(:'task', true)->'response'->'failures'->0->'cause' AS cause;
SELECT search_engine.update_by_query('sec', $${"script": {"lang": "sql",
  "source": "jsonb_build_object('task_user', current_user::text)"}}$$,
  refresh => true, wait_for_completion => false)->>'task' AS task \gset
SELECT search_engine.get_task(:'task', true)->'response'->>'updated' AS updated;
SELECT search_engine.get_doc('sec', '1')->'_source' AS source;
RESET ROLE;
SELECT search_engine.get_doc('sec', '1')->'_source'->>'f' IS NULL AS file_not_read;

-- tasks belong to their submitter: another role neither sees nor steers them
SELECT search_engine.bulk(string_agg(format(E'{"index": {"_index": "slow", "_id": "%s"}}\n{"n": %s}', i, i), E'\n') || E'\n',
                          refresh => 'true')::jsonb->>'errors' AS errors
  FROM generate_series(1, 50) i;
SET ROLE sec_write;
SELECT search_engine.update_by_query('slow', '{}', scroll_size => 1, requests_per_second => 1,
                                     wait_for_completion => false)->>'task' AS slow_task \gset
RESET ROLE;
SET ROLE sec_lrw;
SELECT count(*) AS others_tasks_seen FROM search_engine.tasks WHERE task_id = :'slow_task';
SELECT try_as('sec_lrw', format('SELECT search_engine.get_task(%L)', :'slow_task')) AS get_task,
       try_as('sec_lrw', format('SELECT search_engine.cancel_task(%L)', :'slow_task')) AS cancel,
       try_as('sec_lrw', format('SELECT search_engine.rethrottle_task(%L, 1000)', :'slow_task')) AS rethrottle;
SELECT status FROM search_engine.request('GET', '/_tasks/' || :'slow_task');
SELECT status FROM search_engine.request('POST', '/_tasks/' || :'slow_task' || '/_cancel');
SELECT (SELECT count(*) FROM jsonb_object_keys(body->'nodes'->'vm'->'tasks')) AS listed
  FROM search_engine.request('GET', '/_tasks?actions=*byquery');
RESET ROLE;
SET ROLE sec_write;
SELECT count(*) AS own_task_seen FROM search_engine.tasks WHERE task_id = :'slow_task';
SELECT search_engine.cancel_task(:'slow_task')->'nodes' IS NOT NULL AS cancelled;
SELECT search_engine.get_task(:'slow_task', true)->>'completed' AS completed;
RESET ROLE;
-- admins see every task
SET ROLE sec_admin;
SELECT count(*) AS admin_sees FROM search_engine.tasks WHERE task_id = :'slow_task';
RESET ROLE;

-- the FDW: scans need read, writes need write, IMPORT takes only readable indices
CREATE SERVER sec_srv FOREIGN DATA WRAPPER search_engine;
CREATE FOREIGN TABLE ft_logs (_id text, m text) SERVER sec_srv OPTIONS (index 'logs-a');
CREATE FOREIGN TABLE ft_other (_id text, m text) SERVER sec_srv OPTIONS (index 'other');
GRANT SELECT, INSERT ON ft_logs, ft_other TO sec_lr, sec_lw;
GRANT USAGE ON FOREIGN SERVER sec_srv TO sec_lr;
CREATE SCHEMA lr_import AUTHORIZATION sec_lr;
SET ROLE sec_lr;
SELECT count(*) FROM ft_logs;
SELECT count(*) FROM ft_other;
INSERT INTO ft_logs VALUES ('fdw1', 'x');
IMPORT FOREIGN SCHEMA "*" FROM SERVER sec_srv INTO lr_import;
SELECT string_agg(foreign_table_name, ',' ORDER BY foreign_table_name) AS imported
  FROM information_schema.foreign_tables WHERE foreign_table_schema = 'lr_import';
IMPORT FOREIGN SCHEMA "other" FROM SERVER sec_srv INTO lr_import;
RESET ROLE;
SET ROLE sec_lw;
INSERT INTO ft_logs VALUES ('fdw2', 'x');
INSERT INTO ft_other VALUES ('fdw2', 'x');
SELECT count(*) FROM ft_logs;
RESET ROLE;
SELECT search_engine.get_doc('logs-a', 'fdw2')->>'found' AS fdw_write_landed;

-- revoking takes effect at once, in this session and in others' caches
SELECT search_engine.revoke('read', 'logs-*', 'sec_lr');
SELECT search_engine.revoke('read', 'logs-*', 'sec_lr');
SELECT try_as('sec_lr', $$SELECT search_engine.count('logs-a')$$) AS after_revoke;
SELECT search_engine.revoke('all', 'logs-*', 'sec_lrw');
SELECT * FROM search_engine.index_grants ORDER BY 1::text, 2, 3;

DROP SCHEMA lr_import CASCADE;
DROP SERVER sec_srv CASCADE;
DELETE FROM search_engine._index_grants;
DROP OWNED BY sec_none, sec_read, sec_write, sec_admin, sec_lr, sec_lw, sec_lm, sec_lrw;
DROP ROLE sec_none, sec_read, sec_write, sec_admin, sec_lr, sec_lw, sec_lm, sec_lrw;
