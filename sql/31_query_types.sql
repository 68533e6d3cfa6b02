-- Query types of issue 17: query_string and simple_query_string (also as
-- the URL's q on _search, _count and _delete_by_query), fuzzy and
-- fuzziness in match/multi_match, wildcard; ES's request and response shapes.
SELECT search_engine.create_index('qt', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"title": {"type": "text"}, "body": {"type": "text"}, "tag": {"type": "keyword"}, "n": {"type": "integer"}}}}') IS NOT NULL AS created;
SELECT (search_engine.bulk($$
{"index": {"_index": "qt", "_id": "1"}}
{"title": "Quick brown fox", "body": "the quick brown fox jumps over the lazy dog", "tag": "Animal", "n": 1}
{"index": {"_index": "qt", "_id": "2"}}
{"title": "Lazy dogs", "body": "dogs are lazy and sleep all day", "tag": "animal", "n": 2}
{"index": {"_index": "qt", "_id": "3"}}
{"title": "Brown bread", "body": "a recipe for brown bread with quinoa", "tag": "food", "n": 3}
{"index": {"_index": "qt", "_id": "4"}}
{"title": "Elasticsearch", "body": "search engines rank documents with bm25", "tag": "tech", "n": 4}
{"index": {"_index": "qt", "_id": "5"}}
{"title": "Postgres", "body": "postgresql is a relational database", "tag": "tech", "n": 5}
$$, refresh => 'true')::jsonb->>'errors') AS errors;

-- ids of the hits in _id order, and the total
CREATE FUNCTION qt(q jsonb) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || ' ' || coalesce(
          (SELECT string_agg(h->>'_id', ',' ORDER BY (h->>'_id')::int)
             FROM jsonb_array_elements(r.body->'hits'->'hits') h) || ' total=' || (r.body->'hits'->'total'->>'value'),
          (r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason'), 'none')
     FROM search_engine.request('POST', '/qt/_search', jsonb_build_object('query', q)::text) r $$;

-- ---- query_string: Lucene's syntax --------------------------------------
SELECT q, qt(jsonb_build_object('query_string', jsonb_build_object('query', q)))
  FROM (VALUES ('quick'), ('brown AND lazy'), ('brown OR lazy'), ('brown -lazy'), ('+brown +bread'),
               ('NOT brown'), ('title:(brown OR lazy) AND NOT tag:food'), ('"lazy dog"'), ('"dog lazy"~2'),
               ('qui*'), ('Qu?ck'), ('quikc~'), ('quick~0'), ('n:[2 TO 4]'), ('n:{2 TO 4]'), ('n:>=4'),
               ('_exists_:tag'), ('tag:animal'), ('tag:/[a-z]+/'), ('title:elasticsearch^3 OR postgres'),
               ('*:*'), ('')) AS v(q);
-- default_operator, default_field and fields with boosts
SELECT qt('{"query_string": {"query": "brown lazy", "default_operator": "AND"}}');
SELECT qt('{"query_string": {"query": "brown", "default_field": "title"}}');
SELECT qt('{"query_string": {"query": "brown dog", "fields": ["title^2", "body"], "minimum_should_match": 2}}');
-- the shape of a hit's score: fields combine as dis_max (best_fields)
SELECT (r.body->'hits'->'hits'->0->>'_id') AS top,
       (r.body->'hits'->'hits'->0->>'_score')::float > 0 AS scored
  FROM search_engine.request('POST', '/qt/_search', '{"query": {"query_string": {"query": "bread", "fields": ["title^5", "body"]}}}') r;
-- syntax errors are ES's query_shard_exception
SELECT qt('{"query_string": {"query": "title:(brown"}}');
SELECT qt('{"query_string": {"query": "*own", "allow_leading_wildcard": false}}');
SELECT qt('{"query_string": {"query": "n:[1 TO"}}');
SELECT qt('{"query_string": {"default_field": "body"}}');
SELECT qt('{"query_string": {"query": "x", "bogus": 1}}');

-- ---- simple_query_string: never a syntax error ----------------------------
SELECT q, qt(jsonb_build_object('simple_query_string', jsonb_build_object('query', q, 'fields', '["title", "body"]'::jsonb)))
  FROM (VALUES ('brown +lazy'), ('brown | database'), ('brown -lazy'), ('"lazy dog"'), ('qui*'), ('quikc~1'),
               ('(brown | lazy) +dog'), ('((brown'), ('"unterminated quote')) AS v(q);
SELECT qt('{"simple_query_string": {"query": "brown -lazy", "default_operator": "and"}}');
SELECT qt('{"simple_query_string": {"query": "qui*", "flags": "NONE"}}');
SELECT qt('{"simple_query_string": {"query": "qui*", "flags": "OR|PREFIX"}}');
SELECT qt('{"simple_query_string": {"query": "x", "flags": "BOGUS"}}');

-- ---- q= in the URL: a query_string, with df and default_operator ------------------
SELECT status, jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids
  FROM search_engine.request('GET', '/qt/_search?q=title:brown%20AND%20tag:food');
SELECT status, body->'hits'->'total'->'value' AS total
  FROM search_engine.request('GET', '/qt/_search?q=brown%20lazy&default_operator=AND&df=body');
SELECT status, body->'count' AS count FROM search_engine.request('GET', '/qt/_count?q=tag:tech%20OR%20n:1');
SELECT status, body->'error'->>'type' AS type FROM search_engine.request('GET', '/qt/_count?q=title:(x');

-- ---- fuzzy and fuzziness ---------------------------------------------------
SELECT qt('{"fuzzy": {"body": "quikc"}}');
SELECT qt('{"fuzzy": {"body": {"value": "quikc", "transpositions": false}}}');
SELECT qt('{"fuzzy": {"body": {"value": "dgo", "fuzziness": 1}}}');
SELECT qt('{"fuzzy": {"body": {"value": "brwn", "fuzziness": "AUTO", "prefix_length": 1, "max_expansions": 10}}}');
SELECT qt('{"fuzzy": {"tag": {"value": "animl", "fuzziness": 2}}}');
SELECT qt('{"fuzzy": {"n": "1"}}');
SELECT qt('{"fuzzy": {"body": {"value": "x", "fuzziness": 3}}}');
SELECT qt('{"match": {"body": {"query": "quikc brwn fxo", "fuzziness": "AUTO", "operator": "and"}}}');
SELECT qt('{"match": {"body": {"query": "relatonal databse", "fuzziness": 2, "prefix_length": 2}}}');
SELECT qt('{"multi_match": {"query": "elastcsearch", "fields": ["title", "body"], "fuzziness": "AUTO"}}');
-- the exact term outscores a one-edit neighbour (similarity boost)
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids
  FROM search_engine.request('POST', '/qt/_search', '{"query": {"fuzzy": {"body": {"value": "dog", "fuzziness": 1}}}}');

-- ---- wildcard ------------------------------------------------------------
SELECT qt('{"wildcard": {"body": "qu*k"}}');
SELECT qt('{"wildcard": {"body": {"value": "d?g*", "boost": 2}}}');
SELECT qt('{"wildcard": {"tag": {"wildcard": "ANIM*"}}}');
SELECT qt('{"wildcard": {"tag": {"value": "ANIM*", "case_insensitive": true}}}');
SELECT qt('{"wildcard": {"n": "1*"}}');

-- ---- match_bool_prefix, match_phrase_prefix, multi_match types ----------------
SELECT qt('{"match_bool_prefix": {"body": "lazy d"}}');
SELECT qt('{"match_bool_prefix": {"body": {"query": "quick bro", "operator": "and"}}}');
SELECT qt('{"match_phrase_prefix": {"body": "lazy d"}}');
SELECT qt('{"match_phrase_prefix": {"body": {"query": "brown br", "max_expansions": 2}}}');
SELECT qt('{"match_phrase_prefix": {"title": "postg"}}');
SELECT qt('{"multi_match": {"query": "brown bre", "type": "phrase_prefix", "fields": ["title", "body"]}}');
SELECT qt('{"multi_match": {"query": "lazy do", "type": "bool_prefix", "fields": ["title", "body"], "operator": "and"}}');
SELECT qt('{"multi_match": {"query": "brown fox", "type": "cross_fields", "fields": ["title", "body"], "operator": "and"}}');
SELECT qt('{"multi_match": {"query": "quick bread", "type": "cross_fields", "fields": ["title^2", "body"], "minimum_should_match": "100%"}}');
SELECT qt('{"multi_match": {"query": "x", "type": "phrase", "fuzziness": 1}}');

-- ---- function_score -------------------------------------------------------
SELECT jsonb_path_query_array(r.body, '$.hits.hits[*]._id') AS ids,
       jsonb_path_query_array(r.body, '$.hits.hits[*]._score') AS scores
  FROM search_engine.request('POST', '/qt/_search', '{"query": {"function_score": {"query": {"match_all": {}}, "field_value_factor": {"field": "n", "factor": 2, "modifier": "square"}, "boost_mode": "replace"}}}') r;
SELECT jsonb_path_query_array(r.body, '$.hits.hits[*]._id') AS ids,
       jsonb_path_query_array(r.body, '$.hits.hits[*]._score') AS scores
  FROM search_engine.request('POST', '/qt/_search', '{"query": {"function_score": {"functions": [{"filter": {"term": {"tag": "tech"}}, "weight": 4}, {"linear": {"n": {"origin": 3, "scale": 2}}}], "score_mode": "multiply", "boost_mode": "replace", "max_boost": 3}}}') r;
SELECT jsonb_path_query_array(r.body, '$.hits.hits[*]._id') AS ids
  FROM search_engine.request('POST', '/qt/_search', '{"query": {"function_score": {"query": {"match": {"body": "brown"}}, "gauss": {"n": {"origin": 5, "scale": 1}}, "min_score": 0.0001}}}') r;
-- random_score with a seed and field is repeatable
SELECT a.body->'hits'->'hits' = b.body->'hits'->'hits' AS repeatable
  FROM search_engine.request('POST', '/qt/_search', '{"query": {"function_score": {"random_score": {"seed": 42, "field": "n"}}}}') a,
       search_engine.request('POST', '/qt/_search', '{"query": {"function_score": {"random_score": {"seed": 42, "field": "n"}}}}') b;
SELECT qt('{"function_score": {"script_score": {"script": {"source": "1"}}}}');
SELECT qt('{"function_score": {"field_value_factor": {"field": "n", "modifier": "cube"}}}');

-- ---- terms_set -------------------------------------------------------------
SELECT search_engine.create_index('ts', '{"settings": {"number_of_shards": 1}, "mappings": {"properties": {"langs": {"type": "keyword"}, "need": {"type": "long"}}}}') IS NOT NULL AS created;
SELECT (search_engine.bulk($$
{"index": {"_index": "ts", "_id": "1"}}
{"langs": ["c", "java"], "need": 2}
{"index": {"_index": "ts", "_id": "2"}}
{"langs": ["c", "php"], "need": 1}
{"index": {"_index": "ts", "_id": "3"}}
{"langs": ["java", "php", "go"], "need": 3}
$$, refresh => 'true')::jsonb->>'errors') AS errors;
SELECT v AS terms_set, jsonb_path_query_array(r.body, '$.hits.hits[*]._id') AS ids
  FROM (VALUES ('{"terms": ["c", "java", "go"], "minimum_should_match_field": "need"}'),
               ('{"terms": ["java", "php"], "minimum_should_match": 2}'),
               ('{"terms": ["c", "php"], "minimum_should_match_script": {"source": "params.num_terms"}}')) AS t(v),
       LATERAL search_engine.request('POST', '/ts/_search', '{"query": {"terms_set": {"langs": ' || v || '}}, "sort": ["need"]}') r;
SELECT search_engine.delete_index('ts')->'acknowledged';

-- ---- _delete_by_query with q ------------------------------------------------
SELECT status, body->'deleted' AS deleted
  FROM search_engine.request('POST', '/qt/_delete_by_query?q=tag:food&refresh=true');
SELECT qt('{"match_all": {}}');
SELECT search_engine.delete_index('qt')->'acknowledged';
DROP FUNCTION qt(jsonb);
