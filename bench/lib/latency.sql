-- Server-side latency, shared by the benchmarks (loaded with psql -f).
--
-- bench.latency(q, warmup, reps) runs the statement q (returning one jsonb
-- value) warmup times, then reps times with clock_timestamp() around each
-- EXECUTE, so parsing and planning count.  It returns the median and p95 in
-- milliseconds and, from the last answer, the number of hits (the length of
-- hits.hits, or of the answer itself when it is an array; 0 otherwise) and
-- hits.total.value (NULL when absent).
CREATE SCHEMA IF NOT EXISTS bench;
CREATE OR REPLACE FUNCTION bench.latency(q text, warmup int, reps int,
                                         OUT median_ms float8, OUT p95_ms float8,
                                         OUT hits int, OUT total bigint)
LANGUAGE plpgsql AS $$
DECLARE
  t float8[] := '{}';
  t0 timestamptz;
  r jsonb;
  h jsonb;
BEGIN
  FOR i IN 1..warmup LOOP EXECUTE q INTO r; END LOOP;
  FOR i IN 1..reps LOOP
    t0 := clock_timestamp();
    EXECUTE q INTO r;
    t := t || extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
  END LOOP;
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x),
         percentile_cont(0.95) WITHIN GROUP (ORDER BY x)
    INTO median_ms, p95_ms FROM unnest(t) AS x;
  h := CASE WHEN jsonb_typeof(r) = 'object' THEN r->'hits'->'hits' ELSE r END;
  hits := CASE WHEN jsonb_typeof(h) = 'array' THEN jsonb_array_length(h) ELSE 0 END;
  total := CASE WHEN jsonb_typeof(r) = 'object' THEN (r->'hits'->'total'->>'value')::bigint END;
END $$;
