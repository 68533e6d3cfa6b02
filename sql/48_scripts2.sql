-- Painless breadth (issue 17): script_fields in hits and inner_hits, doc[...]
-- with a computed field name, terms_set's minimum_should_match_script over
-- doc values, and field_value_factor on a doc without the value (ES fails
-- the search).  Values checked against the same expressions in SQL.
SELECT search_engine.create_index('s2', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"title": {"type": "text"}, "tag": {"type": "keyword"}, "likes": {"type": "integer"}, "price": {"type": "double"}, "d": {"type": "date"}, "need": {"type": "integer"}, "langs": {"type": "keyword"}, "grp": {"type": "keyword"}}}}') IS NOT NULL AS created;
CREATE TABLE s2_src (id int, likes int, price float8, tag text[], d timestamptz, need int, langs text[], grp text);
INSERT INTO s2_src VALUES
  (1, 10, 1.5, '{a}', '2020-01-01T00:00:00Z', 1, '{c,java}', 'x'),
  (2, 200, 20.25, '{b,c}', '2020-01-02T12:00:00Z', 2, '{c,java,go}', 'x'),
  (3, NULL, NULL, NULL, NULL, 3, '{c,go}', 'y'),
  (4, 7, 3.0, '{a,d,e}', '2019-12-30T06:00:00Z', 2, '{rust}', 'y'),
  (5, 1000, 0.5, '{z}', '2020-01-05T00:00:00Z', 1, '{go,java,c}', 'y');
SELECT (search_engine.bulk(string_agg(
          '{"index": {"_index": "s2", "_id": "' || id || '"}}' || chr(10) ||
          jsonb_strip_nulls(jsonb_build_object('title', 'item ' || id, 'likes', likes, 'price', price,
            'tag', to_jsonb(tag), 'd', to_char(d AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
            'need', need, 'langs', to_jsonb(langs), 'grp', grp))::text,
          chr(10) ORDER BY id), refresh => 'true')::jsonb->>'errors') AS errors
  FROM s2_src;

-- the hits' "fields" by _id, or the error
CREATE FUNCTION s2f(body jsonb) RETURNS TABLE (id text, fields jsonb) LANGUAGE sql AS
$$ SELECT coalesce(h->>'_id', r.status || ' ' || (r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason')),
          h->'fields'
     FROM search_engine.request('POST', '/s2/_search', body::text) r
          LEFT JOIN LATERAL jsonb_array_elements(r.body->'hits'->'hits') h ON true
    ORDER BY 1 $$;
-- the ids of the hits in _id order, or the error
CREATE FUNCTION s2ids(body jsonb) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || ' ' || coalesce(
          (SELECT string_agg(h->>'_id', ',' ORDER BY (h->>'_id')::int)
             FROM jsonb_array_elements(r.body->'hits'->'hits') h),
          (r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason'), 'none')
     FROM search_engine.request('POST', '/s2/_search', body::text) r $$;

-- ---- script_fields ----------------------------------------------------------
-- ES's shape: fields: {name: [value]}, beside docvalue_fields; numbers as
-- Painless computes them, equal to SQL
SELECT count(*) AS docs,
       bool_and((f.fields->'twice'->>0)::bigint = t.likes * 2) AS twice_equal_to_sql,
       bool_and((f.fields->'scaled'->>0)::float8 = t.price * 3.0) AS scaled_equal_to_sql
  FROM s2f('{"query": {"exists": {"field": "price"}}, "script_fields": {"twice": {"script": "doc[''likes''].value * 2"}, "scaled": {"script": {"source": "doc[''price''].value * params.f", "params": {"f": 3.0}}}}}') f
  JOIN s2_src t ON t.id = f.id::int;
SELECT * FROM s2f('{"query": {"ids": {"values": ["1", "2", "3"]}}, "_source": false, "docvalue_fields": ["tag"], "script_fields": {"n": {"script": "doc[''tag''].size()"}, "tags": {"script": "doc[''tag'']"}, "first": {"script": "doc[''tag''].size() == 0 ? null : doc[''tag''][0]"}, "list": {"script": "[doc[''need''].value, ''s'', true]"}, "map": {"script": "[''k'': 1]"}, "when": {"script": "doc[''d''].size() == 0 ? ''none'' : doc[''d''].value"}}}');
-- params._source, as ES's field scripts have it
SELECT * FROM s2f('{"query": {"ids": {"values": ["4"]}}, "_source": false, "script_fields": {"title": {"script": "params[''_source''][''title''] + ''!''"}, "nlangs": {"script": "params._source.langs.size()"}}}');
-- a runtime error fails the search; ignore_failure leaves the field out
SELECT * FROM s2f('{"query": {"ids": {"values": ["3"]}}, "script_fields": {"v": {"script": "doc[''likes''].value"}}}');
SELECT * FROM s2f('{"query": {"ids": {"values": ["3", "4"]}}, "_source": false, "script_fields": {"v": {"script": "doc[''likes''].value", "ignore_failure": true}}}');
-- compile errors and malformed definitions are refused when parsed
SELECT * FROM s2f('{"script_fields": {"v": {"script": "doc[''likes''].value +"}}}');
SELECT * FROM s2f('{"script_fields": {"v": {"source": "1"}}}');
SELECT * FROM s2f('{"script_fields": {"v": {}}}');
SELECT * FROM s2f('{"script_fields": ["v"]}');
-- in inner_hits (collapse), per inner hit
SELECT h->>'_id' AS id, ih->>'_id' AS inner_id, ih->'fields' AS fields
  FROM search_engine.request('POST', '/s2/_search', '{"query": {"match_all": {}}, "collapse": {"field": "grp", "inner_hits": {"name": "top", "size": 2, "sort": [{"need": "desc"}, "_doc"], "_source": false, "script_fields": {"need_plus": {"script": "doc[''need''].value + 100"}}}}, "sort": ["grp"]}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h,
       jsonb_array_elements(h->'inner_hits'->'top'->'hits'->'hits') ih
 ORDER BY 1, 2;

-- ---- doc[...] with a computed field name --------------------------------------
SELECT * FROM s2f('{"query": {"ids": {"values": ["1", "2"]}}, "_source": false, "script_fields": {"v": {"script": {"source": "doc[params.f].value + doc[''li'' + ''kes''].value", "params": {"f": "need"}}}, "w": {"script": "def f = ''likes''; doc[f].value"}}}');
-- doc.f (a constant name) followed by more: .value, operators
SELECT * FROM s2f('{"query": {"ids": {"values": ["1", "2"]}}, "_source": false, "script_fields": {"v": {"script": "doc.likes.value + doc.need.value * 2"}, "n": {"script": "doc.tag.size() + doc.tag.length"}}}');
-- in score scripts too; the name's field is resolved from the mapping
SELECT s2ids('{"query": {"script_score": {"query": {"exists": {"field": "likes"}}, "script": {"source": "doc[params.f].value", "params": {"f": "likes"}}, "min_score": 100}}}');
SELECT s2ids('{"query": {"function_score": {"query": {"exists": {"field": "likes"}}, "script_score": {"script": {"source": "String f = params.p + ''e''; doc[f].value", "params": {"p": "pric"}}}, "min_score": 2}}}');
-- not a string, not a field, a text field without fielddata
SELECT s2ids('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[3].value"}}}');
SELECT s2ids('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''nope'' + 1].size()"}}}');
SELECT s2ids('{"query": {"script_score": {"query": {"match_all": {}}, "script": "String f = ''title''; doc[f].size()"}}}');

-- ---- terms_set: minimum_should_match_script over doc values --------------------
-- a doc matches when it has at least min(num_terms, need) of the terms: equal to SQL
SELECT s2ids('{"query": {"terms_set": {"langs": {"terms": ["c", "java", "go"], "minimum_should_match_script": {"source": "Math.min(params.num_terms, doc[''need''].value)"}}}}}') AS by_script,
       (SELECT string_agg(id::text, ',' ORDER BY id) FROM s2_src
         WHERE cardinality(ARRAY(SELECT unnest(langs) INTERSECT SELECT unnest('{c,java,go}'::text[]))) >= least(3, need)) AS by_sql;
-- the script's own params beside num_terms; a computed count
SELECT s2ids('{"query": {"terms_set": {"langs": {"terms": ["c", "java", "go"], "minimum_should_match_script": {"source": "params.num_terms - params.slack", "params": {"slack": 1}}}}}}');
-- params.num_terms alone still works; a runtime error fails the search
SELECT s2ids('{"query": {"terms_set": {"langs": {"terms": ["c", "java"], "minimum_should_match_script": {"source": "params.num_terms"}}}}}');
SELECT s2ids('{"query": {"terms_set": {"langs": {"terms": ["c", "go"], "minimum_should_match_script": {"source": "doc[''likes''].value"}}}}}');
SELECT s2ids('{"query": {"terms_set": {"langs": {"terms": ["c"], "minimum_should_match_script": {"source": "1 +"}}}}}');

-- ---- field_value_factor without the value and without "missing" ----------------
-- ES fails the search ("Missing value for field"); with missing it scores
SELECT s2ids('{"query": {"function_score": {"query": {"match_all": {}}, "field_value_factor": {"field": "likes"}}}}');
SELECT s2ids('{"query": {"function_score": {"query": {"match_all": {}}, "field_value_factor": {"field": "likes", "missing": 1}}}}');
SELECT s2ids('{"query": {"function_score": {"query": {"exists": {"field": "likes"}}, "field_value_factor": {"field": "likes"}}}}');
-- an unmapped field without missing: ES's error when the shard builds it
SELECT s2ids('{"query": {"function_score": {"query": {"match_all": {}}, "field_value_factor": {"field": "nope"}}}}');
SELECT s2ids('{"query": {"function_score": {"query": {"match_all": {}}, "field_value_factor": {"field": "nope", "missing": 2}}}}');

-- ---- stored scripts: PUT/POST/GET/DELETE /_scripts/{id} ------------------------
SELECT status, body FROM search_engine.request('PUT', '/_scripts/s2-likes', '{"script": {"lang": "painless", "source": "doc[''likes''].value * params.f"}}');
SELECT status, body FROM search_engine.request('POST', '/_scripts/s2-upd', '{"script": {"lang": "painless", "source": "ctx._source.likes += params.n"}}');
SELECT status, body FROM search_engine.request('GET', '/_scripts/s2-likes');
SELECT status, body FROM search_engine.request('GET', '/_scripts/s2-none');
-- ES's refusals: no lang, no source, another language, a script that does not compile
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM (VALUES ('{"script": {"source": "1"}}'), ('{"script": {"lang": "painless"}}'),
               ('{"script": {"lang": "expression", "source": "1"}}'),
               ('{"script": {"lang": "painless", "source": "1 +"}}'), ('{}')) v(b),
       LATERAL search_engine.request('PUT', '/_scripts/s2-bad', v.b) r;
-- run by id with params: script_fields, script_score, function_score, terms_set
SELECT * FROM s2f('{"query": {"ids": {"values": ["1", "2"]}}, "_source": false, "script_fields": {"v": {"script": {"id": "s2-likes", "params": {"f": 10}}}}}');
SELECT s2ids('{"query": {"script_score": {"query": {"exists": {"field": "likes"}}, "script": {"id": "s2-likes", "params": {"f": 1}}, "min_score": 100}}}');
SELECT s2ids('{"query": {"function_score": {"query": {"exists": {"field": "likes"}}, "script_score": {"script": {"id": "s2-likes", "params": {"f": 0.5}}}, "boost_mode": "replace", "min_score": 50}}}');
SELECT status, body FROM search_engine.request('PUT', '/_scripts/s2-need', '{"script": {"lang": "painless", "source": "Math.min(params.num_terms, doc[''need''].value)"}}');
SELECT s2ids('{"query": {"terms_set": {"langs": {"terms": ["c", "java", "go"], "minimum_should_match_script": {"id": "s2-need"}}}}}');
SELECT s2ids('{"query": {"script_score": {"query": {"match_all": {}}, "script": {"id": "s2-none"}}}}');
-- update scripts by id: _update and _update_by_query
SELECT status, body->>'result' AS result FROM search_engine.request('POST', '/s2/_update/1?refresh=true', '{"script": {"id": "s2-upd", "params": {"n": 5}}}');
SELECT (body->>'updated')::int AS updated FROM search_engine.request('POST', '/s2/_update_by_query?refresh=true', '{"query": {"ids": {"values": ["2"]}}, "script": {"id": "s2-upd", "params": {"n": 1}}}');
SELECT h->>'_id' AS id, h->'_source'->>'likes' AS likes
  FROM search_engine.request('POST', '/s2/_search', '{"query": {"ids": {"values": ["1", "2"]}}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h ORDER BY 1;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/s2/_update/1', '{"script": {"id": "s2-none"}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/s2/_update_by_query', '{"script": {"id": "s2-none"}}');
-- managing and reading stored scripts needs the cluster privilege (ES's manage)
CREATE ROLE s2_user IN ROLE search_engine_user;
SET ROLE s2_user;
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('PUT', '/_scripts/s2-x', '{"script": {"lang": "painless", "source": "1"}}');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('GET', '/_scripts/s2-likes');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('DELETE', '/_scripts/s2-likes');
RESET ROLE;
DROP ROLE s2_user;
-- a put replaces; delete, then ES's 404
SELECT status FROM search_engine.request('PUT', '/_scripts/s2-likes', '{"script": {"lang": "painless", "source": "doc[''likes''].value + 1"}}');
SELECT body->'script'->>'source' AS source FROM search_engine.request('GET', '/_scripts/s2-likes');
SELECT status, body FROM search_engine.request('DELETE', '/_scripts/s2-likes');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('DELETE', '/_scripts/s2-likes');
SELECT status FROM search_engine.request('DELETE', '/_scripts/s2-upd');
SELECT status FROM search_engine.request('DELETE', '/_scripts/s2-need');

DROP FUNCTION s2f(jsonb);
DROP FUNCTION s2ids(jsonb);
DROP TABLE s2_src;
SELECT search_engine.delete_index('s2')::jsonb->>'acknowledged' AS deleted;
