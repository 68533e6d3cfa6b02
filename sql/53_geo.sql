-- geo_point: the mapping, every input format ES accepts, range checks,
-- ignore_malformed / ignore_z_value / null_value; geo queries, the
-- _geo_distance sort and geo distance_feature.  Distances are checked by
-- hand below (haversine, earth radius 6371008.7714 m, on the points as
-- Lucene quantises them: 180/2^32 and 360/2^32 degree steps).
SELECT status FROM search_engine.request('PUT', '/geo', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"name": {"type": "keyword"},
    "location": {"type": "geo_point"},
    "strict_z": {"type": "geo_point", "ignore_z_value": false},
    "lenient": {"type": "geo_point", "ignore_malformed": true},
    "with_null": {"type": "geo_point", "null_value": "POINT (2.35 48.85)"}}}}');
SELECT body->'geo'->'mappings' AS mapping FROM search_engine.request('GET', '/geo/_mapping');
-- every format: object, "lat,lon", geohash, [lon, lat], WKT, GeoJSON, arrays
CREATE TEMP TABLE geo_docs (id text, doc text);
INSERT INTO geo_docs VALUES
  ('obj',     '{"name": "obj", "location": {"lat": 41.12, "lon": -71.34}}'),
  ('objstr',  '{"name": "objstr", "location": {"lat": "41.12", "lon": "-71.34"}}'),
  ('string',  '{"name": "string", "location": "41.12,-71.34"}'),
  ('geohash', '{"name": "geohash", "location": "drm3btev3e86"}'),
  ('array',   '{"name": "array", "location": [-71.34, 41.12]}'),
  ('wkt',     '{"name": "wkt", "location": "POINT (-71.34 41.12)"}'),
  ('geojson', '{"name": "geojson", "location": {"type": "Point", "coordinates": [-71.34, 41.12]}}'),
  ('multi',   '{"name": "multi", "location": [{"lat": 40.715, "lon": -74.011}, "48.8566,2.3522", [13.4, 52.52]]}'),
  ('z',       '{"name": "z", "location": [-71.34, 41.12, 12.5]}'),
  ('nullv',   '{"name": "nullv", "with_null": null}'),
  ('lenient_bad', '{"name": "lenient_bad", "lenient": "not a point"}'),
  ('lenient_range', '{"name": "lenient_range", "lenient": {"lat": 91, "lon": 181}}'),
  ('none',    '{"name": "none"}');
SELECT id, status, body->'result' AS result FROM geo_docs,
  search_engine.request('PUT', '/geo/_doc/' || id, doc) ORDER BY id;
-- malformed points are refused (ES: mapper_parsing_exception naming the field)
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM (VALUES ('{"location": {"lat": 91, "lon": 0}}'), ('{"location": {"lat": 0, "lon": -180.5}}'),
               ('{"location": "91,0"}'), ('{"location": {"lat": 1}}'), ('{"location": "abc!"}'),
               ('{"location": [1, 2, 3, 4]}'), ('{"location": {"lat": 1, "lon": 2, "x": 3}}'),
               ('{"location": true}'), ('{"strict_z": [1, 2, 3]}'), ('{"strict_z": "POINT (1 2 3)"}')) v(doc),
  search_engine.request('PUT', '/geo/_doc/bad', doc);
-- a bad null_value is refused at mapping time
SELECT status, body->'error'->>'reason' AS reason FROM search_engine.request('PUT', '/geo/_mapping',
  '{"properties": {"bad_null": {"type": "geo_point", "null_value": "nope!"}}}');
-- dynamic mapping never makes a geo_point
SELECT status FROM search_engine.request('PUT', '/geo_dyn/_doc/1?refresh=true', '{"p": {"lat": 1, "lon": 2}, "q": "1.5,2.5"}');
SELECT body->'geo_dyn'->'mappings'->'properties' AS dynamic_props FROM search_engine.request('GET', '/geo_dyn/_mapping');
SELECT status FROM search_engine.request('DELETE', '/geo_dyn');
SELECT status FROM search_engine.request('POST', '/geo/_refresh');
-- exists: every doc with a point (null_value and ignore_malformed normalised ones too)
SELECT body->'hits'->'total'->'value' AS n,
       (SELECT jsonb_agg(h->'_id' ORDER BY h->>'_id') FROM jsonb_array_elements(body->'hits'->'hits') h) AS ids
  FROM (VALUES ('location'), ('with_null'), ('lenient')) f(field),
  search_engine.request('POST', '/geo/_search', '{"query": {"exists": {"field": "' || field || '"}}, "size": 20}');
-- ES's geo_distance and geo_bounding_box examples (index my_locations)
SELECT status FROM search_engine.request('PUT', '/my_locations', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0},
  "mappings": {"properties": {"pin": {"properties": {"location": {"type": "geo_point"}}}}}}');
SELECT status FROM search_engine.request('PUT', '/my_locations/_doc/1?refresh=true', '{"pin": {"location": {"lat": 40.12, "lon": -71.34}}}');
SELECT q, body->'hits'->'total'->'value' AS hits, body->'error'->>'type' AS error, body->'error'->>'reason' AS reason
  FROM (VALUES
    ('{"geo_distance": {"distance": "200km", "pin.location": {"lat": 40, "lon": -70}}}'),
    ('{"geo_distance": {"distance": "100km", "pin.location": {"lat": 40, "lon": -70}}}'),
    ('{"geo_distance": {"distance": "12mi", "pin.location": [-70, 40]}}'),
    ('{"geo_distance": {"distance": 200000, "distance_type": "plane", "pin.location": "40,-70"}}'),
    ('{"geo_distance": {"distance": "200km", "pin.location": "drm3btev3e86"}}'),
    ('{"geo_distance": {"distance": "200km", "pin.location": "POINT (-70 40)"}}'),
    ('{"geo_bounding_box": {"pin.location": {"top_left": {"lat": 40.73, "lon": -74.1}, "bottom_right": {"lat": 40.01, "lon": -71.12}}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top_left": [-74.1, 40.73], "bottom_right": [-71.12, 40.01]}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top_left": "POINT (-74.1 40.73)", "bottom_right": "POINT (-71.12 40.01)"}}}'),
    ('{"geo_bounding_box": {"pin.location": {"wkt": "BBOX (-74.1, -71.12, 40.73, 40.01)"}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top": 40.73, "left": -74.1, "bottom": 40.01, "right": -71.12}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top_left": "dr5r9ydj2y73", "bottom_right": "drj7teegpus6"}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top_left": "dr", "bottom_right": "dr"}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top": 40.73, "left": -71, "bottom": 40.01, "right": -72}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top": 40.73, "left": 170, "bottom": 40.01, "right": -71}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top": 40.73, "left": 170, "bottom": 40.01, "right": -72}}}'),
    ('{"bool": {"filter": {"geo_distance": {"distance": "200km", "pin.location": {"lat": 40, "lon": -70}}}}}'),
    ('{"geo_distance": {"distance": "200km", "pin.location": {"lat": 91, "lon": -70}}}'),
    ('{"geo_distance": {"distance": "200km", "validation_method": "IGNORE_MALFORMED", "pin.location": {"lat": 91, "lon": -70}}}'),
    ('{"geo_distance": {"distance": "200km", "validation_method": "COERCE", "pin.location": {"lat": 40, "lon": 290}}}'),
    ('{"geo_distance": {"distance": "200km", "nope": {"lat": 40, "lon": -70}}}'),
    ('{"geo_distance": {"distance": "200km", "ignore_unmapped": true, "nope": {"lat": 40, "lon": -70}}}'),
    ('{"geo_distance": {"pin.location": {"lat": 40, "lon": -70}}}'),
    ('{"geo_distance": {"distance": "200lightyears", "pin.location": {"lat": 40, "lon": -70}}}'),
    ('{"geo_distance": {"distance": "200km", "pin.location": {"lat": 40}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top": 40.01, "left": -74.1, "bottom": 40.73, "right": -71.12}}}'),
    ('{"geo_bounding_box": {"pin.location": {"top": 40.73, "left": -74.1, "bottom": 40.01}}}')) v(q),
  search_engine.request('POST', '/my_locations/_search', '{"query": ' || q || '}');
-- wrong field type
SELECT body->'error'->>'type' AS error, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/geo/_search', '{"query": {"geo_distance": {"distance": "1km", "name": "1,1"}}}');
-- distance_feature on a geo_point: boost * pivot / (pivot + distance).  The
-- point 40.12,-71.34 is stored as 40.11999998241663,-71.34000004269183 (Lucene's
-- quantisation); haversine from 40,-70 with r = 6371008.7714: 114818.179 m, so
-- with pivot 100 km the score is 100000 / 214818.179 = 0.46550995 (boost 1), x2 for boost 2.
SELECT q, body->'hits'->'hits'->0->'_score' AS score, body->'error'->>'type' AS error, body->'error'->>'reason' AS reason
  FROM (VALUES
    ('{"distance_feature": {"field": "pin.location", "origin": {"lat": 40, "lon": -70}, "pivot": "100km"}}'),
    ('{"distance_feature": {"field": "pin.location", "origin": [-70, 40], "pivot": "100000m", "boost": 2}}'),
    ('{"distance_feature": {"field": "pin.location", "origin": "40,-70", "pivot": "1h"}}'),
    ('{"distance_feature": {"field": "pin.location", "origin": "40,-70", "pivot": "-1km"}}')) v(q),
  search_engine.request('POST', '/my_locations/_search', '{"query": ' || q || '}');
-- the _geo_distance sort (ES's example: origin [-70, 40], unit km).  By hand
-- (quantised points, haversine as Lucene's sort key with its last 3 bits
-- cleared, r = 6371008.7714): doc 1 (40.12,-71.34) 114.81817937645758 km;
-- doc 2's points (40.715,-74.011) 349.00332871837395 km and (42.36,-71.06)
-- 277.00267581607943 km (avg 313.0030022672267); doc 3 has none (Infinity,
-- last ascending, first descending).  The docs of index geo at 41.12,-71.34:
-- 168.2930769629009 km.
SELECT status FROM search_engine.request('PUT', '/my_locations/_doc/2', '{"pin": {"location": [{"lat": 40.715, "lon": -74.011}, "42.36,-71.06"]}}');
SELECT status FROM search_engine.request('PUT', '/my_locations/_doc/3?refresh=true', '{"pin": {}}');
SELECT s, (SELECT jsonb_agg(jsonb_build_array(h->'_id', h->'sort')) FROM jsonb_array_elements(body->'hits'->'hits') h) AS hits,
       body->'error'->>'type' AS error, body->'error'->>'reason' AS reason
  FROM (VALUES
    ('{"_geo_distance": {"pin.location": [-70, 40], "order": "asc", "unit": "km", "mode": "min", "distance_type": "arc", "ignore_unmapped": true}}'),
    ('{"_geo_distance": {"pin.location": [-70, 40], "order": "desc", "unit": "km"}}'),
    ('{"_geo_distance": {"pin.location": {"lat": 40, "lon": -70}, "mode": "avg", "unit": "km"}}'),
    ('{"_geo_distance": {"pin.location": "40,-70", "mode": "median", "unit": "mi"}}'),
    ('{"_geo_distance": {"pin.location": "drm3btev3e86"}}'),
    ('{"_geo_distance": {"pin.location": "POINT (-70 40)", "distance_type": "plane", "unit": "km"}}'),
    ('{"_geo_distance": {"pin.location": [[-70, 40], [-74, 40.7]], "unit": "km"}}'),
    ('{"_geo_distance": {"pin.location": ["40,-70", {"lat": 40.7, "lon": -74}], "unit": "km", "mode": "max"}}'),
    ('{"_geo_distance": {"nope": [-70, 40], "ignore_unmapped": true}}'),
    ('{"_geo_distance": {"nope": [-70, 40]}}'),
    ('{"_geo_distance": {"pin.location": [-70, 40], "mode": "sum"}}'),
    ('{"_geo_distance": {"pin.location": [-70, 40], "unit": "parsecs"}}'),
    ('{"_geo_distance": {"pin.location": [-70, 95]}}'),
    ('{"_geo_distance": {"unit": "km"}}'),
    ('{"pin.location": "asc"}')) v(s),
  search_engine.request('POST', '/my_locations/_search', '{"_source": false, "sort": [' || s || ', "_doc"]}');
-- the geo sort on several shards, with search_after on its values
SELECT (SELECT jsonb_agg(jsonb_build_array(h->'_id', h->'sort')) FROM jsonb_array_elements(body->'hits'->'hits') h) AS hits
  FROM search_engine.request('POST', '/geo/_search', '{"_source": false, "size": 4, "query": {"exists": {"field": "location"}},
    "sort": [{"_geo_distance": {"location": {"lat": 40, "lon": -70}, "unit": "km"}}, {"name": "asc"}]}');
SELECT (SELECT jsonb_agg(jsonb_build_array(h->'_id', h->'sort')) FROM jsonb_array_elements(body->'hits'->'hits') h) AS hits
  FROM search_engine.request('POST', '/geo/_search', '{"_source": false, "size": 4, "query": {"exists": {"field": "location"}},
    "sort": [{"_geo_distance": {"location": {"lat": 40, "lon": -70}, "unit": "km"}}, {"name": "asc"}], "search_after": [168.2930769629009, "geojson"]}');
-- fields: GeoJSON by default, "wkt" on request, from _source as parsed (not
-- quantised); docvalue_fields: the quantised point as "lat, lon"; _source untouched
SELECT h->>'_id' AS id, h->'fields' AS fields, h->'_source'->'location' AS source, r.body->'error' AS error
  FROM search_engine.request('POST', '/geo/_search', '{"size": 20, "sort": ["name"], "query": {"ids": {"values": ["obj", "geohash", "multi", "wkt", "lenient_range", "nullv"]}},
    "_source": ["location"], "fields": ["location", {"field": "lenient", "format": "wkt"}, "with_null"]}') r
  LEFT JOIN LATERAL jsonb_array_elements(r.body->'hits'->'hits') h ON true;
SELECT h->>'_id' AS id, h->'fields' AS docvalue_fields, r.body->'error' AS error
  FROM search_engine.request('POST', '/geo/_search', '{"size": 20, "sort": ["name"], "query": {"ids": {"values": ["obj", "multi", "nullv"]}},
    "_source": false, "docvalue_fields": ["location", "with_null"]}') r
  LEFT JOIN LATERAL jsonb_array_elements(r.body->'hits'->'hits') h ON true;
-- aggregations: ES's museums examples (two shards: per-shard states, then
-- the coordinator's reduce).  ES documents these very values: rings
-- 3 / 1 / 2; centroid 51.00982965203002, 3.9662131341174245 (count 6);
-- geohash u17 3, u09 2, u15 1; geotile 8/131/84 3, 8/129/88 2, 8/131/85 1.
SELECT status FROM search_engine.request('PUT', '/museums', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"location": {"type": "geo_point"}, "city": {"type": "keyword"}, "name": {"type": "text"}}}}');
SELECT status, body->'errors' AS errors FROM search_engine.request('POST', '/museums/_bulk?refresh=true', $b$
{"index":{"_id":1}}
{"location": "POINT (4.912350 52.374081)", "city": "Amsterdam", "name": "NEMO Science Museum"}
{"index":{"_id":2}}
{"location": "POINT (4.901618 52.369219)", "city": "Amsterdam", "name": "Museum Het Rembrandthuis"}
{"index":{"_id":3}}
{"location": "POINT (4.914722 52.371667)", "city": "Amsterdam", "name": "Nederlands Scheepvaartmuseum"}
{"index":{"_id":4}}
{"location": "POINT (4.405200 51.222900)", "city": "Antwerp", "name": "Letterenhuis"}
{"index":{"_id":5}}
{"location": "POINT (2.336389 48.861111)", "city": "Paris", "name": "Musée du Louvre"}
{"index":{"_id":6}}
{"location": "POINT (2.327000 48.860000)", "city": "Paris", "name": "Musée d'Orsay"}
$b$);
SELECT body->'aggregations' AS aggs FROM search_engine.request('POST', '/museums/_search', '{"size": 0, "aggs": {
  "rings_around_amsterdam": {"geo_distance": {"field": "location", "origin": "POINT (4.894 52.3760)", "ranges": [{"to": 100000}, {"from": 100000, "to": 300000}, {"from": 300000}]}},
  "rings_km": {"geo_distance": {"field": "location", "origin": "52.3760, 4.894", "unit": "km", "keyed": true, "distance_type": "plane", "ranges": [{"to": 100, "key": "near"}, {"from": 100}]}}}}');
SELECT body->'aggregations' AS aggs FROM search_engine.request('POST', '/museums/_search', '{"size": 0, "aggs": {
  "centroid": {"geo_centroid": {"field": "location"}},
  "viewport": {"geo_bounds": {"field": "location", "wrap_longitude": true}},
  "cities": {"terms": {"field": "city"}, "aggs": {"centroid": {"geo_centroid": {"field": "location"}}}}}}');
SELECT body->'aggregations' AS aggs FROM search_engine.request('POST', '/museums/_search', '{"size": 0, "aggs": {
  "large-grid": {"geohash_grid": {"field": "location", "precision": 3}},
  "tiles": {"geotile_grid": {"field": "location", "precision": 8}},
  "tiles_bounded": {"geotile_grid": {"field": "location", "precision": 8, "size": 1, "bounds": {"top_left": "52.4, 4.9", "bottom_right": "52.3, 5.0"}}},
  "hash_with_sub": {"geohash_grid": {"field": "location", "precision": 1}, "aggs": {"b": {"geo_bounds": {"field": "location"}}}}}}');
-- geo_bounds crossing the dateline, and empty
SELECT status FROM search_engine.request('PUT', '/geo_dl2', '{"mappings": {"properties": {"p": {"type": "geo_point"}}}}');
SELECT status FROM search_engine.request('PUT', '/geo_dl2/_doc/1', '{"p": [[179, 10], [-179, -10]]}');
SELECT status FROM search_engine.request('PUT', '/geo_dl2/_doc/2?refresh=true', '{"p": "0,170"}');
SELECT body->'aggregations' AS aggs FROM search_engine.request('POST', '/geo_dl2/_search', '{"size": 0, "aggs": {
  "wrapped": {"geo_bounds": {"field": "p"}}, "unwrapped": {"geo_bounds": {"field": "p", "wrap_longitude": false}},
  "none": {"filter": {"ids": {"values": ["x"]}}, "aggs": {"b": {"geo_bounds": {"field": "p"}}, "c": {"geo_centroid": {"field": "p"}}}}}}');
SELECT status FROM search_engine.request('DELETE', '/geo_dl2');
-- errors: a geo aggregation on another type, and the other way round
SELECT body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM (VALUES ('{"g": {"geohash_grid": {"field": "city"}}}'), ('{"g": {"avg": {"field": "location"}}}'),
               ('{"g": {"geo_distance": {"field": "location", "ranges": [{"to": 1}]}}}'),
               ('{"g": {"geohash_grid": {"field": "location", "precision": 13}}}')) v(a),
  search_engine.request('POST', '/museums/_search', '{"size": 0, "aggs": ' || a || '}');
-- term/terms/range refuse a geo_point (ES's messages); query_string over every
-- field and match leave it out
SELECT q, body->'hits'->'total'->'value' AS hits, body->'error'->>'type' AS error, body->'error'->>'reason' AS reason
  FROM (VALUES ('{"term": {"location": "52.37,4.91"}}'), ('{"terms": {"location": ["52.37,4.91"]}}'),
               ('{"range": {"location": {"gte": 1}}}'), ('{"query_string": {"query": "museum"}}'), ('{"multi_match": {"query": "museum"}}'),
               ('{"match": {"location": "52.37,4.91"}}'), ('{"exists": {"field": "location"}}')) v(q),
  search_engine.request('POST', '/museums/_search', '{"query": ' || q || '}');
-- function_score decays on a geo_point: the arc distance in metres, scale and
-- offset distances.  By hand (quantised points): Antwerp is 132550.7 m from
-- 52.376,4.894, gauss 100km/0.5 gives 0.5^((132550.7/100000)^2) = 0.2958693.
SELECT h->>'_id' AS id, h->'_score' AS score
  FROM search_engine.request('POST', '/museums/_search', '{"size": 3, "_source": false, "query": {"function_score": {"boost_mode": "replace",
    "functions": [{"gauss": {"location": {"origin": "52.376, 4.894", "scale": "100km", "offset": "0km", "decay": 0.5}}}],
    "query": {"terms": {"_id": ["1", "4", "5"]}}}}}') r, jsonb_array_elements(r.body->'hits'->'hits') h;
SELECT body->'error'->'root_cause'->0->>'reason' AS reason FROM search_engine.request('POST', '/museums/_search',
  '{"query": {"function_score": {"functions": [{"exp": {"location": {"scale": "1km"}}}]}}}');
-- a script reading a geo_point is refused (no GeoPoint values in scripts)
SELECT body->'error'->'root_cause'->0->>'reason' AS reason FROM search_engine.request('POST', '/museums/_search',
  '{"query": {"script_score": {"query": {"match_all": {}}, "script": {"source": "doc[''location''].value"}}}}');
-- explain, highlight and _count with geo queries go through the common paths
SELECT body->'hits'->'hits'->0->'_explanation'->>'description' AS explanation,
       body->'hits'->'hits'->0->'_explanation'->'details'->1->>'description' AS geo_clause,
       body->'hits'->'hits'->0->'highlight' AS highlight
  FROM search_engine.request('POST', '/museums/_search', '{"explain": true, "size": 1, "highlight": {"fields": {"*": {}}},
    "query": {"bool": {"must": {"match": {"name": "museum"}}, "filter": {"geo_distance": {"_name": "near", "distance": "2km", "location": [4.894, 52.376]}}}}}');
SELECT body->'count' AS count FROM search_engine.request('POST', '/museums/_count',
  '{"query": {"geo_bounding_box": {"location": {"top_left": "u1", "bottom_right": "u1"}}}}');
-- the FDW: IMPORT FOREIGN SCHEMA makes a geo_point column jsonb (the
-- _source value, filtered here: nothing on it is shipped); another column type is refused
CREATE SERVER geo_se FOREIGN DATA WRAPPER search_engine;
CREATE SCHEMA geo_imp;
IMPORT FOREIGN SCHEMA "museums" FROM SERVER geo_se INTO geo_imp;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'geo_imp.museums'::regclass AND attname IN ('location', 'city') ORDER BY attname;
EXPLAIN (VERBOSE, COSTS OFF) SELECT _id FROM geo_imp.museums WHERE location IS NOT NULL;
SELECT _id, city, location FROM geo_imp.museums WHERE location IS NOT NULL AND city = 'Paris' ORDER BY _id;
CREATE FOREIGN TABLE geo_bad (_id text, location point) SERVER geo_se OPTIONS (index 'museums');
DROP SERVER geo_se CASCADE;
DROP SCHEMA geo_imp;
SELECT status FROM search_engine.request('DELETE', '/museums');
SELECT status FROM search_engine.request('DELETE', '/my_locations');
SELECT status FROM search_engine.request('DELETE', '/geo');
