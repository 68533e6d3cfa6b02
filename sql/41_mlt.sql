-- more_like_this and distance_feature (issue 17).
--
-- more_like_this on a one-shard corpus whose statistics are worked by
-- hand: numDocs = 6; doc frequencies in body: apple 4, banana 3,
-- cherry 2, date 2, fig 2, elder 1, grape 1.  idf = ln(7 / (df + 1)) + 1
-- (ClassicSimilarity): apple 1.33647, banana 1.55962, cherry/date/fig
-- 1.84730, grape 2.25276.  A term's score is tf * idf.
SELECT status FROM search_engine.request('PUT', '/mlt', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"body": {"type": "text"}, "title": {"type": "text"}, "tag": {"type": "keyword"}, "n": {"type": "long"}}}}');
SELECT status, body->'errors' AS errors FROM search_engine.request('POST', '/mlt/_bulk?refresh=true', E'{"index": {"_id": "1"}}\n{"body": "apple banana apple cherry", "title": "apple", "tag": "red", "n": 1}\n{"index": {"_id": "2"}}\n{"body": "apple banana", "tag": "red"}\n{"index": {"_id": "3"}}\n{"body": "banana cherry date", "tag": "blue"}\n{"index": {"_id": "4"}}\n{"body": "apple date elder"}\n{"index": {"_id": "5"}}\n{"body": "fig grape"}\n{"index": {"_id": "6"}}\n{"body": "apple apple apple fig"}\n');

-- like text "apple apple banana banana banana cherry cherry date fig":
-- banana 3 * 1.55962 = 4.679, cherry 2 * 1.84730 = 3.695, apple 2 *
-- 1.33647 = 2.673, date and fig 1.847: the best three are banana, cherry,
-- apple.  The bound query shows them (30% of 3 clauses is 0 required).
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry date fig", "min_term_freq": 1, "min_doc_freq": 1, "max_query_terms": 3}}}');
-- its hits and scores are those of that bool of term queries
SELECT jsonb_path_query_array(m.body, '$.hits.hits[*]') = jsonb_path_query_array(b.body, '$.hits.hits[*]') AS same_as_bool,
       jsonb_path_query_array(m.body, '$.hits.hits[*]._id') AS ids
  FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry date fig", "min_term_freq": 1, "min_doc_freq": 1, "max_query_terms": 3}}}') m,
       search_engine.request('POST', '/mlt/_search', '{"query": {"bool": {"should": [{"term": {"body": "apple"}}, {"term": {"body": "cherry"}}, {"term": {"body": "banana"}}]}}}') b;
-- ES's defaults (min_term_freq 2, min_doc_freq 5): no term of this corpus
-- is in 5 docs, so nothing is selected and nothing matches
SELECT body->'hits'->'total'->'value' AS total FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry"}}}');
-- min_term_freq 2 keeps apple, banana, cherry (date and fig once)
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry date fig", "min_doc_freq": 1}}}');
-- max_doc_freq 3 drops apple (in 4 docs); max_query_terms 2 keeps banana, cherry
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry date fig", "min_term_freq": 1, "min_doc_freq": 1, "max_doc_freq": 3, "max_query_terms": 2}}}');
-- stop_words, min_word_length (apple has 5 letters) and unlike remove words
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry", "min_term_freq": 1, "min_doc_freq": 1, "stop_words": ["banana"]}}}');
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry", "min_term_freq": 1, "min_doc_freq": 1, "min_word_length": 6}}}');
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry", "unlike": "cherry", "min_term_freq": 1, "min_doc_freq": 1}}}');
-- an unliked document's words (doc 3: banana cherry date) are skipped
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry", "unlike": [{"_index": "mlt", "_id": "3"}], "min_term_freq": 1, "min_doc_freq": 1}}}');
-- boost_terms 1: each term boosted by its score over the lowest kept one
-- (Lucene's MoreLikeThis): apple 1, cherry 3.6946 / 2.67294 = 1.38222,
-- banana 4.67885 / 2.67294 = 1.75045 (doc 1 has all three: the boosts
-- other than 1 in its explanation); minimum_should_match 2 of 3 keeps docs 1, 2, 3
SELECT (SELECT jsonb_agg(DISTINCT round(b::numeric, 4)) FROM jsonb_array_elements(jsonb_path_query_array(body, '$.hits.hits[0]._explanation.** ? (@.description == "boost").value')) b) AS boosts,
       body->'hits'->'hits'->0->'_id' AS first
  FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry", "min_term_freq": 1, "min_doc_freq": 1, "boost_terms": 1}}, "explain": true, "size": 1}');
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"], "like": "apple apple banana banana banana cherry cherry", "min_term_freq": 1, "min_doc_freq": 1, "minimum_should_match": 2}}, "sort": ["_doc"]}');
-- "analyzer" analyzes the texts: whitespace keeps "Apple" (no such
-- term), standard lowercases it
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "Apple Apple", "min_doc_freq": 1, "analyzer": "whitespace"}}}');
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": "Apple Apple", "min_doc_freq": 1}}}');
-- two fields: a word goes to the field where it is in most docs
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["title", "body"], "like": "apple", "min_term_freq": 1, "min_doc_freq": 1}}}');

-- a liked document (doc 1: apple 2, banana 1, cherry 1) is excluded
-- unless include is true
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"_index": "mlt", "_id": "1"}], "min_term_freq": 1, "min_doc_freq": 1}}}');
SELECT jsonb_path_query_array(m.body, '$.hits.hits[*]') = jsonb_path_query_array(b.body, '$.hits.hits[*]') AS same_as_bool
  FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"_index": "mlt", "_id": "1"}], "min_term_freq": 1, "min_doc_freq": 1, "include": true}}}') m,
       search_engine.request('POST', '/mlt/_search', '{"query": {"bool": {"should": [{"term": {"body": "banana"}}, {"term": {"body": "cherry"}}, {"term": {"body": "apple"}}]}}}') b;
SELECT body->'count' AS count FROM search_engine.request('POST', '/mlt/_count', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"_index": "mlt", "_id": "1"}], "min_term_freq": 1, "min_doc_freq": 1}}}');
-- _validate/query and _explain fetch liked documents too
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"_id": "1"}], "min_term_freq": 1, "min_doc_freq": 1}}}');
SELECT e.body->'matched' AS matched, e.body->'explanation'->'value' = s.body->'hits'->'hits'->0->'_score' AS value_is_score
  FROM search_engine.request('POST', '/mlt/_explain/2', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"_id": "1"}], "min_term_freq": 1, "min_doc_freq": 1}}}') e,
       search_engine.request('POST', '/mlt/_search', '{"query": {"bool": {"must": {"more_like_this": {"fields": ["body"], "like": [{"_id": "1"}], "min_term_freq": 1, "min_doc_freq": 1}}, "filter": {"ids": {"values": ["2"]}}}}}') s;
-- an item's fields narrow the query's (doc 1's title "apple" alone;
-- apple then goes to body, where it is in more docs), its
-- per_field_analyzer analyzes its values (whitespace: "Fig" is no term)
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body", "title"], "like": [{"_id": "1", "fields": ["title"]}], "min_term_freq": 1, "min_doc_freq": 1}}}');
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"doc": {"body": "Fig Fig"}, "per_field_analyzer": {"body": "whitespace"}}], "min_doc_freq": 1}}}');
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"doc": {"body": "Fig Fig"}}], "min_doc_freq": 1}}}');
-- a missing liked document contributes nothing; an inline doc's values
-- are analyzed with the field's analyzer (fig 2, grape 1)
SELECT body->'hits'->'total'->'value' AS total FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"_index": "mlt", "_id": "nope"}], "min_term_freq": 1, "min_doc_freq": 1}}}');
SELECT body->'explanations'->0->>'explanation' AS query FROM search_engine.request('POST', '/mlt/_validate/query?explain=true', '{"query": {"more_like_this": {"fields": ["body"], "like": [{"doc": {"body": "Fig fig grape"}}, "apple"], "min_term_freq": 1, "min_doc_freq": 1}}}');
-- keyword fields take whole values.  The default fields are every text
-- and keyword field (body, tag, title); a document's words add up over
-- them: doc 1 has apple 2 + 1 (title) = 3 * 1.33647 = 4.009, above red
-- (tag, df 2) and cherry 1.847, banana 1.560: apple alone, on body (df
-- 4 there, 1 in title); an item without _index takes the search's index
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["tag"], "like": [{"doc": {"tag": "red"}}], "min_term_freq": 1, "min_doc_freq": 1}}, "sort": ["_doc"]}');
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"like": [{"_id": "1"}], "min_term_freq": 1, "min_doc_freq": 1, "max_query_terms": 1}}, "sort": ["_doc"]}');
-- ES's refusals
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["body"]}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": ["n"], "like": "x"}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"fields": [], "like": "x"}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/mlt/_search', '{"query": {"more_like_this": {"like": "x", "likes": 1}}}');
SELECT status FROM search_engine.request('DELETE', '/mlt');

-- distance_feature on a date field: boost * pivot / (pivot + distance),
-- checked against the formula in SQL (float4, as Lucene scores)
SELECT status FROM search_engine.request('PUT', '/df', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"d": {"type": "date"}, "n": {"type": "long"}, "t": {"type": "text"}}}}');
CREATE TABLE df_rows (id text, d timestamptz);
INSERT INTO df_rows VALUES ('a', '2020-01-10 00:00Z'), ('b', '2020-01-08 00:00Z'), ('c', '2020-01-16 00:00Z'), ('e', '2020-01-11 12:00Z'), ('f', NULL);
SELECT status, body->'errors' AS errors FROM search_engine.request('POST', '/df/_bulk?refresh=true',
  (SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n%s\n', id, jsonb_strip_nulls(jsonb_build_object('d', (extract(epoch FROM d) * 1000)::bigint, 'n', 1, 't', 'x'))), '' ORDER BY id) FROM df_rows));
SELECT h->>'_id' AS id, h->'_score' AS score,
       (h->>'_score')::float4 = (2 * 172800000.0 / (172800000.0 + abs(extract(epoch FROM r.d - '2020-01-10 00:00Z') * 1000)))::float4 AS formula
  FROM search_engine.request('POST', '/df/_search', '{"query": {"distance_feature": {"field": "d", "origin": "2020-01-10", "pivot": "2d", "boost": 2}}}') s,
       jsonb_array_elements(s.body->'hits'->'hits') h JOIN df_rows r ON r.id = h->>'_id';
-- in a bool: added to the other clauses' scores; origin in date math
SELECT jsonb_path_query_array(body, '$.hits.hits[*]._id') AS ids, body->'hits'->'hits'->0->'_score' AS top
  FROM search_engine.request('POST', '/df/_search', '{"query": {"bool": {"must": {"match": {"t": "x"}}, "should": {"distance_feature": {"field": "d", "origin": "2020-01-01||+15d", "pivot": "12h"}}}}}');
SELECT bool_and((h->>'_score')::float8 > 0 AND (h->>'_score')::float8 < 1) AS between_0_and_1,
       jsonb_agg(h->>'_id' ORDER BY o) AS ids
  FROM search_engine.request('POST', '/df/_search', '{"query": {"distance_feature": {"field": "d", "origin": "now-1h", "pivot": "7d"}}}') s,
       jsonb_array_elements(s.body->'hits'->'hits') WITH ORDINALITY AS t(h, o);
-- pivot in any of ES's time units: 129600000000micros = 1.5d, doc a is
-- 1.5d from origin: 1.5 / (1.5 + 1.5) = 0.5
SELECT h->>'_id' AS id, h->'_score' AS score
  FROM search_engine.request('POST', '/df/_search', '{"query": {"bool": {"must": {"distance_feature": {"field": "d", "origin": "2020-01-11T12:00:00Z", "pivot": "129600000000micros"}}, "filter": {"ids": {"values": ["a"]}}}}}') s,
       jsonb_array_elements(s.body->'hits'->'hits') h;
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/df/_search', '{"query": {"distance_feature": {"field": "n", "origin": 1, "pivot": "1d"}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/df/_search', '{"query": {"distance_feature": {"field": "d", "origin": "now"}}}');
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason FROM search_engine.request('POST', '/df/_search', '{"query": {"distance_feature": {"field": "d", "origin": "now", "pivot": "soon"}}}');
DROP TABLE df_rows;
SELECT status FROM search_engine.request('DELETE', '/df');
