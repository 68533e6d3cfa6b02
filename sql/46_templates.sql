-- Index templates (issue 18: rsyslog's daily indices get their mappings):
-- composable _index_template built from _component_template pieces,
-- priority, legacy _template by order (a composable match wins), ES's
-- errors, _simulate_index, _cat/templates, and templates applied both
-- on an explicit create (the body over the template) and on a bulk's
-- auto-create.
SET client_min_messages = warning;

-- components: settings and mappings pieces
SELECT status, body FROM search_engine.request('PUT', '/_component_template/tp-shards',
  '{"template":{"settings":{"number_of_shards":2,"index.number_of_replicas":0}},"version":1}');
SELECT status, body FROM search_engine.request('PUT', '/_component_template/tp-map',
  '{"template":{"mappings":{"properties":{"host":{"type":"keyword"},"msg":{"type":"text"},"geo":{"properties":{"city":{"type":"keyword"}}}}}},"_meta":{"owner":"ops"}}');
-- the composable template: components in order, its own section last
SELECT status, body FROM search_engine.request('PUT', '/_index_template/tp-logs',
  '{"index_patterns":["tplogs-*"],"composed_of":["tp-shards","tp-map"],"priority":100,"version":7,
    "template":{"settings":{"index":{"refresh_interval":"5s"}},
                "mappings":{"properties":{"geo":{"properties":{"zip":{"type":"keyword"}}},"pid":{"type":"integer"}}},
                "aliases":{"tplogs-all":{}}}}');
-- a lower priority template over the same names
SELECT status FROM search_engine.request('PUT', '/_index_template/tp-low',
  '{"index_patterns":["tplogs-*","tpother-*"],"priority":1,"template":{"settings":{"number_of_shards":1}}}');

-- ES's refusals
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/tp-clash', '{"index_patterns":["tplogs-2*"],"priority":100}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/tp-miss', '{"index_patterns":["tpm-*"],"composed_of":["tp-map","nope"]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/Tp_Bad', '{"index_patterns":["_a b","ok-*"]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/tp-ds', '{"index_patterns":["tpds-*"],"data_stream":{}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/tp-x', '{"index_patterns":["tpx-*"],"foo":1}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/tp-x', '{"priority":3}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/tp-x', '{"index_patterns":"tpx-*","template":{"settings":{"number_of_shards":"many"}}}');
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('PUT', '/_index_template/tp-x', '{"index_patterns":"tpx-*","template":{"mappings":{"properties":{"a":{"type":"nosuchtype"}}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_index_template/tp-low?create=true', '{"index_patterns":["tpz-*"]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('DELETE', '/_component_template/tp-map');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('DELETE', '/_index_template/nosuch');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/_index_template/nosuch');

-- reading them back: settings nested as strings, as ES shows them
SELECT status, jsonb_pretty(body) FROM search_engine.request('GET', '/_index_template/tp-logs');
SELECT status, jsonb_pretty(body) FROM search_engine.request('GET', '/_component_template/tp-*');
SELECT status, (SELECT array_agg(t->>'name' ORDER BY t->>'name') FROM jsonb_array_elements(body->'index_templates') t) AS names
  FROM search_engine.request('GET', '/_index_template');
SELECT status, body FROM search_engine.request('HEAD', '/_index_template/tp-logs');
SELECT status, body FROM search_engine.request('HEAD', '/_index_template/nosuch');

-- what an index would get, and the lower-priority template it overlaps
SELECT status, jsonb_pretty(body) FROM search_engine.request('POST', '/_index_template/_simulate_index/tplogs-2026.12.02');
SELECT status, body FROM search_engine.request('POST', '/_index_template/_simulate_index/unmatched');

-- explicit create: the request's settings and mappings over the template's
SELECT status FROM search_engine.request('PUT', '/tplogs-explicit',
  '{"settings":{"index.number_of_shards":1},"mappings":{"properties":{"extra":{"type":"long"}}}}');
SELECT body->'tplogs-explicit'->'settings'->'index'->>'number_of_shards' AS shards,
       body->'tplogs-explicit'->'settings'->'index'->>'number_of_replicas' AS replicas,
       body->'tplogs-explicit'->'settings'->'index'->>'refresh_interval' AS refresh,
       jsonb_pretty(body->'tplogs-explicit'->'mappings') AS mappings
  FROM search_engine.request('GET', '/tplogs-explicit');

-- rsyslog's case: a bulk into a daily index nobody created
SELECT status, body->'errors' AS errors FROM search_engine.request('POST', '/_bulk?refresh=true',
  E'{"index":{"_index":"tplogs-2026.12.02"}}\n{"host":"h1","msg":"disk full","pid":"12"}\n');
SELECT body->'tplogs-2026.12.02'->'settings'->'index'->>'number_of_shards' AS shards,
       body->'tplogs-2026.12.02'->'settings'->'index'->>'refresh_interval' AS refresh,
       body->'tplogs-2026.12.02'->'mappings'->'properties'->'host' AS host,
       body->'tplogs-2026.12.02'->'mappings'->'properties'->'pid' AS pid
  FROM search_engine.request('GET', '/tplogs-2026.12.02');
-- host is a keyword (the template's), not dynamic text: a term query finds it
SELECT body->'hits'->'total'->'value' AS hits
  FROM search_engine.request('POST', '/tplogs-2026.12.02/_search', '{"query":{"term":{"host":"h1"}}}');

-- the template's alias reached both indices (the create body's aliases, H5's path)
SELECT status, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k) AS indices
  FROM search_engine.request('GET', '/_alias/tplogs-all');
-- the request's own alias of the same name wins over the template's
SELECT status FROM search_engine.request('PUT', '/tplogs-own', '{"settings":{"number_of_shards":1},"aliases":{"tplogs-all":{"routing":"7"}}}');
SELECT body->'tplogs-own'->'aliases' AS aliases FROM search_engine.request('GET', '/tplogs-own');
-- an alias filter that does not parse is refused when the template is put
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('PUT', '/_index_template/tp-badalias',
    '{"index_patterns":["tpba-*"],"template":{"aliases":{"a1":{"filter":{"nosuchquery":{}}}}}}');

-- legacy templates: merged lowest order first, only when no composable one matches
SELECT status FROM search_engine.request('PUT', '/_template/tp-leg1',
  '{"index_patterns":["tpother-*","tpleg-*"],"order":0,"settings":{"number_of_shards":1,"refresh_interval":"2s"},"mappings":{"properties":{"a":{"type":"keyword"}}}}');
SELECT status FROM search_engine.request('PUT', '/_template/tp-leg2',
  '{"index_patterns":["tpleg-*"],"order":5,"settings":{"refresh_interval":"3s"},"mappings":{"_doc":{"properties":{"b":{"type":"long"}}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_template/tp-leg3', '{"order":1}');
SELECT status, jsonb_pretty(body) FROM search_engine.request('GET', '/_template/tp-leg2');
SELECT status, body FROM search_engine.request('GET', '/_template/nosuch');
SELECT status FROM search_engine.request('POST', '/tpleg-a/_doc?refresh=true', '{"a":"x","b":1}');
SELECT body->'tpleg-a'->'settings'->'index'->>'refresh_interval' AS refresh,
       body->'tpleg-a'->'mappings'->'properties' AS props
  FROM search_engine.request('GET', '/tpleg-a');
-- tpother-* matches the legacy tp-leg1 and the composable tp-low: tp-low wins alone
SELECT status FROM search_engine.request('PUT', '/tpother-1');
SELECT body->'tpother-1'->'settings'->'index'->>'refresh_interval' AS refresh,
       body->'tpother-1'->'mappings' AS mappings
  FROM search_engine.request('GET', '/tpother-1');

-- _cat/templates: composable ones (priority in the order column) and legacy ones
SELECT body FROM search_engine.request('GET', '/_cat/templates/tp*?v&s=name');
SELECT jsonb_pretty(body) FROM search_engine.request('GET', '/_cat/templates/tp-l*?format=json');
-- and in SQL, the templates view
SELECT * FROM search_engine.templates WHERE name LIKE 'tp%' ORDER BY name;

-- managing templates needs the cluster privilege; reading them does not
CREATE ROLE tp_user IN ROLE search_engine_user;
SET ROLE tp_user;
SELECT status, body->'error'->>'type' AS type
  FROM search_engine.request('PUT', '/_index_template/tp-role', '{"index_patterns":["tprole-*"]}');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('DELETE', '/_index_template/tp-logs');
SELECT status FROM search_engine.request('GET', '/_index_template/tp-logs');
RESET ROLE;
DROP ROLE tp_user;

-- clean up: a template before the components it uses; wildcards delete several
SELECT status FROM search_engine.request('DELETE', '/tplogs-explicit,tplogs-2026.12.02,tplogs-own,tpleg-a,tpother-1');
SELECT status, body FROM search_engine.request('DELETE', '/_index_template/tp-logs,tp-low');
SELECT status, body FROM search_engine.request('DELETE', '/_component_template/tp-*');
SELECT status, body FROM search_engine.request('DELETE', '/_template/tp-leg*');
SELECT status, body FROM search_engine.request('GET', '/_index_template');
SELECT status, body FROM search_engine.request('GET', '/_cat/templates?format=json');
