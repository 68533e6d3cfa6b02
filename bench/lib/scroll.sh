# bench/lib/scroll.sh: the whole-corpus scroll vs COPY setup shared by
# bench/search_breadth_bench.sh and bench/scroll_ab.sh.  Source it after
# lib/common.sh, the server up.
#   deb_raw_load          table deb_raw: the Debian corpus, one jsonb a row
#                         (what COPY reads, to compare with a scroll)
#   scroll_bench_sql      bench.time_ms(q, warmup, reps): median and p95 ms
#                         of a statement returning no value (COPY);
#                         bench.scroll_all(idx, page): every document
#                         through the scroll API, [documents]

deb_raw_load() {
  sql <<SQL
DROP TABLE IF EXISTS deb_raw;
CREATE TABLE deb_raw (j jsonb);
COPY deb_raw FROM '$DATA/debian.jsonl' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02');
SQL
}

scroll_bench_sql() {
  sql <<'SQL'
CREATE SCHEMA IF NOT EXISTS bench;
CREATE OR REPLACE FUNCTION bench.time_ms(q text, warmup int, reps int,
                                         OUT median_ms float8, OUT p95_ms float8)
LANGUAGE plpgsql AS $$
DECLARE t float8[] := '{}'; t0 timestamptz;
BEGIN
  FOR i IN 1..warmup LOOP EXECUTE q; END LOOP;
  FOR i IN 1..reps LOOP
    t0 := clock_timestamp();
    EXECUTE q;
    t := t || extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
  END LOOP;
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.95) WITHIN GROUP (ORDER BY x)
    INTO median_ms, p95_ms FROM unnest(t) x;
END $$;
CREATE OR REPLACE FUNCTION bench.scroll_all(idx text, page int) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE r jsonb; sid text; n bigint := 0;
BEGIN
  SELECT body INTO r FROM search_engine.request('POST', '/' || idx || '/_search?scroll=1m',
                                                format('{"size": %s, "sort": ["_doc"]}', page));
  LOOP
    EXIT WHEN jsonb_array_length(r->'hits'->'hits') = 0;
    n := n + jsonb_array_length(r->'hits'->'hits');
    sid := r->>'_scroll_id';
    SELECT body INTO r FROM search_engine.request('POST', '/_search/scroll',
                                                  jsonb_build_object('scroll', '1m', 'scroll_id', sid)::text);
  END LOOP;
  PERFORM search_engine.request('DELETE', '/_search/scroll', jsonb_build_object('scroll_id', sid)::text);
  RETURN jsonb_build_array(n);
END $$;
SQL
}
