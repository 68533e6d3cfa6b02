-- search_type=dfs_query_then_fetch: the same documents in a 3-shard and a
-- 1-shard index.  Without DFS each shard scores with its own term
-- statistics, so the 3-shard index's scores differ from the 1-shard
-- index's; with DFS every shard scores with the sums over all shards, and
-- the scores are exactly the 1-shard index's (float32 bit for bit).
SELECT search_engine.create_index(i, ('{"settings": {"number_of_shards": ' || n || '},
  "mappings": {"properties": {"title": {"type": "text"}, "body": {"type": "text"},
                              "tag": {"type": "keyword"}, "n": {"type": "integer"}}}}')::jsonb)->>'acknowledged'
  FROM (VALUES ('dfs3', 3), ('dfs1', 1)) v(i, n);
-- two batches, so the shards have two segments each
CREATE FUNCTION pg_temp.docs(lo int, hi int) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(format(E'{"index":{"_id":"d%s"}}\n%s\n', i, jsonb_build_object(
           'title', (SELECT string_agg((ARRAY['alpha','beta','gamma','delta','epsilon','zeta','eta'])[1 + (i * k * k + k) % 7], ' ')
                       FROM generate_series(1, 1 + i % 4) k),
           'body', (SELECT string_agg((ARRAY['red','green','blue','fox','dog','cat'])[1 + (i + k * 3) % 6], ' ')
                      FROM generate_series(1, 2 + i % 5) k)
                   || CASE WHEN i % 9 = 0 THEN ' quick brown fox' ELSE '' END,
           'tag', (ARRAY['x','y','z'])[1 + i % 3],
           'n', i)), '' ORDER BY i)
  FROM generate_series(lo, hi) i $$;
SELECT (search_engine.bulk(pg_temp.docs(1, 25), i, 'true'))::jsonb->>'errors',
       (search_engine.bulk(pg_temp.docs(26, 60), i, 'true'))::jsonb->>'errors'
  FROM (VALUES ('dfs3'), ('dfs1')) v(i);
SELECT index, count(*) AS shards, sum(docs) AS docs
  FROM search_engine.shards WHERE index LIKE 'dfs_' GROUP BY index ORDER BY index;

-- every hit and score, by id (ties may rank differently across shard layouts)
CREATE FUNCTION pg_temp.scores(idx text, q jsonb, st text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg((h->>'_id') || ':' || (h->>'_score'), ',' ORDER BY h->>'_id')
    FROM jsonb_array_elements(search_engine.search(idx, q || '{"size": 100}', st)->'hits'->'hits') h $$;
CREATE TABLE pg_temp.queries(name text, q jsonb);
INSERT INTO pg_temp.queries VALUES
  ('match', '{"query": {"match": {"title": "alpha gamma zeta"}}}'),
  ('match and', '{"query": {"match": {"title": {"query": "beta delta", "operator": "and"}}}}'),
  ('match msm', '{"query": {"match": {"body": {"query": "red green blue fox", "minimum_should_match": 2}}}}'),
  ('phrase', '{"query": {"match_phrase": {"body": "quick brown fox"}}}'),
  ('sloppy phrase', '{"query": {"match_phrase": {"body": {"query": "red fox", "slop": 3}}}}'),
  ('multi_match', '{"query": {"multi_match": {"query": "alpha fox", "fields": ["title^2", "body"]}}}'),
  ('most_fields', '{"query": {"multi_match": {"query": "eta cat", "type": "most_fields", "fields": ["title", "body"]}}}'),
  ('multi phrase', '{"query": {"multi_match": {"query": "brown fox", "type": "phrase", "fields": ["title", "body"]}}}'),
  ('term', '{"query": {"term": {"tag": "y"}}}'),
  ('terms', '{"query": {"terms": {"tag": ["x", "z"]}}}'),
  ('bool', '{"query": {"bool": {"must": [{"match": {"body": "dog"}}], "should": [{"term": {"title": {"value": "epsilon", "boost": 3}}}], "filter": [{"range": {"n": {"gte": 5}}}], "must_not": [{"term": {"tag": "z"}}]}}}'),
  ('dis_max', '{"query": {"dis_max": {"queries": [{"match": {"title": "beta"}}, {"match": {"body": "blue"}}], "tie_breaker": 0.3}}}'),
  ('constant_score', '{"query": {"constant_score": {"filter": {"match": {"title": "delta"}}, "boost": 1.5}}}'),
  ('rare term', '{"query": {"match": {"body": "quick"}}}');
-- without DFS: scores of queries on text differ between the layouts
SELECT name, pg_temp.scores('dfs3', q, 'query_then_fetch') = pg_temp.scores('dfs1', q, 'query_then_fetch') AS same_without_dfs,
       pg_temp.scores('dfs3', q, 'dfs_query_then_fetch') = pg_temp.scores('dfs1', q, 'query_then_fetch') AS same_with_dfs,
       pg_temp.scores('dfs1', q, 'dfs_query_then_fetch') = pg_temp.scores('dfs1', q, 'query_then_fetch') AS one_shard_unchanged,
       (SELECT count(*) FROM jsonb_array_elements(search_engine.search('dfs1', q || '{"size": 100}')->'hits'->'hits')) AS hits
  FROM pg_temp.queries ORDER BY name;
-- sorted by a field, with track_scores
SELECT pg_temp.scores('dfs3', '{"query": {"match": {"title": "alpha gamma zeta"}}, "sort": [{"n": "asc"}], "track_scores": true}',
                      'dfs_query_then_fetch')
     = pg_temp.scores('dfs1', '{"query": {"match": {"title": "alpha gamma zeta"}}, "sort": [{"n": "asc"}], "track_scores": true}',
                      'query_then_fetch') AS sorted_same_with_dfs;
-- the top hits in rank order, max_score and total, through the REST router
SELECT status, body->'hits'->'total', body->'hits'->'max_score',
       jsonb_path_query_array(body, '$.hits.hits[*]._score') AS scores
  FROM search_engine.request('POST', '/dfs3/_search?search_type=dfs_query_then_fetch&size=4',
                             '{"query": {"match": {"title": "alpha gamma zeta"}}}');
SELECT status, body->'hits'->'total', body->'hits'->'max_score',
       jsonb_path_query_array(body, '$.hits.hits[*]._score') AS scores
  FROM search_engine.request('GET', '/dfs1/_search?size=4',
                             '{"query": {"match": {"title": "alpha gamma zeta"}}}');
SELECT status, body->'hits'->'total', body->'hits'->'max_score' <> (
         SELECT body->'hits'->'max_score' FROM search_engine.request('GET', '/dfs1/_search?size=4',
           '{"query": {"match": {"title": "alpha gamma zeta"}}}')) AS differs
  FROM search_engine.request('GET', '/dfs3/_search?search_type=query_then_fetch&size=4',
                             '{"query": {"match": {"title": "alpha gamma zeta"}}}');
-- two indices in one search: the statistics are summed over both, so the
-- copies of each document score the same in both
SELECT st, count(DISTINCT h->>'_id') AS ids, count(*) AS hits,
       bool_and(h->>'_score' = (SELECT h2->>'_score' FROM jsonb_array_elements(r->'hits'->'hits') h2
                                 WHERE h2->>'_id' = h->>'_id' AND h2->>'_index' <> h->>'_index')) AS copies_equal
  FROM (SELECT st, search_engine.search('dfs3,dfs1', '{"query": {"match": {"title": "alpha beta"}}, "size": 200}', st) r
          FROM (VALUES ('query_then_fetch'), ('dfs_query_then_fetch')) v(st)) s,
       jsonb_array_elements(r->'hits'->'hits') h
 GROUP BY st ORDER BY st;

-- an unknown search type is ES's 400
SELECT status, body FROM search_engine.request('GET', '/dfs3/_search?search_type=dfs', NULL);
SELECT status, body->'error'->>'type' FROM search_engine.request('GET', '/dfs3/_search?search_type=query_and_fetch', NULL);
SELECT search_engine.search('dfs3', '{}', 'scan');
-- the default is query_then_fetch
SELECT search_engine.search('dfs3', '{"query": {"match": {"title": "alpha"}}}', NULL)->'hits'->'hits'
     = search_engine.search('dfs3', '{"query": {"match": {"title": "alpha"}}}')->'hits'->'hits' AS null_is_default;
SELECT search_engine.delete_index(i)->>'acknowledged' FROM (VALUES ('dfs3'), ('dfs1')) v(i);
