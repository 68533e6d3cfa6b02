-- Index management: create, get, mapping, settings, close/open, delete.
SELECT mask(search_engine.create_index('products', '{
  "settings": {"number_of_shards": 2, "number_of_replicas": 0, "refresh_interval": "-1"},
  "mappings": {"properties": {
     "name": {"type": "text", "analyzer": "english", "fields": {"raw": {"type": "keyword"}}},
     "price": {"type": "double"}, "qty": {"type": "integer"},
     "tags": {"type": "keyword"}, "released": {"type": "date"},
     "active": {"type": "boolean"}}}}'));
SELECT mask(search_engine.get_index('products'));
SELECT search_engine.get_mapping('products');

-- defaults: one shard, one replica (unassigned on one node -> yellow)
SELECT mask(search_engine.create_index('plain'));
SELECT health, status, index, pri, rep, "docs.count" FROM search_engine.indices ORDER BY index;

-- ES index-name rules
SELECT search_engine.create_index('UPPER');
SELECT search_engine.create_index('_under');
SELECT search_engine.create_index('-dash');
SELECT search_engine.create_index('a*b');
SELECT search_engine.create_index('a b');
SELECT search_engine.create_index('..');
SELECT search_engine.create_index(repeat('x', 256));
SELECT try($$SELECT search_engine.create_index('products')$$);
-- each ES error type has its SQLSTATE
SELECT try($$SELECT search_engine.create_index('Bad')$$) AS invalid_name,
       try($$SELECT search_engine.get_index('nope')$$) AS not_found,
       try($$SELECT search_engine.search('products', '{"query": {"x": {}}}')$$) AS parsing,
       try($$SELECT search_engine.create_index('bad0', '{"settings": {"number_of_shards": -1}}')$$) AS bad_setting;
SELECT search_engine.get_index('nope');
SELECT search_engine.delete_index('nope');

-- bad settings and mappings
SELECT search_engine.create_index('bad1', '{"settings": {"number_of_shards": 0}}');
SELECT search_engine.create_index('bad2', '{"settings": {"index.foo": 1}}');
SELECT search_engine.create_index('bad3', '{"mappings": {"properties": {"f": {"type": "nope"}}}}');
SELECT search_engine.create_index('bad4', '{"settings": {"translog.durability": "sometimes"}}');
SELECT count(*) FROM search_engine.indices WHERE index LIKE 'bad%';

-- put_mapping adds fields; changing a type is refused
SELECT search_engine.put_mapping('products', '{"properties": {"color": {"type": "keyword"}}}');
SELECT search_engine.get_mapping('products')->'products'->'mappings'->'properties'->'color';
SELECT search_engine.put_mapping('products', '{"properties": {"price": {"type": "keyword"}}}');

-- close / open
SELECT search_engine.close_index('plain');
SELECT status FROM search_engine.indices WHERE index = 'plain';
SELECT search_engine.search('plain');
SELECT search_engine.index_doc('plain', '1', '{"a": 1}');
SELECT search_engine.open_index('plain');
SELECT mask(search_engine.index_doc('plain', '1', '{"a": 1}', refresh => 'true'));
SELECT search_engine.count('plain');

SELECT search_engine.delete_index('plain');
SELECT search_engine.get_index('plain');
SELECT index FROM search_engine.indices ORDER BY index;
