-- index.max_* limits (issue 17) as dynamic index settings with ES's
-- messages, the multi-target options ignore_unavailable,
-- allow_no_indices and expand_wildcards on the APIs that resolve index
-- expressions, and numeric formats of docvalue_fields / fields.
SELECT search_engine.create_index('lim1', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}') IS NOT NULL AS created;
SELECT search_engine.create_index('lim2', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}}') IS NOT NULL AS created;
SELECT (search_engine.bulk(E'{"index": {"_index": "lim1", "_id": "1"}}\n{"n": 1}\n{"index": {"_index": "lim2", "_id": "2"}}\n{"n": 2}', refresh => 'true')::jsonb->>'errors') AS errors;

-- status and error, or the total
CREATE FUNCTION lim(method text, path text, body text DEFAULT NULL) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || ' ' || coalesce((r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason'),
                                      'total=' || (r.body->'hits'->'total'->>'value'),
                                      'count=' || (r.body->>'count'),
                                      CASE jsonb_typeof(r.body) WHEN 'object' THEN (r.body - 'took')::text ELSE r.body #>> '{}' END, 'none')
     FROM search_engine.request(method, path, body) r $$;

-- ---- the limits at ES's defaults --------------------------------------------
SELECT lim('POST', '/lim1/_search', '{"size": 0, "aggs": {"t": {"top_hits": {"size": 101}}}}');
SELECT lim('POST', '/lim1/_search', '{"size": 0, "aggs": {"t": {"terms": {"field": "n"}, "aggs": {"h": {"top_hits": {"from": 50, "size": 51}}}}}}');
SELECT lim('POST', '/lim1/_search', '{"size": 0, "aggs": {"t": {"top_hits": {"from": 50, "size": 50}}}}');
SELECT lim('POST', '/lim1/_search', jsonb_build_object('docvalue_fields', (SELECT jsonb_agg('n'::text) FROM generate_series(1, 101)))::text);
SELECT lim('POST', '/lim1/_search', jsonb_build_object('script_fields', (SELECT jsonb_object_agg('f' || i, '{"script": "1"}'::jsonb) FROM generate_series(1, 33) i))::text);
SELECT lim('POST', '/lim1/_search', '{"rescore": {"window_size": 10001, "query": {"rescore_query": {"match_all": {}}}}}');
SELECT lim('POST', '/lim1/_search?scroll=1m', '{"slice": {"id": 0, "max": 1025}}');
SELECT lim('POST', '/lim1/_search', '{"from": 9990, "size": 11}');

-- ---- dynamic index settings move them; GET _settings shows them once set ---
SELECT lim('PUT', '/lim1/_settings', '{"index": {"max_inner_result_window": 200, "max_docvalue_fields_search": 1, "max_rescore_window": 5, "max_slices_per_scroll": 3, "max_script_fields": 0, "max_result_window": 20}}');
SELECT jsonb_pretty((r.body->'lim1'->'settings'->'index') - '{uuid,creation_date,version,provided_name}'::text[]) AS settings
  FROM search_engine.request('GET', '/lim1/_settings') r;
SELECT lim('POST', '/lim1/_search', '{"size": 0, "aggs": {"t": {"top_hits": {"size": 101}}}}');
SELECT lim('POST', '/lim1/_search', '{"docvalue_fields": ["n", "x"]}');
SELECT lim('POST', '/lim1/_search', '{"script_fields": {"a": {"script": "1"}}}');
SELECT lim('POST', '/lim1/_search', '{"rescore": {"window_size": 6, "query": {"rescore_query": {"match_all": {}}}}}');
SELECT lim('POST', '/lim1/_search', '{"rescore": {"window_size": 5, "query": {"rescore_query": {"match_all": {}}}}}');
SELECT lim('POST', '/lim1/_search?scroll=1m', '{"slice": {"id": 0, "max": 4}}');
SELECT lim('POST', '/lim1/_search', '{"from": 10, "size": 11}');
-- a point in time's searches are held to the limits of the indices it was opened on
SELECT r.body->>'id' AS pit FROM search_engine.request('POST', '/lim1/_pit?keep_alive=1m') r \gset
SELECT lim('POST', '/_search', jsonb_build_object('from', 10, 'size', 11, 'pit', jsonb_build_object('id', :'pit'))::text);
SELECT lim('POST', '/_search', jsonb_build_object('docvalue_fields', '["n", "x"]'::jsonb, 'pit', jsonb_build_object('id', :'pit'))::text);
SELECT lim('POST', '/_search', jsonb_build_object('from', 0, 'size', 20, 'pit', jsonb_build_object('id', :'pit'))::text);
SELECT lim('DELETE', '/_pit', jsonb_build_object('id', :'pit')::text);
-- over several indices the lowest limit holds (ES checks each shard's index)
SELECT lim('POST', '/lim1,lim2/_search', '{"docvalue_fields": ["n", "x"]}');
SELECT lim('POST', '/lim2/_search', '{"docvalue_fields": ["n", "x"]}');
-- bad values are ES's
SELECT lim('PUT', '/lim1/_settings', '{"index": {"max_rescore_window": 0}}');
SELECT lim('PUT', '/lim1/_settings', '{"index": {"max_inner_result_window": "many"}}');
-- back to ES's defaults: the keys leave GET _settings again
SELECT lim('PUT', '/lim1/_settings', '{"index": {"max_inner_result_window": 100, "max_docvalue_fields_search": 100, "max_rescore_window": 10000, "max_slices_per_scroll": 1024, "max_script_fields": 32, "max_result_window": 10000}}');
SELECT k AS key FROM search_engine.request('GET', '/lim1/_settings') r,
       jsonb_object_keys(r.body->'lim1'->'settings'->'index') k WHERE k LIKE 'max%';

-- ---- ignore_unavailable, allow_no_indices, expand_wildcards ----------------
SELECT lim('POST', '/lim1,nope/_search', '{}');
SELECT lim('POST', '/lim1,nope/_search?ignore_unavailable=true', '{}');
SELECT lim('POST', '/lim1,nope/_count?ignore_unavailable=true');
-- _msearch: each header's options hold for its search
SELECT jsonb_path_query_array(r.body, '$.responses[*].hits.total.value') AS totals,
       jsonb_path_query_array(r.body, '$.responses[*].error.type') AS errors
  FROM search_engine.request('POST', '/_msearch', E'{"index": "lim1,nope", "ignore_unavailable": true}\n{}\n{"index": "lim1,nope"}\n{}\n{"index": "nope*", "allow_no_indices": false}\n{}\n{"index": "lim*", "expand_wildcards": ["none"]}\n{}\n') r;
SELECT lim('POST', '/nope/_search?ignore_unavailable=true', '{}');
SELECT lim('POST', '/nope/_search?ignore_unavailable=true&allow_no_indices=false', '{}');
SELECT lim('POST', '/nope*/_search', '{}');
SELECT lim('POST', '/nope*/_search?allow_no_indices=false', '{}');
SELECT lim('POST', '/lim*/_search?expand_wildcards=none', '{}');
SELECT lim('POST', '/lim*/_search?expand_wildcards=open,hidden', '{}');
SELECT lim('POST', '/lim*/_search?expand_wildcards=bogus', '{}');
SELECT lim('POST', '/lim*/_search?ignore_unavailable=maybe', '{}');
-- closed indices: wildcards skip them by default; a name needs ignore_unavailable
SELECT lim('POST', '/lim2/_close');
SELECT lim('POST', '/lim1,lim2/_search', '{}');
SELECT lim('POST', '/lim1,lim2/_search?ignore_unavailable=true', '{}');
SELECT lim('POST', '/lim*/_search', '{}');
SELECT lim('GET', '/_cat/indices/lim*?h=index,status&s=index');
SELECT lim('GET', '/_cat/indices/lim*?h=index,status&s=index&expand_wildcards=open');
SELECT lim('GET', '/_cat/indices/lim*?h=index,status&s=index&expand_wildcards=closed');
SELECT lim('POST', '/lim1,nope/_refresh?ignore_unavailable=true');
SELECT lim('POST', '/lim1,nope/_refresh');
SELECT lim('POST', '/lim1,nope/_delete_by_query?ignore_unavailable=true&refresh=true', '{"query": {"term": {"n": 5}}}');
SELECT (r.body->'_all'->'primaries'->'docs'->>'count')::int AS docs
  FROM search_engine.request('GET', '/lim1,nope/_stats?ignore_unavailable=true') r;
SELECT lim('DELETE', '/lim2,nope');
SELECT lim('DELETE', '/lim2,nope?ignore_unavailable=true');
SELECT lim('GET', '/_cat/indices/lim*?h=index,status&s=index');
-- the options hold for their request only
SELECT lim('POST', '/lim1,nope/_search', '{}');

SELECT search_engine.delete_index('lim1') IS NOT NULL AS deleted;
DROP FUNCTION lim(text, text, text);

-- ---- docvalue_fields / fields: a numeric format (DecimalFormat patterns) ----
SELECT search_engine.create_index('fmt', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"p": {"type": "double"}, "n": {"type": "long"}, "f": {"type": "float"}, "d": {"type": "date"}}}}') IS NOT NULL AS created;
SELECT (search_engine.bulk(E'{"index": {"_index": "fmt", "_id": "1"}}\n{"p": [1234567.125, -0.004, 0.5, 2.675], "n": [7, 1234567, -42], "f": 1.1, "d": "2020-01-02T03:04:05Z"}', refresh => 'true')::jsonb->>'errors') AS errors;
-- grouping, fixed and optional digits, HALF_EVEN on the double's value (2.675 is 2.67499...)
SELECT r.body->'hits'->'hits'->0->'fields' AS docvalue_fields
  FROM search_engine.request('POST', '/fmt/_search', '{"_source": false, "docvalue_fields": [{"field": "p", "format": "#,##0.00"}, {"field": "n", "format": "000"}, {"field": "f", "format": "#.##"}, {"field": "d", "format": "yyyy-MM-dd"}]}') r;
SELECT r.body->'hits'->'hits'->0->'fields' AS fields
  FROM search_engine.request('POST', '/fmt/_search', '{"_source": false, "fields": [{"field": "p", "format": "0.#"}, {"field": "n", "format": "#,###"}]}') r;
-- without a format numbers stay numbers; "#.##" writes 0.5 as .5 (Java's)
SELECT r.body->'hits'->'hits'->0->'fields' AS mixed
  FROM search_engine.request('POST', '/fmt/_search', '{"_source": false, "docvalue_fields": [{"field": "p", "format": "#.##"}, "n"]}') r;
SELECT search_engine.delete_index('fmt') IS NOT NULL AS deleted;

-- ---- hidden indices (index.hidden) and hidden aliases ------------------------
-- wildcards and _all skip them unless expand_wildcards has hidden (or all);
-- a pattern starting with "." matches hidden indices starting with "."
SELECT search_engine.create_index('.hid1', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.hidden": true}}') IS NOT NULL AS created;
SELECT search_engine.create_index('hvis', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "aliases": {"hal": {"is_hidden": true}}}') IS NOT NULL AS created;
SELECT (search_engine.bulk(E'{"index": {"_index": ".hid1", "_id": "1"}}\n{"n": 1}\n{"index": {"_index": "hvis", "_id": "2"}}\n{"n": 2}', refresh => 'true')::jsonb->>'errors') AS errors;
CREATE FUNCTION cnt(path text) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || ' ' || coalesce('count=' || (r.body->>'count'), (r.body->'error'->>'type'))
     FROM search_engine.request('POST', path) r $$;
SELECT p AS path, cnt(p) FROM unnest(ARRAY[
  '/hv*,.hid1/_count', '/*hid1*,hv*/_count', '/*hid1*,hv*/_count?expand_wildcards=open,hidden',
  '/*hid1*,hv*/_count?expand_wildcards=all', '/.h*/_count', '/.hid1/_count',
  '/*hid1*,hv*/_count?expand_wildcards=hidden',
  '/ha*/_count', '/ha*/_count?expand_wildcards=open,hidden', '/hal/_count']) p;
-- _all and no target: what expand_wildcards=all adds is the hidden index
SELECT (SELECT (body->>'count')::int FROM search_engine.request('POST', '/_all/_count?expand_wildcards=all')) -
       (SELECT (body->>'count')::int FROM search_engine.request('POST', '/_all/_count')) AS all_adds,
       (SELECT (body->>'count')::int FROM search_engine.request('POST', '/_count?expand_wildcards=open,hidden')) -
       (SELECT (body->>'count')::int FROM search_engine.request('POST', '/_count')) AS none_adds;
-- _cat/indices and health take every index (ES's expand_wildcards=all)
SELECT jsonb_path_query_array(r.body, '$[*].index') AS cat_indices
  FROM search_engine.request('GET', '/_cat/indices/*hid1*,hvis?format=json&s=index') r;
SELECT r.body->'indices' ? '.hid1' AS in_health
  FROM search_engine.request('GET', '/_cluster/health?level=indices') r;
SELECT r.body->'.hid1'->'settings'->'index'->'hidden' AS hidden
  FROM search_engine.request('GET', '/.hid1/_settings') r;
-- a dynamic setting: unhidden, wildcards find it
SELECT r.status, r.body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/.hid1/_settings', '{"index": {"hidden": "maybe"}}') r;
SELECT (search_engine.request('PUT', '/.hid1/_settings', '{"index": {"hidden": false}}')).status;
SELECT cnt('/*hid1*,hv*/_count');
SELECT r.body->'.hid1'->'settings'->'index' ? 'hidden' AS still_shown
  FROM search_engine.request('GET', '/.hid1/_settings') r;
DROP FUNCTION cnt(text);
SELECT search_engine.delete_index('.hid1') IS NOT NULL AS deleted;
SELECT search_engine.delete_index('hvis') IS NOT NULL AS deleted;
