-- BM25 scores equal Lucene's BM25Similarity, computed independently here:
-- idf = ln(1 + (N - n + 0.5) / (n + 0.5)), tf part freq / (freq + k1 *
-- (1 - b + b * dl / avgdl)) with dl decoded from the one-byte SmallFloat
-- norm (lossy above 24 terms), k1 = 1.2, b = 0.75.
BEGIN;
SELECT plan(6);

CREATE TEMP TABLE corpus AS
  SELECT i AS id,
         (SELECT string_agg((ARRAY['alpha','beta','gamma','delta','epsilon','zeta','eta','theta'])[1 + floor(random() * 8)::int], ' ')
            FROM generate_series(1, 1 + (i * 37) % 90)) AS body
  FROM (SELECT setseed(0.42)) s, generate_series(1, 300) i;

SELECT ok((search_engine.create_index('bm25', '{"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"body": {"type": "text"}}}}')->>'acknowledged')::bool, 'index created');
SELECT ok(NOT (search_engine.bulk(
  (SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n%s', id, jsonb_build_object('body', body)), E'\n') FROM corpus),
  'bm25', refresh => 'true')->>'errors')::bool, 'corpus indexed');

-- Lucene SmallFloat.intToByte4 / byte4ToInt, written from the definition
CREATE FUNCTION pg_temp.int_to_byte4(i int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v bigint; nbits int; shift int;
BEGIN
  IF i < 24 THEN RETURN i; END IF;
  v := i - 24;
  IF v < 8 THEN RETURN 24 + v; END IF;   -- fewer than 4 significant bits: exact
  nbits := floor(log(2, v))::int + 1;
  shift := nbits - 4;
  RETURN 24 + (((v >> shift) & 7) | ((shift + 1) << 3));
END $$;
CREATE FUNCTION pg_temp.byte4_to_int(b int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE bits int; shift int;
BEGIN
  IF b < 24 THEN RETURN b; END IF;
  bits := (b - 24) & 7;
  shift := ((b - 24) >> 3) - 1;
  IF shift = -1 THEN RETURN 24 + bits; END IF;
  RETURN 24 + ((bits | 8) << shift);
END $$;

CREATE TEMP TABLE toks AS
  SELECT id, t.tok FROM corpus, regexp_split_to_table(body, ' ') AS t(tok);
CREATE TEMP TABLE stats AS
  SELECT count(DISTINCT id)::float8 AS n_docs,
         (count(*)::float8 / count(DISTINCT id))::float4::float8 AS avgdl
  FROM toks;

CREATE FUNCTION pg_temp.expected(term text) RETURNS TABLE(id int, score float8) LANGUAGE sql AS $$
  WITH df AS (SELECT count(DISTINCT id)::float8 AS n FROM toks WHERE tok = term),
       tf AS (SELECT id, count(*) FILTER (WHERE tok = term)::float8 AS freq, count(*)::int AS len
              FROM toks GROUP BY id)
  SELECT tf.id,
         ln(1 + (s.n_docs - df.n + 0.5) / (df.n + 0.5))::float4::float8
           * tf.freq / (tf.freq + 1.2 * (1 - 0.75 + 0.75 * pg_temp.byte4_to_int(pg_temp.int_to_byte4(tf.len)) / s.avgdl))
  FROM tf, df, stats s WHERE tf.freq > 0
$$;

SELECT ok(EXISTS (SELECT 1 FROM toks GROUP BY id HAVING count(*) > 24), 'corpus has documents longer than 24 terms (lossy norms)');

CREATE TEMP TABLE got AS
  SELECT _id::int AS id, _score::float8 AS score
  FROM search_engine.search_hits('bm25', '{"size": 1000, "query": {"match": {"body": "gamma"}}}');
SELECT is((SELECT count(*) FROM got), (SELECT count(*) FROM pg_temp.expected('gamma')), 'match gamma: same hits as the model');
SELECT is((SELECT count(*) FROM got g JOIN pg_temp.expected('gamma') e USING (id)
           WHERE abs(g.score - e.score) / e.score >= 1e-5), 0::bigint,
          'match gamma: every score within 1e-5 relative error of Lucene''s formula');

-- two terms: a boolean SHOULD sums the term scores
SELECT is((SELECT count(*) FROM search_engine.search_hits('bm25', '{"size": 1000, "query": {"match": {"body": "alpha theta"}}}') h
           JOIN (SELECT id, sum(score) AS score FROM (SELECT * FROM pg_temp.expected('alpha') UNION ALL SELECT * FROM pg_temp.expected('theta')) u GROUP BY id) e
             ON e.id = h._id::int
           WHERE abs(h._score - e.score) / e.score >= 1e-5), 0::bigint,
          'match "alpha theta": every score equals the sum of the term scores');

SELECT * FROM finish();
ROLLBACK;
