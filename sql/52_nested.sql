-- The nested field type and query (issue 17): each object of a nested field
-- is a hidden document of its own, written before its parent in the same
-- segment (Lucene's block join), so a query inside "nested" matches the
-- fields of one object, never fields of two different objects.
-- Mapping: ES's parameters, _mapping output, limits and merge errors.
SELECT status, body FROM search_engine.request('PUT', '/nst_map', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"user": {"type": "nested", "include_in_parent": true, "properties": {"first": {"type": "keyword"}}}, "plain": {"properties": {"x": {"type": "long"}}}}}}');
SELECT body FROM search_engine.request('GET', '/nst_map/_mapping');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/nst_map/_mapping', '{"properties": {"plain": {"type": "nested"}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/nst_map/_mapping', '{"properties": {"user": {"properties": {"last": {"type": "keyword"}}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/nst_map/_mapping', '{"properties": {"user": {"type": "nested", "bogus": 1}}}');
SELECT status, body FROM search_engine.request('PUT', '/nst_map/_mapping', '{"properties": {"user": {"type": "nested", "include_in_parent": true, "properties": {"last": {"type": "keyword"}}}}}');
SELECT body->'nst_map'->'mappings'->'properties'->'user' FROM search_engine.request('GET', '/nst_map/_mapping');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/nst_lim', '{"settings": {"index.mapping.nested_fields.limit": 1}, "mappings": {"properties": {"a": {"type": "nested"}, "b": {"type": "nested"}}}}');
SELECT status FROM search_engine.request('PUT', '/nst_lim', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0, "index.mapping.nested_objects.limit": 2}, "mappings": {"properties": {"a": {"type": "nested"}}}}');
SELECT body->'nst_lim'->'settings'->'index'->'mapping' FROM search_engine.request('GET', '/nst_lim/_settings');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('PUT', '/nst_lim/_doc/1', '{"a": [{"v": 1}, {"v": 2}, {"v": 3}]}');
SELECT status FROM search_engine.request('PUT', '/nst_lim/_doc/2?refresh=true', '{"a": [{"v": 1}, {"v": 2}]}');
SELECT body->'hits'->'total' FROM search_engine.request('GET', '/nst_lim/_search', '{"query": {"match_all": {}}}');
SELECT status FROM search_engine.request('DELETE', '/nst_lim');

-- ES's "nested field type" example: a flattened object would match
-- first=Alice AND last=Smith across the two users; nested does not.
SELECT status FROM search_engine.request('PUT', '/nst_user', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"group": {"type": "keyword"}, "user": {"type": "nested"}}}}');
SELECT status FROM search_engine.request('PUT', '/nst_obj', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"group": {"type": "keyword"}}}}');
SELECT i, status FROM unnest(ARRAY['nst_user', 'nst_obj']) i,
  search_engine.request('PUT', '/' || i || '/_doc/1?refresh=true', '{"group": "fans", "user": [{"first": "John", "last": "Smith"}, {"first": "Alice", "last": "White"}]}');
-- the object mapping matches across objects, the nested query does not
SELECT body->'hits'->'total'->'value' AS flattened FROM search_engine.request('GET', '/nst_obj/_search',
  '{"query": {"bool": {"must": [{"match": {"user.first": "Alice"}}, {"match": {"user.last": "Smith"}}]}}}');
SELECT body->'hits'->'total'->'value' AS nested_cross FROM search_engine.request('GET', '/nst_user/_search',
  '{"query": {"nested": {"path": "user", "query": {"bool": {"must": [{"match": {"user.first": "Alice"}}, {"match": {"user.last": "Smith"}}]}}}}}');
SELECT body->'hits'->'total'->'value' AS nested_same, body->'hits'->'hits'->0->'_source' AS source FROM search_engine.request('GET', '/nst_user/_search',
  '{"query": {"nested": {"path": "user", "query": {"bool": {"must": [{"match": {"user.first": "Alice"}}, {"match": {"user.last": "White"}}]}}}}}');
-- top level never sees the nested docs: hits, _count, a match on a nested
-- field outside "nested", terms aggregation, get
SELECT body->'hits'->'total' AS total FROM search_engine.request('GET', '/nst_user/_search', '{"query": {"match_all": {}}}');
SELECT body->'count' AS count FROM search_engine.request('GET', '/nst_user/_count');
SELECT body->'hits'->'total'->'value' AS outside FROM search_engine.request('GET', '/nst_user/_search', '{"query": {"match": {"user.first": "Alice"}}}');
SELECT body->'aggregations' FROM search_engine.request('GET', '/nst_user/_search', '{"size": 0, "aggs": {"g": {"terms": {"field": "group"}}}}');
SELECT body->'_source' FROM search_engine.request('GET', '/nst_user/_doc/1');
-- _cat/indices counts Lucene docs (2 nested + 1 root), as ES does
SELECT body FROM search_engine.request('GET', '/_cat/indices/nst_user?h=index,docs.count&format=json');
-- replacing the doc replaces the whole block; deleting deletes it
SELECT status FROM search_engine.request('PUT', '/nst_user/_doc/1?refresh=true', '{"group": "fans", "user": [{"first": "Alice", "last": "Smith"}]}');
SELECT body->'hits'->'total'->'value' AS after_replace FROM search_engine.request('GET', '/nst_user/_search',
  '{"query": {"nested": {"path": "user", "query": {"bool": {"must": [{"match": {"user.first": "Alice"}}, {"match": {"user.last": "Smith"}}]}}}}}');
SELECT body->'hits'->'total'->'value' AS old_child FROM search_engine.request('GET', '/nst_user/_search',
  '{"query": {"nested": {"path": "user", "query": {"match": {"user.last": "White"}}}}}');
SELECT body FROM search_engine.request('GET', '/_cat/indices/nst_user?h=index,docs.count&format=json');
SELECT status FROM search_engine.request('DELETE', '/nst_user/_doc/1?refresh=true');
SELECT body FROM search_engine.request('GET', '/_cat/indices/nst_user?h=index,docs.count&format=json');
SELECT body->'hits'->'total'->'value' AS after_delete FROM search_engine.request('GET', '/nst_user/_search',
  '{"query": {"nested": {"path": "user", "query": {"match_all": {}}}}}');
-- errors: not nested, unknown path, ignore_unmapped, missing parts, bad score_mode
SELECT status, body->'error'->'root_cause'->0->>'type' AS type, body->'error'->'root_cause'->0->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_obj/_search', '{"query": {"nested": {"path": "user", "query": {"match_all": {}}}}}');
SELECT status, body->'error'->'root_cause'->0->>'type' AS type, body->'error'->'root_cause'->0->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_user/_search', '{"query": {"nested": {"path": "nope", "query": {"match_all": {}}}}}');
SELECT status, body->'hits'->'total'->'value' AS unmapped
  FROM search_engine.request('GET', '/nst_user/_search', '{"query": {"nested": {"path": "nope", "ignore_unmapped": true, "query": {"match_all": {}}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_user/_search', '{"query": {"nested": {"query": {"match_all": {}}}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_user/_search', '{"query": {"nested": {"path": "user"}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_user/_search', '{"query": {"nested": {"path": "user", "score_mode": "median", "query": {"match_all": {}}}}}');
SELECT status FROM search_engine.request('DELETE', '/nst_user');
SELECT status FROM search_engine.request('DELETE', '/nst_obj');
-- include_in_parent: the nested fields are also flattened into the root
-- doc, so a top-level query matches there (across objects, as ES's
-- flattened copy does) while the nested query still does not
SELECT status FROM search_engine.request('PUT', '/nst_map/_doc/1?refresh=true', '{"user": [{"first": "John", "last": "Smith"}, {"first": "Alice", "last": "White"}]}');
SELECT body->'hits'->'total'->'value' AS top_level_cross FROM search_engine.request('GET', '/nst_map/_search',
  '{"query": {"bool": {"must": [{"term": {"user.first": "Alice"}}, {"term": {"user.last": "Smith"}}]}}}');
SELECT body->'hits'->'total'->'value' AS nested_cross FROM search_engine.request('GET', '/nst_map/_search',
  '{"query": {"nested": {"path": "user", "query": {"bool": {"must": [{"term": {"user.first": "Alice"}}, {"term": {"user.last": "Smith"}}]}}}}}');
SELECT body->'aggregations'->'f'->'buckets' FROM search_engine.request('GET', '/nst_map/_search', '{"size": 0, "aggs": {"f": {"terms": {"field": "user.first"}}}}');
SELECT status FROM search_engine.request('DELETE', '/nst_map');

-- ES's nested query page: multi-level nesting (drivers).  The page shows
-- _score 3.7742602, a figure of an older scorer (BM25 with the (k1 + 1)
-- factor Lucene 8 dropped); Lucene 9's BM25 over the nested docs' own
-- statistics (N = 4 vehicles; powell, motors, canyonero each in one; make
-- avgdl 7/4 at dl 2, model avgdl 7/4 at dl 1) gives 2 * 0.5170 + 0.6636 =
-- 1.6976941, worked by hand.
SELECT status FROM search_engine.request('PUT', '/nst_drivers', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"driver": {"type": "nested", "properties": {"last_name": {"type": "text"}, "vehicle": {"type": "nested", "properties": {"make": {"type": "text"}, "model": {"type": "text"}}}}}}}}');
SELECT status FROM search_engine.request('PUT', '/nst_drivers/_doc/1', '{"driver": {"last_name": "McQueen", "vehicle": [{"make": "Powell Motors", "model": "Canyonero"}, {"make": "Miller-Meteor", "model": "Ecto-1"}]}}');
SELECT status FROM search_engine.request('PUT', '/nst_drivers/_doc/2?refresh=true', '{"driver": {"last_name": "Hudson", "vehicle": [{"make": "Mifune", "model": "Mach Five"}, {"make": "Miller-Meteor", "model": "Ecto-1"}]}}');
SELECT h->>'_id' AS id, h->'_score' AS score FROM search_engine.request('GET', '/nst_drivers/_search',
  '{"query": {"nested": {"path": "driver", "query": {"nested": {"path": "driver.vehicle", "query": {"bool": {"must": [{"match": {"driver.vehicle.make": "Powell Motors"}}, {"match": {"driver.vehicle.model": "Canyonero"}}]}}}}}}}') r,
  jsonb_array_elements(r.body->'hits'->'hits') h;
-- score modes over the two vehicles of each driver (Ecto-1 in both)
SELECT m AS score_mode, string_agg(h->>'_id' || '=' || (h->>'_score'), ' ' ORDER BY h->>'_id') AS scores
  FROM unnest(ARRAY['avg', 'max', 'min', 'sum', 'none']) m,
       search_engine.request('GET', '/nst_drivers/_search',
         '{"query": {"nested": {"path": "driver.vehicle", "score_mode": "' || m || '", "query": {"bool": {"should": [{"match": {"driver.vehicle.make": "miller"}}, {"match": {"driver.vehicle.model": "mach"}}]}}}}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h
  GROUP BY m ORDER BY m;
-- explain: the block join's node over the best child
SELECT jsonb_pretty(body->'hits'->'hits'->0->'_explanation') FROM search_engine.request('GET', '/nst_drivers/_search',
  '{"explain": true, "query": {"nested": {"path": "driver.vehicle", "score_mode": "max", "query": {"match": {"driver.vehicle.model": "mach"}}}}}');
SELECT status FROM search_engine.request('DELETE', '/nst_drivers');

-- inner_hits (ES's inner hits page): the matching nested objects of each
-- hit, with their _nested identity and their object as _source
SELECT status FROM search_engine.request('PUT', '/nst_ih', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"comments": {"type": "nested"}}}}');
SELECT status FROM search_engine.request('PUT', '/nst_ih/_doc/1?refresh=true', '{"title": "Test title", "comments": [{"author": "kimchy", "number": 1}, {"author": "nik9000", "number": 2}]}');
SELECT jsonb_pretty(body->'hits') FROM search_engine.request('POST', '/nst_ih/_search',
  '{"query": {"nested": {"path": "comments", "query": {"match": {"comments.number": 2}}, "inner_hits": {}}}}');
-- named, sized, without _source; scored children in score order
SELECT body->'hits'->'hits'->0->'inner_hits' FROM search_engine.request('POST', '/nst_ih/_search',
  '{"query": {"nested": {"path": "comments", "query": {"bool": {"should": [{"match": {"comments.author": "kimchy"}}, {"range": {"comments.number": {"gte": 1}}}]}}, "inner_hits": {"name": "c", "size": 1, "_source": false}}}}');
SELECT status, body->'error'->'root_cause'->0->>'reason' AS reason FROM search_engine.request('POST', '/nst_ih/_search',
  '{"query": {"nested": {"path": "comments", "query": {"match_all": {}}, "inner_hits": {"from": 100, "size": 1}}}}');
-- a document replaced before a refresh (block in the write buffer): one block remains
SELECT status FROM search_engine.request('PUT', '/nst_ih/_doc/2', '{"comments": [{"author": "a"}, {"author": "b"}]}');
SELECT status FROM search_engine.request('PUT', '/nst_ih/_doc/2?refresh=true', '{"comments": [{"author": "c"}]}');
SELECT body FROM search_engine.request('GET', '/_cat/indices/nst_ih?h=index,docs.count&format=json');
SELECT h->>'_id' AS id, h->'inner_hits'->'comments'->'hits'->'total'->'value' AS children FROM search_engine.request('POST', '/nst_ih/_search',
  '{"query": {"nested": {"path": "comments", "query": {"match_all": {}}, "inner_hits": {}}}, "sort": ["_doc"]}') r,
  jsonb_array_elements(r.body->'hits'->'hits') h;
-- multi-level identity: a vehicle of a driver
SELECT status FROM search_engine.request('PUT', '/nst_ml', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"driver": {"type": "nested", "properties": {"vehicle": {"type": "nested"}}}}}}');
SELECT status FROM search_engine.request('PUT', '/nst_ml/_doc/1?refresh=true', '{"driver": [{"name": "x", "vehicle": [{"make": "a"}]}, {"name": "y", "vehicle": [{"make": "b"}, {"make": "c"}]}]}');
SELECT h->'_nested' AS identity, h->'_source' AS source FROM search_engine.request('POST', '/nst_ml/_search',
  '{"query": {"nested": {"path": "driver.vehicle", "query": {"match": {"driver.vehicle.make": "c"}}, "inner_hits": {}}}}') r,
  jsonb_array_elements(r.body->'hits'->'hits'->0->'inner_hits'->'driver.vehicle'->'hits'->'hits') h;
SELECT status FROM search_engine.request('DELETE', '/nst_ml');
SELECT status FROM search_engine.request('DELETE', '/nst_ih');

-- the nested aggregation (ES's page): sub-aggregations over the nested docs
-- of the matching docs; nested inside nested joins to the outer level
SELECT status FROM search_engine.request('PUT', '/nst_products', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"resellers": {"type": "nested", "properties": {"reseller": {"type": "keyword"}, "price": {"type": "double"}, "offers": {"type": "nested", "properties": {"qty": {"type": "long"}}}}}}}}');
SELECT status FROM search_engine.request('PUT', '/nst_products/_doc/0', '{"name": "LED TV", "resellers": [{"reseller": "companyA", "price": 350, "offers": [{"qty": 1}, {"qty": 5}]}, {"reseller": "companyB", "price": 500, "offers": [{"qty": 2}]}]}');
SELECT status FROM search_engine.request('PUT', '/nst_products/_doc/1?refresh=true', '{"name": "radio", "resellers": [{"reseller": "companyA", "price": 20}]}');
SELECT body->'aggregations' FROM search_engine.request('GET', '/nst_products/_search?size=0',
  '{"query": {"match": {"name": "led tv"}}, "aggs": {"resellers": {"nested": {"path": "resellers"}, "aggs": {"min_price": {"min": {"field": "resellers.price"}}}}}}');
SELECT body->'aggregations' FROM search_engine.request('GET', '/nst_products/_search?size=0',
  '{"aggs": {"r": {"nested": {"path": "resellers"}, "aggs": {"by": {"terms": {"field": "resellers.reseller"}, "aggs": {"o": {"nested": {"path": "resellers.offers"}, "aggs": {"q": {"sum": {"field": "resellers.offers.qty"}}}}}}}}}}');
-- reverse_nested: per reseller, the products (root docs) it sells, each once
SELECT body->'aggregations' FROM search_engine.request('GET', '/nst_products/_search?size=0',
  '{"aggs": {"r": {"nested": {"path": "resellers"}, "aggs": {"by": {"terms": {"field": "resellers.reseller"}, "aggs": {"products": {"reverse_nested": {}, "aggs": {"n": {"terms": {"field": "name.keyword"}}}}}}}}}}');
-- from the offers back to their reseller (a path), and to the root
SELECT body->'aggregations' FROM search_engine.request('GET', '/nst_products/_search?size=0',
  '{"aggs": {"o": {"nested": {"path": "resellers.offers"}, "aggs": {"up": {"reverse_nested": {"path": "resellers"}, "aggs": {"who": {"terms": {"field": "resellers.reseller"}}}}, "top": {"reverse_nested": {}}}}}}');
SELECT status FROM search_engine.request('DELETE', '/nst_products');

-- nested sort: the min or max over each doc's nested docs that pass the filter
SELECT status FROM search_engine.request('PUT', '/nst_sort', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"comments": {"type": "nested", "properties": {"stars": {"type": "long"}, "author": {"type": "keyword"}}}}}}');
SELECT status FROM search_engine.request('PUT', '/nst_sort/_doc/a', '{"comments": [{"author": "alice", "stars": 5}, {"author": "bob", "stars": 1}]}');
SELECT status FROM search_engine.request('PUT', '/nst_sort/_doc/b', '{"comments": [{"author": "alice", "stars": 2}, {"author": "carol", "stars": 4}]}');
SELECT status FROM search_engine.request('PUT', '/nst_sort/_doc/c?refresh=true', '{"comments": [{"author": "bob", "stars": 3}]}');
SELECT string_agg(h->>'_id' || ':' || (h->'sort'->>0), ' ' ORDER BY ord) AS max_desc
  FROM search_engine.request('GET', '/nst_sort/_search', '{"sort": [{"comments.stars": {"order": "desc", "mode": "max", "nested": {"path": "comments"}}}]}') r,
       jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS x(h, ord);
SELECT string_agg(h->>'_id' || ':' || (h->'sort'->>0), ' ' ORDER BY ord) AS min_asc
  FROM search_engine.request('GET', '/nst_sort/_search', '{"sort": [{"comments.stars": {"order": "asc", "nested": {"path": "comments"}}}]}') r,
       jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS x(h, ord);
-- only alice's stars; c has none of hers: last
SELECT string_agg(h->>'_id' || ':' || coalesce(h->'sort'->>0, 'null'), ' ' ORDER BY ord) AS alice_desc
  FROM search_engine.request('GET', '/nst_sort/_search', '{"sort": [{"comments.stars": {"order": "desc", "mode": "max", "nested": {"path": "comments", "filter": {"term": {"comments.author": "alice"}}}}}]}') r,
       jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS x(h, ord);
SELECT string_agg(h->>'_id' || ':' || (h->'sort'->>0), ' ' ORDER BY ord) AS author_asc
  FROM search_engine.request('GET', '/nst_sort/_search', '{"sort": [{"comments.author": {"order": "asc", "mode": "max", "nested": {"path": "comments"}}}, "_doc"]}') r,
       jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS x(h, ord);
SELECT status, body->'error'->'root_cause'->0->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_sort/_search', '{"sort": [{"comments.stars": {"nested": {"path": "nope"}}}]}');
-- scroll, update and delete by query see root docs only; a merge keeps the
-- blocks whole (three segments, one of them with a deleted block, merged)
SELECT body->'hits'->'total'->'value' AS total, jsonb_array_length(body->'hits'->'hits') AS page
  FROM search_engine.request('GET', '/nst_sort/_search?scroll=1m', '{"size": 10}');
SELECT body->'updated' AS updated FROM search_engine.request('POST', '/nst_sort/_update_by_query?refresh=true', '{"query": {"match_all": {}}}');
SELECT status FROM search_engine.request('PUT', '/nst_sort/_doc/d?refresh=true', '{"comments": [{"author": "dave", "stars": 2}]}');
SELECT body->'deleted' AS deleted FROM search_engine.request('POST', '/nst_sort/_delete_by_query?refresh=true', '{"query": {"ids": {"values": ["c"]}}}');
SELECT status FROM search_engine.request('POST', '/nst_sort/_forcemerge?max_num_segments=1');
SELECT body FROM search_engine.request('GET', '/_cat/indices/nst_sort?h=index,docs.count&format=json');
SELECT string_agg(h->>'_id' || ':' || (h->'inner_hits'->'comments'->'hits'->'total'->>'value'), ' ' ORDER BY ord) AS after_merge
  FROM search_engine.request('GET', '/nst_sort/_search', '{"sort": ["_doc"], "query": {"nested": {"path": "comments", "query": {"match_all": {}}, "inner_hits": {}}}}') r,
       jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS x(h, ord);
SELECT body->'count' AS count FROM search_engine.request('GET', '/nst_sort/_count');
SELECT status, body->'error'->'root_cause'->0->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_sort/_search', '{"sort": [{"comments.stars": "desc"}]}');
SELECT status, body->'error'->'root_cause'->0->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_sort/_search', '{"size": 0, "aggs": {"n": {"nested": {"path": "comments.stars"}}}}');
SELECT status, body->'error'->'root_cause'->0->>'type' AS type, body->'error'->'root_cause'->0->>'reason' AS reason
  FROM search_engine.request('GET', '/nst_sort/_search', '{"size": 0, "aggs": {"t": {"filter": {"match_all": {}}, "aggs": {"up": {"reverse_nested": {}}}}}}');
SELECT status FROM search_engine.request('DELETE', '/nst_sort');
-- the block join's bitsets (a path's docs, the root docs) are cached per
-- segment reader: after the segments change under the same backend
-- (replaces with other block sizes, a merge, a delete) the nested query,
-- its inner hits, nested sort and the nested aggregation see the new blocks
SELECT status FROM search_engine.request('PUT', '/nst_cache', '{"mappings": {"properties": {"c": {"type": "nested", "properties": {"k": {"type": "keyword"}, "n": {"type": "long"}}}, "d": {"type": "nested", "properties": {"k": {"type": "keyword"}}}}}}');
CREATE FUNCTION nst_cache_probe() RETURNS TABLE (hits text, c_docs text, d_hits text) LANGUAGE sql AS $$
  SELECT (SELECT string_agg(h->>'_id' || ':' || (h->'inner_hits'->'c'->'hits'->'total'->>'value') || ':' || (h->'sort'->>0), ' ' ORDER BY ord)
            FROM jsonb_array_elements(r.body->'hits'->'hits') WITH ORDINALITY AS x(h, ord)),
         r.body->'aggregations'->'c'->>'doc_count',
         (SELECT string_agg(h->>'_id', ' ' ORDER BY h->>'_id')
            FROM search_engine.request('GET', '/nst_cache/_search', '{"query": {"nested": {"path": "d", "query": {"term": {"d.k": "x"}}}}}') r2,
                 jsonb_array_elements(r2.body->'hits'->'hits') h)
    FROM search_engine.request('GET', '/nst_cache/_search', '{"query": {"nested": {"path": "c", "query": {"term": {"c.k": "x"}}, "inner_hits": {}}}, "sort": [{"c.n": {"order": "asc", "nested": {"path": "c", "filter": {"term": {"c.k": "x"}}}}}], "aggs": {"c": {"nested": {"path": "c"}}}}') r
$$;
SELECT body->'errors' AS errors FROM search_engine.request('POST', '/nst_cache/_bulk?refresh=true', E'{"index": {"_id": "a"}}\n{"c": [{"k": "x", "n": 1}, {"k": "y", "n": 2}], "d": [{"k": "x"}]}\n{"index": {"_id": "b"}}\n{"c": [{"k": "x", "n": 3}]}\n');
SELECT * FROM nst_cache_probe();
SELECT body->'errors' AS errors FROM search_engine.request('POST', '/nst_cache/_bulk?refresh=true', E'{"index": {"_id": "a"}}\n{"c": [{"k": "y", "n": 5}, {"k": "x", "n": 6}, {"k": "x", "n": 7}]}\n{"index": {"_id": "b"}}\n{"d": [{"k": "x"}, {"k": "y"}]}\n{"index": {"_id": "c"}}\n{"c": [{"k": "x", "n": 4}]}\n');
SELECT * FROM nst_cache_probe();
SELECT status FROM search_engine.request('POST', '/nst_cache/_forcemerge?max_num_segments=1');
SELECT * FROM nst_cache_probe();
SELECT status FROM search_engine.request('DELETE', '/nst_cache/_doc/c?refresh=true');
SELECT status FROM search_engine.request('POST', '/nst_cache/_forcemerge?max_num_segments=1');
SELECT * FROM nst_cache_probe();
DROP FUNCTION nst_cache_probe();
SELECT status FROM search_engine.request('DELETE', '/nst_cache');
-- more nested paths than a reader caches (16): the others are computed per search
SELECT status FROM search_engine.request('PUT', '/nst_many', jsonb_build_object('mappings', jsonb_build_object('properties',
         (SELECT jsonb_object_agg('p' || i, '{"type": "nested", "properties": {"k": {"type": "keyword"}}}'::jsonb) FROM generate_series(1, 20) i)))::text);
SELECT body->'errors' AS errors FROM search_engine.request('POST', '/nst_many/_bulk?refresh=true',
         '{"index": {"_id": "all"}}' || E'\n' || (SELECT jsonb_object_agg('p' || i, jsonb_build_array(jsonb_build_object('k', 'x'))) FROM generate_series(1, 20) i)::text || E'\n' ||
         '{"index": {"_id": "some"}}' || E'\n' || (SELECT jsonb_object_agg('p' || i, jsonb_build_array(jsonb_build_object('k', 'x'))) FROM generate_series(1, 19) i)::text || E'\n');
-- (twice: a reader holds 16 bitsets, the root docs among them; the rest are
-- computed on every search)
WITH q AS (SELECT jsonb_build_object('query', jsonb_build_object('bool', jsonb_build_object('filter', jsonb_agg(
             jsonb_build_object('nested', jsonb_build_object('path', 'p' || i, 'query', jsonb_build_object('term', jsonb_build_object('p' || i || '.k', 'x')))))))) AS body
             FROM generate_series(1, 20) i)
SELECT run, r.body->'hits'->'total'->>'value' AS total, r.body->'hits'->'hits'->0->>'_id' AS id
  FROM q, generate_series(1, 2) run, LATERAL search_engine.request('GET', '/nst_many/_search', q.body::text) r
 ORDER BY run;
SELECT status FROM search_engine.request('DELETE', '/nst_many');
