-- The ES REST entry point: statuses and bodies as Elasticsearch answers.
SELECT status, mask(body) FROM search_engine.request('PUT', '/books', '{"settings": {"number_of_replicas": 0}, "mappings": {"properties": {"title": {"type": "text"}, "year": {"type": "integer"}}}}');
SELECT status, body FROM search_engine.request('HEAD', '/books');
SELECT status, body FROM search_engine.request('HEAD', '/nobooks');
SELECT status, body->'error'->>'type' FROM search_engine.request('PUT', '/books');
SELECT status, body FROM search_engine.request('PUT', '/Books');
SELECT status, mask(body) FROM search_engine.request('PUT', '/books/_doc/1?refresh=true', '{"title": "The Old Man and the Sea", "year": 1952}');
SELECT status, mask(body) FROM search_engine.request('POST', '/books/_doc/1', '{"title": "The Old Man and the Sea", "year": 1952}');
SELECT status, mask(body) FROM search_engine.request('PUT', '/books/_create/1', '{"title": "dup"}');
SELECT status, mask(body) FROM search_engine.request('POST', '/books/_update/1', '{"doc": {"year": 1953}}');
SELECT status, mask(body) FROM search_engine.request('GET', '/books/_doc/1');
SELECT status, body FROM search_engine.request('GET', '/books/_source/1');
SELECT status, body FROM search_engine.request('GET', '/books/_doc/2');
SELECT status, body FROM search_engine.request('HEAD', '/books/_doc/1');
SELECT status, mask(body) FROM search_engine.request('POST', '/books/_bulk?refresh=true', E'{"index": {"_id": "2"}}\n{"title": "A Farewell to Arms", "year": 1929}\n{"index": {"_id": "3"}}\n{"title": "For Whom the Bell Tolls", "year": 1940}\n');
SELECT status, body FROM search_engine.request('POST', '/_bulk', '{"index": {"_index": "books", "_id": "9"}}');
SELECT status, body->'hits'->'total', jsonb_path_query_array(body, '$.hits.hits[*]._id') FROM search_engine.request('GET', '/books/_search', '{"query": {"match": {"title": "the"}}, "sort": [{"year": "asc"}]}');
SELECT status, jsonb_path_query_array(body, '$.hits.hits[*]._id') FROM search_engine.request('GET', '/books/_search?q=title:arms');
SELECT status, jsonb_path_query_array(body, '$.hits.hits[*]._id') FROM search_engine.request('GET', '/books/_search?size=1&from=1&q=year:1940');
SELECT status, body FROM search_engine.request('GET', '/books/_count', '{"query": {"range": {"year": {"lt": 1950}}}}');
SELECT status, body FROM search_engine.request('GET', '/books/_search', '{"query": {"nope": {}}}');
SELECT status, body FROM search_engine.request('GET', '/books/_search', '{"query": ');
SELECT status, jsonb_path_query_array(body, '$.docs[*].found') FROM search_engine.request('GET', '/_mget', '{"docs": [{"_index": "books", "_id": "1"}, {"_index": "books", "_id": "7"}]}');
SELECT status, jsonb_path_query_array(body, '$.docs[*]._id') FROM search_engine.request('GET', '/books/_mget', '{"ids": ["3", "2"]}');
SELECT status, mask(body) FROM search_engine.request('DELETE', '/books/_doc/3?refresh=true');
SELECT status, mask(body) FROM search_engine.request('DELETE', '/books/_doc/3');
SELECT status, body FROM search_engine.request('GET', '/books/_mapping');
SELECT status, body->'books'->'settings'->'index'->'number_of_shards' FROM search_engine.request('GET', '/books/_settings');
-- dynamic settings: PUT /{index}/_settings (index.merge.* as Elasticsearch names them)
SELECT status, body FROM search_engine.request('PUT', '/books/_settings', '{"index": {"merge": {"policy": {"segments_per_tier": 5, "floor_segment": "4mb"}, "scheduler": {"max_thread_count": 2}}, "refresh_interval": "2s"}}');
SELECT status, body->'books'->'settings'->'index'->'merge', body->'books'->'settings'->'index'->'refresh_interval' FROM search_engine.request('GET', '/books/_settings');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('PUT', '/books/_settings', '{"index.merge.policy.deletes_pct_allowed": 70}');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('PUT', '/books/_settings', '{"index": {"merge.policy.max_merge_at_once": 1}}');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('PUT', '/books/_settings', '{"index": {"merge.scheduler.max_thread_count": 0}}');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('PUT', '/books/_settings', '{"index": {"merge.policy.nope": 1}}');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('PUT', '/books/_settings', '{"index": {"number_of_shards": 3}}');
SELECT status, body->'error'->>'type', body->'error'->>'reason' FROM search_engine.request('PUT', '/books/_settings', '{"index": {"codec": "best_compression"}}');
SELECT status, body->'error'->>'type' FROM search_engine.request('PUT', '/books/_settings', '{}');
SELECT status, body->'error'->>'type' FROM search_engine.request('PUT', '/nope/_settings', '{"refresh_interval": "1s"}');
SELECT search_engine.put_settings('books', '{"settings": {"index.merge.policy.segments_per_tier": "10", "index.merge.policy.floor_segment": "2mb", "index.merge.scheduler.max_thread_count": 1, "index.refresh_interval": "1s"}}');
SELECT status, body->'books'->'settings'->'index'->'merge', body->'books'->'settings'->'index'->'refresh_interval' FROM search_engine.request('GET', '/books/_settings');
SELECT status, body FROM search_engine.request('PUT', '/books/_mapping', '{"properties": {"year": {"type": "text"}}}');
SELECT status, body FROM search_engine.request('POST', '/books/_refresh');
SELECT status, body FROM search_engine.request('POST', '/books/_flush');
SELECT status, body FROM search_engine.request('POST', '/books/_forcemerge?max_num_segments=1');
SELECT status, body FROM search_engine.request('POST', '/_refresh');
SELECT status, jsonb_typeof(body) FROM search_engine.request('GET', '/_cat/indices');
SELECT status, jsonb_path_query_array(body, '$[*] ? (@.index == "books")."docs.count"') FROM search_engine.request('GET', '/_cat/indices?format=json');
SELECT status, jsonb_path_query_array(body, '$[*].name') FROM search_engine.request('GET', '/_cat/thread_pool?format=json');
SELECT status, jsonb_array_length(body) > 0 FROM search_engine.request('GET', '/_cat/segments/books?format=json');
SELECT status, body->'status', body->'number_of_nodes' FROM search_engine.request('GET', '/_cluster/health/books');
SELECT status, body->'tagline' FROM search_engine.request('GET', '/');
SELECT status, mask(body) FROM search_engine.request('POST', '/books/_close');
SELECT status, body FROM search_engine.request('GET', '/books/_search');
-- a closed index's copies count in health as ES 7.2+ counts them
SELECT status, body->'status' AS status, body->'active_primary_shards' AS primaries,
       body->'indices'->'books'->'status' AS books
  FROM search_engine.request('GET', '/_cluster/health/books?level=indices');
SELECT status, body->'indices' ? 'books' AS books_counted
  FROM search_engine.request('GET', '/_cluster/health?level=indices');
SELECT status, body FROM search_engine.request('POST', '/books/_open');
SELECT status, body->'hits'->'total' FROM search_engine.request('GET', '/books/_search');
SELECT status, body FROM search_engine.request('GET', '/books/_frobnicate');
SELECT status, body FROM search_engine.request('DELETE', '/book*');
SELECT status, body FROM search_engine.request('DELETE', '/books');
SELECT status, body FROM search_engine.request('GET', '/books');

-- _cat/shards, and an index's shards spread over the write workers even
-- when other indices weigh more on one worker: make worker 0 carry at least
-- two more shards than worker 1 (create four 1-shard indices, which go to
-- the lighter worker, then delete those on worker 1), then a 2-shard index
-- must still get one shard on each worker.
DO $$
DECLARE i int;
BEGIN
  FOR i IN 1..4 LOOP
    PERFORM search_engine.create_index('skew' || i, '{"settings": {"number_of_shards": 1}}');
  END LOOP;
  FOR i IN 1..4 LOOP
    IF (SELECT write_worker FROM search_engine.shards WHERE index = 'skew' || i) = 1 THEN
      PERFORM search_engine.delete_index('skew' || i);
    END IF;
  END LOOP;
END $$;
SELECT count(*) FILTER (WHERE write_worker = 0) - count(*) FILTER (WHERE write_worker = 1) >= 2 AS skewed
  FROM search_engine.shards;
SELECT search_engine.create_index('spread', '{"settings": {"number_of_shards": 2}}') IS NOT NULL;
SELECT shard, prirep, state, docs FROM search_engine.shards WHERE index = 'spread' ORDER BY shard;
SELECT count(DISTINCT write_worker) AS workers FROM search_engine.shards WHERE index = 'spread';
SELECT status, jsonb_path_query_array(body, '$[*] ? (@.index == "spread").state')
  FROM search_engine.request('GET', '/_cat/shards/spread?format=json');
SELECT bool_and(search_engine.delete_index(index) IS NOT NULL) AS deleted
  FROM search_engine.indices WHERE index LIKE 'skew_' OR index = 'spread';
