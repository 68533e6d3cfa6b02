-- Score scripts (issue 17): the script_score query and function_score's
-- script_score function over the Painless subset, reading doc values
-- (doc['f'].value/.size()/.empty, [i]), _score, params and Math.*, with
-- ES's score functions; scores checked against the same formula in SQL.
SELECT search_engine.create_index('scr', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"title": {"type": "text"}, "tag": {"type": "keyword"}, "likes": {"type": "integer"}, "price": {"type": "double"}, "on": {"type": "boolean"}, "d": {"type": "date"}, "nodv": {"type": "long", "doc_values": false}}}}') IS NOT NULL AS created;
CREATE TABLE scr_src (id int, likes int, price float8, tag text[], d timestamptz, on_ boolean);
INSERT INTO scr_src VALUES
  (1, 10, 1.5, '{a}', '2020-01-01T00:00:00Z', true),
  (2, 200, 20.25, '{b,c}', '2020-01-02T12:00:00Z', false),
  (3, 0, NULL, NULL, NULL, NULL),
  (4, 7, 3.0, '{a,d,e}', '2019-12-30T06:00:00Z', true),
  (5, 1000, 0.5, '{z}', '2020-01-05T00:00:00Z', false);
SELECT (search_engine.bulk(string_agg(
          '{"index": {"_index": "scr", "_id": "' || id || '"}}' || chr(10) ||
          jsonb_strip_nulls(jsonb_build_object('title', 'brown item ' || id, 'likes', likes, 'price', price,
            'tag', to_jsonb(tag), 'd', to_char(d AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'on', on_))::text,
          chr(10) ORDER BY id), refresh => 'true')::jsonb->>'errors') AS errors
  FROM scr_src;

-- id:score of every hit, best first; or the error
CREATE FUNCTION scr(body jsonb) RETURNS text LANGUAGE sql AS
$$ SELECT r.status || ' ' || coalesce(
          (SELECT string_agg((h->>'_id') || ':' || (h->>'_score'), ' ' ORDER BY (h->>'_score')::float8 DESC, h->>'_id')
             FROM jsonb_array_elements(r.body->'hits'->'hits') h),
          (r.body->'error'->>'type') || ': ' || (r.body->'error'->>'reason'), 'none')
     FROM search_engine.request('POST', '/scr/_search', body::text) r $$;
-- the hits' scores as a map id -> score
CREATE FUNCTION scr_scores(body jsonb) RETURNS TABLE (id int, score float8) LANGUAGE sql AS
$$ SELECT (h->>'_id')::int, (h->>'_score')::float8
     FROM search_engine.request('POST', '/scr/_search', body::text) r,
          jsonb_array_elements(r.body->'hits'->'hits') h $$;

-- ---- script_score query: the script's value is the score ------------------
-- equal to the formula in SQL over the same values (scores are floats)
SELECT count(*) AS docs,
       bool_and(abs(s.score - (ln(2 + t.likes) * 1.5)::float4) < 1e-5) AS equal_to_sql
  FROM scr_scores('{"size": 10, "query": {"script_score": {"query": {"match_all": {}}, "script": {"source": "Math.log(2 + doc[''likes''].value) * params.f", "params": {"f": 1.5}}}}}') s
  JOIN scr_src t USING (id);
SELECT count(*) AS docs,
       bool_and(abs(s.score - (coalesce(cardinality(t.tag), 0) + coalesce(t.price, 0) + sqrt(t.likes) + power(t.likes, 2) / 1000.0 + greatest(abs(t.likes - 100), 1))::float4)
                < 1e-3) AS equal_to_sql
  FROM scr_scores('{"size": 10, "query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''tag''].size() + (doc[''price''].empty ? 0 : doc[''price''].value) + Math.sqrt(doc[''likes''].value) + Math.pow(doc[''likes''].value, 2) / 1000.0 + Math.max(Math.abs(doc[''likes''].value - 100), 1)"}}}') s
  JOIN scr_src t USING (id);
-- _score is the inner query's score; params by name and by brace access
SELECT scr('{"query": {"script_score": {"query": {"term": {"tag": "a"}}, "script": {"source": "_score * params[''k''] + params.add", "params": {"k": 3, "add": 0.5}}}}}');
-- min_score drops docs below it (after boost), boost multiplies
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''likes''].value", "min_score": 10, "boost": 2}}}');
-- multi-valued keyword fields: values in order, by index and get()
SELECT scr('{"query": {"script_score": {"query": {"exists": {"field": "tag"}}, "script": "doc[''tag''][doc[''tag''].size() - 1] == ''e'' ? 10 : doc[''tag''].get(0).length()"}}}');
-- booleans, dates (ZonedDateTime: getMillis, toString) and typed locals
SELECT scr('{"query": {"script_score": {"query": {"exists": {"field": "d"}}, "script": "long ms = doc[''d''].value.getMillis(); double days = ms / 86400000.0 - 18200; return doc[''on''].value ? days : days + 100;"}}}');
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["1"]}}, "script": "doc[''d''].value.toString().length()"}}}');
-- ES's score functions: saturation, sigmoid, decayNumeric*, decayDate*
SELECT count(*) AS docs,
       bool_and(abs(s.score - (t.likes::float8 / (50 + t.likes) + power(t.likes, 2) / (power(20, 2) + power(t.likes, 2)))::float4) < 1e-5) AS equal_to_sql
  FROM scr_scores('{"size": 10, "query": {"script_score": {"query": {"match_all": {}}, "script": "saturation(doc[''likes''].value, 50) + sigmoid(doc[''likes''].value, 20, 2)"}}}') s
  JOIN scr_src t USING (id);
SELECT count(*) AS docs,
       bool_and(abs(s.score - (
         greatest(0, (20 / (1 - 0.5) - greatest(0, abs(t.likes - 10) - 5)) / (20 / (1 - 0.5)))
         + exp(ln(0.5::float8) / 20 * greatest(0, abs(t.likes - 10) - 5))
         + exp(greatest(-700, -power(greatest(0, abs(t.likes - 10) - 5), 2)::float8 / (2 * (-(20 ^ 2) / (2 * ln(0.5::float8))))))
       )::float4) < 1e-5) AS equal_to_sql
  FROM scr_scores('{"size": 10, "query": {"script_score": {"query": {"match_all": {}}, "script": "double v = doc[''likes''].value; decayNumericLinear(10, 20, 5, 0.5, v) + decayNumericExp(10, 20, 5, 0.5, v) + decayNumericGauss(10, 20, 5, 0.5, v)"}}}') s
  JOIN scr_src t USING (id);
SELECT count(*) AS docs,
       bool_and(abs(s.score - (
         exp(greatest(-700, -power(greatest(0, abs(extract(epoch FROM t.d - '2020-01-01T00:00:00Z')::float8 * 1000) - 3600000), 2)
             / (2 * (-(86400000.0::float8 ^ 2) / (2 * ln(0.25::float8))))))
       )::float4) < 1e-5) AS equal_to_sql
  FROM scr_scores('{"size": 10, "query": {"script_score": {"query": {"exists": {"field": "d"}}, "script": {"source": "decayDateGauss(params.origin, ''1d'', ''1h'', 0.25, doc[''d''].value)", "params": {"origin": "2020-01-01T00:00:00Z"}}}}}') s
  JOIN scr_src t USING (id);
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["1", "2"]}}, "script": "decayDateLinear(''2020-01-01'', ''2d'', ''0'', 0.5, doc[''d''].value) + decayDateExp(''2020-01-02T12:00:00+00:00'', ''12h'', ''0'', 0.5, doc[''d''].value)"}}}');

-- ---- function_score's script_score: combined with the query's score ---------
SELECT scr('{"query": {"function_score": {"query": {"term": {"tag": "a"}}, "script_score": {"script": "doc[''likes''].value"}}}}');
SELECT scr('{"query": {"function_score": {"query": {"match_all": {}}, "functions": [{"filter": {"term": {"on": true}}, "script_score": {"script": {"source": "params.w * _score", "params": {"w": 4}}}}, {"weight": 2}], "score_mode": "sum", "boost_mode": "replace"}}}');

-- ---- ES's errors --------------------------------------------------------------
-- negative (or NaN) scores are refused
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["3"]}}, "script": "doc[''likes''].value - 1"}}}');
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["3"]}}, "script": "Math.sqrt(-1)"}}}');
SELECT scr('{"query": {"function_score": {"query": {"ids": {"values": ["3"]}}, "script_score": {"script": "-2"}, "boost_mode": "replace"}}}');
-- a missing value's .value; .size()/.empty test for it first
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''price''].value"}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''price''].size() == 0 ? 0 : doc[''price''][0]"}}}');
-- text without fielddata, doc_values: false, an unmapped field: only when read
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''title''].value.length()"}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''nodv''].size()"}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''nope''].value"}}}');
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["1"]}}, "script": "doc[''likes''].value > 5 ? 1 : doc[''nope''].value"}}}');
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["1"]}}, "script": "doc[''tag''][3]"}}}');
-- compile errors at parse time; ctx is not in scope; a string is not a score
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''likes''].value +"}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "ctx._source.likes"}}}');
-- (a computed doc[...] name is read since session 14: 48_scripts2)
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "def f = ''likes''; doc[f].value"}}}');
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["1"]}}, "script": "doc[''tag''].value"}}}');
-- request shape errors
SELECT scr('{"query": {"script_score": {"script": "1"}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": {"id": "stored"}}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": {"source": "1", "lang": "expression"}}}}');
SELECT scr('{"query": {"script_score": {"query": {"match_all": {}}, "script": "1", "bogus": 1}}}');
-- limits as update scripts have them: the statement budget per document
SELECT scr('{"query": {"script_score": {"query": {"ids": {"values": ["1"]}}, "script": "int i = 0; while (true) { i++ } return i;"}}}');

-- ---- explain: the script and the _score it read -----------------------------
SELECT h->'_explanation'->>'description' AS description,
       (h->'_explanation'->>'value')::float8 = (h->>'_score')::float8 AS is_score,
       h->'_explanation'->'details'->0->>'description' AS detail,
       abs((h->'_explanation'->'details'->0->>'value')::float8 * 2 - (h->>'_score')::float8) < 1e-5 AS twice_inner
  FROM search_engine.request('POST', '/scr/_search', '{"query": {"script_score": {"query": {"term": {"tag": "z"}}, "script": "_score * 2"}}, "explain": true}') r,
       jsonb_array_elements(r.body->'hits'->'hits') h;

-- _count and filter context take the query's docs (min_score filters there too)
SELECT (search_engine.request('POST', '/scr/_count', '{"query": {"script_score": {"query": {"match_all": {}}, "script": "doc[''likes''].value", "min_score": 10}}}')).body->>'count' AS count;

SELECT search_engine.delete_index('scr') IS NOT NULL AS deleted;
DROP TABLE scr_src;
