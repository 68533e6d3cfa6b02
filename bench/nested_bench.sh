#!/usr/bin/env bash
# Nested documents: indexing and search cost of a nested field against the
# same objects mapped as a plain object (bench/RESULTS.md "Nested documents").
#   PATH=<a private install>/bin:$PATH bench/nested_bench.sh
#   (env: PORT=5476 PGDIR=/var/tmp/se_nested_bench NDOCS=20000 SEARCHES=50)
# One fresh server on the install first in PATH, run as root.  Index nb_o
# maps c as an object, nb_n as nested; each gets NDOCS documents of 5
# objects {k: keyword, n: long, t: text} under c, one shard, one bulk with
# refresh=true, twice (the second replaces every document), then SEARCHES
# term + match searches on one object's fields (nb_n: inside "nested") and
# SEARCHES top-level two-term matches on a root field (size 0, every hit
# counted: 20,000 docs walked), all through
# search_engine.request in one backend.  Prints milliseconds.
set -euo pipefail
PORT=${PORT:-5476}
PGDIR=${PGDIR:-/var/tmp/se_nested_bench}
NDOCS=${NDOCS:-20000}
SEARCHES=${SEARCHES:-50}
REPO=$(cd "$(dirname "$0")/.." && pwd)
cleanup() { "$REPO/test/pg_instance.sh" stop "$PGDIR"; rm -rf "$PGDIR"; }
[ -d "$PGDIR" ] && cleanup
trap cleanup EXIT
"$REPO/test/pg_instance.sh" start "$PGDIR" "$PORT" "search_engine.write_threads = 1"
runuser -u postgres -- psql -X -q -h /tmp -p "$PORT" -d postgres -v ON_ERROR_STOP=1 -At <<SQL
CREATE EXTENSION search_engine;
CREATE FUNCTION pg_temp.ms(t timestamptz) RETURNS text LANGUAGE sql AS
  \$\$ SELECT round(extract(epoch FROM clock_timestamp() - t) * 1000)::text \$\$;
CREATE TEMP TABLE body AS
  SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n%s', i,
           jsonb_build_object('title', 'doc tag' || (i % 10), 'c',
             (SELECT jsonb_agg(jsonb_build_object('k', 'k' || ((i + j) % 100), 'n', j,
                                                  't', 'w' || ((i * j) % 100) || ' common'))
                FROM generate_series(1, 5) j))), E'\n') || E'\n' AS b
    FROM generate_series(1, $NDOCS) i;
DO \$\$
DECLARE
  t timestamptz;
  r text := '';
  ix text;
  q text;
  s int;
  st int;
  hits bigint;
BEGIN
  FOREACH ix IN ARRAY ARRAY['nb_o', 'nb_n'] LOOP
    PERFORM search_engine.request('PUT', '/' || ix, format('{"settings": {"number_of_shards": 1, "number_of_replicas": 0},
      "mappings": {"properties": {"title": {"type": "text"}, "c": {"type": "%s",
        "properties": {"k": {"type": "keyword"}, "n": {"type": "long"}, "t": {"type": "text"}}}}}}',
      CASE ix WHEN 'nb_o' THEN 'object' ELSE 'nested' END));
    FOR s IN 1..2 LOOP
      t := clock_timestamp();
      SELECT status INTO st FROM search_engine.request('POST', '/' || ix || '/_bulk?refresh=true', (SELECT b FROM body));
      r := r || ix || ' bulk ' || s || ': ' || pg_temp.ms(t) || E' ms\n';
    END LOOP;
    t := clock_timestamp();
    hits := 0;
    FOR s IN 1..$SEARCHES LOOP
      q := format('{"bool": {"must": [{"term": {"c.k": "k%s"}}, {"match": {"c.t": "w%s"}}]}}', s % 100, (s * 3) % 100);
      IF ix = 'nb_n' THEN
        q := format('{"nested": {"path": "c", "query": %s}}', q);
      END IF;
      SELECT status, hits + (body->'hits'->'total'->>'value')::bigint INTO st, hits
        FROM search_engine.request('GET', '/' || ix || '/_search', '{"query": ' || q || '}');
      IF st <> 200 THEN RAISE EXCEPTION 'search failed: %', st; END IF;
    END LOOP;
    r := r || ix || ' ' || $SEARCHES || ' object searches: ' || pg_temp.ms(t) || ' ms (' || hits || E' hits in all)\n';
    t := clock_timestamp();
    FOR s IN 1..$SEARCHES LOOP
      SELECT status INTO st FROM search_engine.request('GET', '/' || ix || '/_search',
        format('{"size": 0, "track_total_hits": true, "query": {"match": {"title": "doc tag%s"}}}', s % 10));
    END LOOP;
    r := r || ix || ' ' || $SEARCHES || ' top-level searches: ' || pg_temp.ms(t) || E' ms\n';
  END LOOP;
  RAISE NOTICE E'\n%', r;
END \$\$;
SQL
