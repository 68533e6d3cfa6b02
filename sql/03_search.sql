-- Search with the ES query DSL (products has 2 shards).
SELECT search_engine.refresh('products')->'_shards'->'failed';

CREATE FUNCTION ids(r jsonb) RETURNS text LANGUAGE sql AS
$$ SELECT string_agg(h->>'_id', ',' ORDER BY o) FROM jsonb_array_elements(r->'hits'->'hits') WITH ORDINALITY t(h, o) $$;

SELECT ids(search_engine.search('products', '{"query": {"match": {"name": "running"}}}'));
SELECT ids(search_engine.search('products', '{"query": {"match": {"name": {"query": "running shoes", "operator": "and"}}}}'));
SELECT ids(search_engine.search('products', '{"query": {"match_phrase": {"name": "running shoes"}}}'));
SELECT ids(search_engine.search('products', '{"query": {"match_phrase": {"name": {"query": "shoes trail", "slop": 1}}}}'));
SELECT ids(search_engine.search('products', '{"query": {"match_phrase": {"name": {"query": "shoes trail", "slop": 0}}}}'));
SELECT ids(search_engine.search('products', '{"query": {"term": {"tags": "sport"}}, "sort": ["_doc"]}'));
SELECT ids(search_engine.search('products', '{"query": {"terms": {"tags": ["boots", "socks"]}}, "sort": [{"price": "asc"}]}'));
SELECT ids(search_engine.search('products', '{"query": {"range": {"price": {"gte": 30, "lt": 150}}}, "sort": [{"price": "desc"}]}'));
-- integer terms are binary with NUL bytes: term, terms and range must all work
SELECT ids(search_engine.search('products', '{"query": {"terms": {"qty": [3, 7]}}, "sort": [{"price": "asc"}]}'));
SELECT ids(search_engine.search('products', '{"query": {"term": {"qty": 100}}}'));
SELECT ids(search_engine.search('products', '{"query": {"range": {"qty": {"gte": 0, "lte": 3}}}, "sort": [{"qty": "asc"}]}'));
SELECT ids(search_engine.search('products', '{"query": {"range": {"released": {"gte": "2023-01-01"}}}, "sort": [{"released": "asc"}]}'));
SELECT ids(search_engine.search('products', '{"query": {"exists": {"field": "released"}}, "sort": [{"price": "asc"}]}'));
SELECT search_engine.search('products', '{"sort": [{"_id": "asc"}]}');
SELECT ids(search_engine.search('products', '{"query": {"ids": {"values": ["1", "3", "nope"]}}, "sort": [{"price": "asc"}]}'));
SELECT ids(search_engine.search('products', '{"query": {"prefix": {"name.raw": "R"}}, "sort": [{"price": "asc"}]}'));
SELECT ids(search_engine.search('products', '{"query": {"bool": {"must": [{"match": {"name": "shoe"}}], "filter": [{"term": {"active": true}}]}}}'));
SELECT ids(search_engine.search('products', '{"query": {"bool": {"should": [{"term": {"tags": "boots"}}, {"term": {"tags": "socks"}}], "must_not": [{"range": {"price": {"lt": 10}}}]}}}'));
SELECT ids(search_engine.search('products', '{"query": {"constant_score": {"filter": {"term": {"tags": "sport"}}, "boost": 2}}, "sort": [{"price": "asc"}]}'));
SELECT ids(search_engine.search('products', '{"query": {"multi_match": {"query": "boots", "fields": ["name", "tags"]}}}'));

-- scores: constant_score gives the boost; match_all gives 1
SELECT jsonb_path_query_array(search_engine.search('products', '{"query": {"constant_score": {"filter": {"term": {"tags": "sport"}}, "boost": 2}}}'), '$.hits.hits[*]._score');
SELECT search_engine.search('products', '{"size": 1, "query": {"match_all": {}}}')->'hits'->'max_score';

-- sort, from/size, _source filtering, totals
SELECT ids(search_engine.search('products', '{"sort": [{"qty": {"order": "desc"}}], "from": 1, "size": 2}'));
SELECT search_engine.search('products', '{"query": {"ids": {"values": ["1"]}}, "_source": ["name", "price"]}')->'hits'->'hits'->0->'_source';
SELECT search_engine.search('products', '{"query": {"ids": {"values": ["1"]}}, "_source": false}')->'hits'->'hits'->0 ? '_source';
SELECT search_engine.search('products', '{"query": {"ids": {"values": ["1"]}}, "_source": {"excludes": ["name", "tag*"]}}')->'hits'->'hits'->0->'_source';
SELECT search_engine.search('products', '{"size": 0}')->'hits'->'total';
SELECT search_engine.search('products', '{"size": 0, "track_total_hits": 2}')->'hits'->'total';
SELECT search_engine.search('products', '{"sort": [{"price": "asc"}], "size": 1}')->'hits'->'hits'->0->'sort';
SELECT search_engine.count('products', '{"query": {"term": {"tags": "sport"}}}');

-- several indices, wildcards
SELECT search_engine.search('products,autocreated', '{"size": 0}')->'hits'->'total'->'value';
SELECT search_engine.search('auto*', '{"query": {"match": {"msg": "world"}}}')->'hits'->'hits'->0->>'_index';

-- search_hits as a table
SELECT _id, _score > 0 AS scored, _source->>'name' AS name
  FROM search_engine.search_hits('products', '{"query": {"match": {"name": "socks"}}}');

-- errors name the offending part
SELECT search_engine.search('products', '{"query": {"frobnicate": {}}}');
SELECT search_engine.search('products', '{"query": {"match": {"name": "a", "tags": "b"}}}');
SELECT search_engine.search('products', '{"query": {"range": {"price": {"about": 3}}}}');
SELECT search_engine.search('products', '{"from": 9999, "size": 10}');
SELECT search_engine.search('products', '{"sort": [{"name": "asc"}]}');
SELECT search_engine.search('products', '{"bogus": 1}');
SELECT search_engine.search('nope', '{}');
