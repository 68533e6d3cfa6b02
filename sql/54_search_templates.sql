-- Search templates (issue 17): stored mustache scripts, _search/template,
-- _msearch/template and _render/template, with the examples of ES's
-- search template page (my-search-template, toJson, join, default values
-- through inverted sections, url, conditions), and ES's errors.
SET client_min_messages = warning;
SELECT search_engine.create_index('st', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"message": {"type": "text"}, "user": {"properties": {"id": {"type": "keyword"}, "group": {"properties": {"emails": {"type": "keyword"}}}}}, "status": {"type": "keyword"}, "url": {"properties": {"full": {"type": "keyword"}}}, "@timestamp": {"type": "date"}}}}') IS NOT NULL AS created;
SELECT (search_engine.bulk($$
{"index": {"_index": "st", "_id": "1"}}
{"message": "hello world", "user": {"id": "kimchy", "group": {"emails": "user.one@example.com"}}, "status": "pending", "url": {"full": "http%3A%2F%2Fexample.com%2Fhello-world"}, "@timestamp": "2099-01-01T00:00:00Z"}
{"index": {"_index": "st", "_id": "2"}}
{"message": "hello there", "user": {"id": "elkbee", "group": {"emails": "user.two@example.com"}}, "status": "published", "@timestamp": "2000-01-01T00:00:00Z"}
{"index": {"_index": "st", "_id": "3"}}
{"message": "goodbye world", "user": {"id": "kimchy"}, "status": "draft", "@timestamp": "2000-01-01T00:00:00Z"}
$$, refresh => 'true')::jsonb->>'errors') AS errors;

-- a search's status and ids in order, or its error
CREATE FUNCTION st_ids(method text, path text, body text) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || ' ' || coalesce(
          (SELECT string_agg(h->>'_id', ',' ORDER BY h->>'_id') FROM jsonb_array_elements(r.body->'hits'->'hits') h),
          (r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason'), 'none')
     FROM search_engine.request(method, path, body) r $$;
CREATE FUNCTION st_render(body text) RETURNS TABLE (status int, body jsonb) LANGUAGE sql AS
$$ SELECT status, body FROM search_engine.request('POST', '/_render/template', body) $$;

-- ---- a stored template: kept as ES keeps it (the object as JSON text) --------
SELECT status, body FROM search_engine.request('PUT', '/_scripts/my-search-template', $${
  "script": {"lang": "mustache",
             "source": {"query": {"match": {"message": "{{query_string}}"}}, "from": "{{from}}", "size": "{{size}}"},
             "params": {"query_string": "My query string"}}}$$);
SELECT status, body FROM search_engine.request('GET', '/_scripts/my-search-template');
-- of id and source, the last given wins (as ES's parser sets them)
SELECT * FROM st_render('{"source": {"size": 0}, "id": "my-search-template", "params": {"query_string": "a", "from": 1, "size": 2}}');
SELECT * FROM st_render('{"id": "my-search-template", "source": {"size": 0}}');
-- rendered by id, in the body or the path
SELECT * FROM st_render('{"id": "my-search-template", "params": {"query_string": "hello world", "from": 20, "size": 10}}');
SELECT status, body FROM search_engine.request('GET', '/_render/template/my-search-template', '{"params": {"query_string": "hello world", "from": 20, "size": 10}}');
-- run: _search/template on an index and on all, GET and POST
SELECT st_ids('GET', '/st/_search/template', '{"id": "my-search-template", "params": {"query_string": "hello world", "from": 0, "size": 10}}');
SELECT st_ids('POST', '/_search/template', '{"id": "my-search-template", "params": {"query_string": "world", "from": 0, "size": 10}}');
SELECT st_ids('POST', '/st/_search/template', '{"id": "my-search-template", "params": {"query_string": "hello", "from": 1, "size": 1}}');
-- the response is _search's
SELECT status, body->'_shards' AS shards, body->'hits'->'total' AS total, body ? 'took' AS took
  FROM search_engine.request('POST', '/st/_search/template', '{"id": "my-search-template", "params": {"query_string": "hello", "from": 0, "size": 10}}');
-- URL options of _search apply (routing, rest_total_hits_as_int, search_type)
SELECT body->'hits'->'total' AS total
  FROM search_engine.request('POST', '/st/_search/template?rest_total_hits_as_int=true&search_type=dfs_query_then_fetch', '{"id": "my-search-template", "params": {"query_string": "hello", "from": 0, "size": 10}}');
SELECT status, body ? '_scroll_id' AS scrolled, jsonb_array_length(body->'hits'->'hits') AS hits
  FROM search_engine.request('POST', '/st/_search/template?scroll=1m', '{"source": {"size": 1, "query": {"match_all": {}}}}');
SELECT status FROM search_engine.request('DELETE', '/_search/scroll/_all');
-- explain and profile of the template request
SELECT h->>'_id' AS id, h ? '_explanation' AS explained
  FROM search_engine.request('POST', '/st/_search/template', '{"source": {"query": {"match": {"message": "{{q}}"}}}, "params": {"q": "goodbye"}, "explain": true}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;
-- the template's own explain gives way to the request's (false by default)
SELECT h->>'_id' AS id, h ? '_explanation' AS explained
  FROM search_engine.request('POST', '/st/_search/template', '{"source": {"query": {"match": {"message": "{{q}}"}}, "explain": true}, "params": {"q": "goodbye"}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;
-- (profile false is taken; the search has no profile output yet, so true
-- gets _search's refusal)
SELECT status FROM search_engine.request('POST', '/st/_search/template', '{"source": {"query": {"match_all": {}}}, "profile": false}');
SELECT st_ids('POST', '/st/_search/template', '{"source": {"query": {"match_all": {}}}, "profile": true}');

-- ---- ES's examples --------------------------------------------------------------
-- toJson: a params value as JSON
SELECT * FROM st_render($${"source": "{ \"query\": { \"terms\": {{#toJson}}statuses{{/toJson}} }}",
  "params": {"statuses": {"status": ["pending", "published"]}}}$$);
SELECT st_ids('POST', '/st/_search/template', $${"source": "{ \"query\": { \"terms\": {{#toJson}}statuses{{/toJson}} }}",
  "params": {"statuses": {"status": ["pending", "published"]}}}$$);
SELECT * FROM st_render($${"source": "{\"query\": {\"bool\": {\"must\": {{#toJson}}clauses{{/toJson}} }}}",
  "params": {"clauses": [{"term": {"user.id": "kimchy"}}, {"term": {"url.full": "https://elastic.co"}}]}}$$);
-- join, with the default delimiter and with delimiter='||'
SELECT * FROM st_render($${"source": {"query": {"match": {"user.group.emails": "{{#join}}emails{{/join}}"}}},
  "params": {"emails": ["user.one@example.com", "user.two@example.com"]}}$$);
SELECT * FROM st_render($${"source": {"query": {"range": {"user.effective.date": {"gte": "{{date.min}}", "lte": "{{date.max}}",
  "format": "{{#join delimiter='||'}}date.formats{{/join delimiter='||'}}"}}}},
  "params": {"date": {"min": "2098", "max": "06/05/2099", "formats": ["dd/MM/yyyy", "yyyy"]}}}$$);
-- default values: an inverted section renders when the value is missing
SELECT * FROM st_render($${"source": {"query": {"match": {"message": "{{query_string}}"}}, "from": "{{from}}{{^from}}0{{/from}}", "size": "{{size}}{{^size}}10{{/size}}"},
  "params": {"query_string": "hello world"}}$$);
SELECT st_ids('POST', '/st/_search/template', $${"source": {"query": {"match": {"message": "{{query_string}}"}}, "from": "{{from}}{{^from}}0{{/from}}", "size": "{{size}}{{^size}}10{{/size}}"},
  "params": {"query_string": "hello world", "size": 1}}$$);
-- url: the rendered text URL-encoded
SELECT * FROM st_render($${"source": {"query": {"term": {"url.full": "{{#url}}{{host}}/{{page}}{{/url}}"}}},
  "params": {"host": "http://example.com", "page": "hello-world"}}$$);
SELECT st_ids('POST', '/st/_search/template', $${"source": {"query": {"term": {"url.full": "{{#url}}{{host}}/{{page}}{{/url}}"}}},
  "params": {"host": "http://example.com", "page": "hello-world"}}$$);
-- conditions (a source string): a section kept or dropped
SELECT * FROM st_render($${"source": "{ \"query\": { \"bool\": { \"filter\": [ {{#year_scope}} { \"range\": { \"@timestamp\": { \"gte\": \"now-1y/d\", \"lt\": \"now/d\" } } }, {{/year_scope}} { \"term\": { \"user.id\": \"{{user_id}}\" }}]}}}",
  "params": {"year_scope": false, "user_id": "kimchy"}}$$);
SELECT st_ids('POST', '/st/_search/template', $${"source": "{ \"query\": { \"bool\": { \"filter\": [ {{#year_scope}} { \"range\": { \"@timestamp\": { \"gte\": \"now-1y/d\" } } }, {{/year_scope}} { \"term\": { \"user.id\": \"{{user_id}}\" }}]}}}",
  "params": {"year_scope": true, "user_id": "kimchy"}}$$);
-- if/else with an inverted section
SELECT * FROM st_render($${"source": "{ \"query\": { \"bool\": { \"filter\": [ { \"range\": { \"@timestamp\": { \"gte\": {{#year_scope}} \"now-1y/d\" {{/year_scope}} {{^year_scope}} \"now-1d/d\" {{/year_scope}} } } }, { \"term\": { \"user.id\": \"{{user_id}}\" }}]}}}",
  "params": {"user_id": "kimchy"}}$$);
-- values are escaped as JSON string content; triple braces are not
SELECT * FROM st_render($${"source": {"query": {"match": {"message": "{{q}}"}}}, "params": {"q": "say \"hi\" \\ now"}}$$);
SELECT * FROM st_render($${"source": "{\"size\": {{{n}}}, \"query\": {\"match_all\": {}}}", "params": {"n": 3}}$$);
-- lists: an index, iteration with {{.}}
SELECT * FROM st_render($${"source": "{\"query\": {\"term\": {\"user.id\": \"{{ids.1}}\"}}, \"_source\": [{{#fields}}\"{{.}}\",{{/fields}}\"message\"]}",
  "params": {"ids": ["a", "b"], "fields": ["status", "user.id"]}}$$);

-- ---- _msearch/template ------------------------------------------------------------
SELECT r.status, x->>'status' AS item_status,
       coalesce((SELECT string_agg(h->>'_id', ',' ORDER BY h->>'_id') FROM jsonb_array_elements(x->'hits'->'hits') h),
                (x->'error'->>'type') || ': ' || (x->'error'->>'reason')) AS hits
  FROM search_engine.request('GET', '/st/_msearch/template', $${ }
{"id": "my-search-template", "params": {"query_string": "hello world", "from": 0, "size": 10}}
{"index": "st"}
{"source": {"query": {"term": {"user.id": "{{user}}"}}}, "params": {"user": "kimchy"}}
{}
{"id": "no-such-template"}
{"index": "st"}
{"source": "{\"query\": {{q}} }", "params": {"q": "oops"}}
$$) r,
       jsonb_array_elements(r.body->'responses') WITH ORDINALITY AS e(x, n)
 ORDER BY n;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_msearch/template', '{}');

-- ---- errors --------------------------------------------------------------------
-- an unknown id: ES's 404
SELECT * FROM st_render('{"id": "no-such-template"}');
SELECT st_ids('POST', '/st/_search/template', '{"id": "no-such-template", "params": {}}');
-- a rendered text that is not JSON: the search body's parse error
SELECT status, body->'error'->>'type' AS type FROM st_render($${"source": "{\"query\": {{q}} }", "params": {"q": "oops"}}$$);
SELECT st_ids('POST', '/st/_search/template', $${"source": "{\"query\": {\"match\": {\"message\": \"{{q}}\"}} ", "params": {"q": "x"}}$$);
SELECT status, body->'error'->>'type' AS type FROM st_render($${"source": "\u0000{{q}}", "params": {"q": "x"}}$$);
-- a rendered body the search refuses
SELECT st_ids('POST', '/st/_search/template', '{"source": {"query": {"no_such_query": {}}}}');
-- malformed templates: inline, and refused when stored
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM st_render('{"source": "{{#a}} {\"query\": {}}"}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM st_render('{"source": "{\"size\": {{#a}}1{{/b}} }"}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_scripts/st-bad', '{"script": {"lang": "mustache", "source": "{\"size\": {{n }"}}');
-- request shape: no template, an empty one, an unknown field, a bad params, no body
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM st_render('{"params": {}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM st_render('{"source": ""}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM st_render('{"id": "my-search-template", "size": 3}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM st_render('{"id": "my-search-template", "params": [1]}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/st/_search/template', '');
-- languages do not mix: a painless script is no template, a template no score script
SELECT status FROM search_engine.request('PUT', '/_scripts/st-painless', '{"script": {"lang": "painless", "source": "_score * 2"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM st_render('{"id": "st-painless"}');
SELECT st_ids('POST', '/st/_search', '{"query": {"script_score": {"query": {"match_all": {}}, "script": {"id": "my-search-template"}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/_scripts/st-obj', '{"script": {"lang": "painless", "source": {"query": {}}}}');
-- a template given as a string is kept as it is, with no options
SELECT status FROM search_engine.request('PUT', '/_scripts/st-string', $${"script": {"lang": "mustache", "source": "{\"query\": {\"term\": {\"status\": \"{{s}}\"}}}"}}$$);
SELECT body FROM search_engine.request('GET', '/_scripts/st-string');
SELECT st_ids('POST', '/st/_search/template', '{"id": "st-string", "params": {"s": "draft"}}');

-- ---- privileges: those of a search on the target index --------------------------
CREATE ROLE st_reader;
CREATE ROLE st_none IN ROLE search_engine_user;
SELECT search_engine.grant('read', 'st', 'st_reader');
SET ROLE st_reader;
SELECT st_ids('POST', '/st/_search/template', '{"id": "my-search-template", "params": {"query_string": "hello", "from": 0, "size": 10}}');
SELECT * FROM st_render('{"id": "my-search-template", "params": {"query_string": "x", "from": 0, "size": 1}}');
RESET ROLE;
SET ROLE st_none;
SELECT st_ids('POST', '/st/_search/template', '{"id": "my-search-template", "params": {"query_string": "hello", "from": 0, "size": 10}}');
SELECT st_ids('POST', '/st/_search', '{"query": {"match": {"message": "hello"}}}');
RESET ROLE;
SELECT search_engine.revoke('all', 'st', 'st_reader');
DROP OWNED BY st_reader, st_none;
DROP ROLE st_reader, st_none;

-- ---- clean up ------------------------------------------------------------------
SELECT status FROM search_engine.request('DELETE', '/_scripts/my-search-template');
SELECT status FROM search_engine.request('DELETE', '/_scripts/st-painless');
SELECT status FROM search_engine.request('DELETE', '/_scripts/st-string');
SELECT st_ids('POST', '/st/_search/template', '{"id": "my-search-template"}');
DROP FUNCTION st_ids(text, text, text);
DROP FUNCTION st_render(text);
SELECT search_engine.delete_index('st') IS NOT NULL AS deleted;
