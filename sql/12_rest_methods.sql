-- The REST router: each route declares the methods it takes.  A path some
-- route matches, asked with a method none of them takes, answers ES's 405
-- with the methods it takes (ES also sets an Allow header, which request()
-- cannot return); a path no route matches stays 400 "no handler found".
SELECT status FROM search_engine.request('PUT', '/m', '{"settings": {"number_of_shards": 1}}');
SELECT status FROM search_engine.request('PUT', '/m/_doc/1?refresh=true', '{"t": "x"}');

SELECT method, path, status, body->>'error' AS error, body->'status' AS body_status
  FROM (VALUES ('PATCH', '/m/_search'),
               ('DELETE', '/m/_search'),
               ('PUT', '/m/_count'),
               ('PUT', '/m/_doc'),
               ('GET', '/m/_update/1'),
               ('PUT', '/m/_update/1'),
               ('GET', '/m/_create/1'),
               ('PATCH', '/m/_doc/1'),
               ('POST', '/m/_source/1'),
               ('POST', '/m'),
               ('DELETE', '/m/_settings'),
               ('DELETE', '/m/_mapping'),
               ('GET', '/m/_open'),
               ('GET', '/m/_close'),
               ('GET', '/m/_forcemerge'),
               ('PUT', '/m/_refresh'),
               ('GET', '/m/_update_by_query'),
               ('DELETE', '/m/_bulk'),
               ('GET', '/_reindex/n:1/_rethrottle'),
               ('DELETE', '/_cluster/health'),
               ('POST', '/_cat/indices'),
               ('PUT', '/_cat/shards/m'),
               ('POST', '/_tasks'),
               ('DELETE', '/_tasks/n:1'),
               ('GET', '/_tasks/n:1/_cancel'),
               ('GET', '/_update_by_query/n:1/_rethrottle'),
               ('POST', '/'),
               ('PATCH', '/m/_search?q=t:x&size=1')) AS v(method, path),
       LATERAL search_engine.request(method, path)
 ORDER BY path, method;

-- /_search is also /{index} with index "_search": ES lists the methods of
-- every route the path matches, and runs the first that takes the method
-- (GET /_bulk gets index "_bulk").
SELECT status, body FROM search_engine.request('PATCH', '/_search');
SELECT status, body->'error'->>'type' FROM search_engine.request('GET', '/_bulk');
-- HEAD is a method like the others: 405 where no route takes it, no body.
SELECT status, body FROM search_engine.request('HEAD', '/m/_search');
SELECT status, body FROM search_engine.request('HEAD', '/m/_source/1');
SELECT status, body FROM search_engine.request('HEAD', '/m/_source/2');
SELECT status, body FROM search_engine.request('HEAD', '/m/_doc/1');
SELECT status, body FROM search_engine.request('HEAD', '/');
-- OPTIONS: ES answers 200 and an Allow header
SELECT status, body FROM search_engine.request('OPTIONS', '/m/_search');
-- not an HTTP method ES knows
SELECT status, body FROM search_engine.request('FETCH', '/m/_search');
SELECT status, body FROM search_engine.request('FETCH', '/m/_nothing');
-- methods are matched without regard to case, as before
SELECT status, body->'count' FROM search_engine.request('get', '/m/_count');
-- unknown paths: 400 whatever the method
SELECT status, body FROM search_engine.request('PATCH', '/m/_frobnicate');
SELECT status, body FROM search_engine.request('GET', '/m/_doc/1/extra');
SELECT status, body FROM search_engine.request('GET', '/_cat/nothing');

-- every route still answers the methods it takes
SELECT method, path, status
  FROM (VALUES ('GET', '/m/_search'), ('POST', '/m/_search'), ('GET', '/_search'), ('POST', '/_count'),
               ('GET', '/m/_mget'), ('POST', '/_mget'), ('GET', '/_refresh'), ('POST', '/m/_flush'),
               ('GET', '/m/_mapping'), ('POST', '/m/_mapping'), ('GET', '/m/_settings'),
               ('GET', '/m'), ('HEAD', '/m'), ('GET', '/m/_source/1'), ('GET', '/_tasks'),
               ('GET', '/_cat/indices/m'), ('GET', '/_cat/thread_pool'), ('GET', '/_cat/segments'),
               ('GET', '/_cluster/health'), ('GET', '/_cluster/health/m'), ('GET', '/')) AS v(method, path),
       LATERAL search_engine.request(method, path,
                                     CASE WHEN path = '/m/_mget' THEN '{"ids": ["1"]}'
                                          WHEN path = '/_mget' THEN '{"docs": [{"_index": "m", "_id": "1"}]}'
                                          WHEN path LIKE '%_mapping' AND method = 'POST' THEN '{"properties": {}}' END)
 ORDER BY path, method;
SELECT status, body->'result' FROM search_engine.request('POST', '/m/_doc?refresh=true', '{"t": "auto id"}');
SELECT status, body->'result' FROM search_engine.request('POST', '/m/_create/2', '{"t": "y"}');
SELECT status, body->'result' FROM search_engine.request('POST', '/m/_update/2', '{"doc": {"t": "z"}}');
SELECT status, body->'result' FROM search_engine.request('DELETE', '/m/_doc/2');
SELECT status FROM search_engine.request('DELETE', '/m');
