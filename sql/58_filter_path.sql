-- ES's filter_path URL parameter: any JSON answer cut to the named paths
-- (wildcards, "**", exclusions with '-'), applied by the router after the
-- API has answered, so every endpoint has it -- errors too, as in ES.
SELECT status FROM search_engine.request('PUT', '/fpath', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"t": {"type": "text"}, "k": {"type": "keyword"}, "n": {"type": "long"}}}}');
-- the bulk filters log shippers send (errors, each item's status and error)
SELECT status, body FROM search_engine.request('POST', '/fpath/_bulk?refresh=true&filter_path=errors,items.*.error.type,items.*.error.reason,items.*.status',
  E'{"index": {"_id": "1"}}\n{"t": "red apple", "k": "a", "n": 1}\n{"index": {"_id": "2"}}\n{"t": "green apple", "k": "b", "n": 2}\n{"index": {"_id": "3"}}\n{"n": "not a number"}\n');
SELECT status, body FROM search_engine.request('POST', '/fpath/_bulk?refresh=true&filter_path=errors,items.*.error',
  E'{"index": {"_id": "4"}}\n{"t": "apple pie", "k": "a", "n": 4}\n');
-- a search cut to ids and scores, and to the hits' totals
SELECT body FROM search_engine.request('POST', '/fpath/_search?filter_path=hits.hits._id,hits.hits._score,took', '{"query": {"match": {"t": "apple"}}, "sort": ["n"]}') \gset
SELECT jsonb_path_query_array(:'body', '$.hits.hits[*]._id') AS ids, :'body'::jsonb ? 'took' AS has_took,
       :'body'::jsonb->'hits' ? 'total' AS has_total, (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(:'body'::jsonb) k) AS keys;
SELECT body FROM search_engine.request('POST', '/fpath/_search?filter_path=hits.total', '{"query": {"match": {"t": "apple"}}}');
-- wildcards and "**"
SELECT body FROM search_engine.request('POST', '/fpath/_search?filter_path=hits.hits._source.*', '{"query": {"term": {"k": "b"}}}');
SELECT body FROM search_engine.request('POST', '/fpath/_search?filter_path=**.k', '{"query": {"term": {"k": "b"}}}');
SELECT body FROM search_engine.request('POST', '/fpath/_search?filter_path=aggregations.**.key', '{"size": 0, "aggs": {"by_k": {"terms": {"field": "k"}}}}');
-- exclusions, and exclusions with inclusions (exclusions first)
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(body) k) AS keys
  FROM search_engine.request('POST', '/fpath/_search?filter_path=-hits,-_shards', '{"query": {"match_all": {}}}');
SELECT body FROM search_engine.request('POST', '/fpath/_search?filter_path=hits.hits._source,-hits.hits._source.t', '{"query": {"term": {"k": "b"}}}');
-- other APIs: get, count, _cat in JSON, the cluster's health
SELECT body FROM search_engine.request('GET', '/fpath/_doc/2?filter_path=_source.k,found');
SELECT body FROM search_engine.request('GET', '/fpath/_count?filter_path=count');
SELECT body FROM search_engine.request('GET', '/_cat/indices/fpath?format=json&filter_path=index,docs.count');
SELECT body FROM search_engine.request('GET', '/_cluster/health/fpath?filter_path=status,number_of_nodes');
-- nothing named left: {}; an error is cut as any answer (as ES does)
SELECT status, body FROM search_engine.request('POST', '/fpath/_search?filter_path=nosuch', '{}');
SELECT status, body FROM search_engine.request('GET', '/nosuch_index/_search?filter_path=status');
SELECT status, body FROM search_engine.request('GET', '/nosuch_index/_search?filter_path=error.type');
-- with format=yaml: cut, then written as YAML
SELECT status, body FROM search_engine.request('GET', '/fpath/_count?filter_path=count&format=yaml');
-- text answers (_cat without format) are left alone
SELECT status, body FROM search_engine.request('GET', '/_cat/count/fpath?filter_path=count&h=count');
SELECT status FROM search_engine.request('DELETE', '/fpath');
