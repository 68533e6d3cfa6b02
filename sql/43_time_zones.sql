-- Named time zones (issue 17): date_histogram (calendar and fixed
-- intervals round in local time across DST changes), date_range, the range
-- query's and query_string's time_zone, from PostgreSQL's own tz database;
-- buckets checked against date_trunc(... AT TIME ZONE ...).
SELECT search_engine.create_index('tzi', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"date": {"type": "date"}, "n": {"type": "integer"}}}}') IS NOT NULL AS created;
CREATE FUNCTION pg_temp.tzs(body jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT search_engine.search('tzi', body) $$;

-- ---- ES's documented example: time_zone -01:00 and a day interval ----------
SELECT (search_engine.bulk($$
{"index": {"_index": "tzi", "_id": "doc1"}}
{"date": "2015-10-01T00:30:00Z", "n": 1}
{"index": {"_index": "tzi", "_id": "doc2"}}
{"date": "2015-10-01T01:30:00Z", "n": 2}
$$, refresh => 'true')::jsonb->>'errors') AS errors;
SELECT pg_temp.tzs('{"size": 0, "aggs": {"by_day": {"date_histogram": {"field": "date", "calendar_interval": "day"}}}}')->'aggregations';
SELECT pg_temp.tzs('{"size": 0, "aggs": {"by_day": {"date_histogram": {"field": "date", "calendar_interval": "day", "time_zone": "-01:00"}}}}')->'aggregations';
-- the same instants in a named zone, and its key_as_string offsets
SELECT pg_temp.tzs('{"size": 0, "aggs": {"by_day": {"date_histogram": {"field": "date", "calendar_interval": "day", "time_zone": "America/Sao_Paulo"}}}}')->'aggregations';
SELECT search_engine.delete_index('tzi') IS NOT NULL AS deleted;

-- ---- DST: half-hourly docs around the 2016 changes in Berlin and New York ---
SELECT search_engine.create_index('tzi', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0}, "mappings": {"properties": {"date": {"type": "date"}, "n": {"type": "integer"}}}}') IS NOT NULL AS created;
CREATE TABLE tz_src AS
  SELECT row_number() OVER (ORDER BY ts) AS id, ts
    FROM (SELECT generate_series('2016-03-24T00:00:00Z'::timestamptz, '2016-03-30T00:00:00Z', '30 minutes') ts
          UNION ALL SELECT generate_series('2016-10-27T00:00:00Z'::timestamptz, '2016-11-08T00:00:00Z', '30 minutes')
          UNION ALL SELECT generate_series('2016-03-11T00:00:00Z'::timestamptz, '2016-03-15T00:00:00Z', '30 minutes')) s;
SELECT (search_engine.bulk(string_agg(
          '{"index": {"_index": "tzi", "_id": "' || id || '"}}' || chr(10) ||
          jsonb_build_object('date', to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'n', id)::text,
          chr(10) ORDER BY id), refresh => 'true')::jsonb->>'errors') AS errors
  FROM tz_src;

-- [key, doc_count] of a date_histogram, and the same grouping in SQL
CREATE FUNCTION pg_temp.hist(tz text, spec jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_array((b->>'key')::bigint, (b->>'doc_count')::int) ORDER BY (b->>'key')::bigint)
    FROM jsonb_array_elements(pg_temp.tzs(jsonb_build_object('size', 0, 'aggs', jsonb_build_object('h',
           jsonb_build_object('date_histogram', spec || jsonb_build_object('field', 'date', 'time_zone', tz, 'min_doc_count', 1)))))
           ->'aggregations'->'h'->'buckets') b $$;
CREATE FUNCTION pg_temp.sql_trunc(tz text, unit text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_array(k, c) ORDER BY k)
    FROM (SELECT (extract(epoch FROM CASE WHEN unit = 'hour'
                    -- an hour keeps the doc's own offset: a repeated hour is its own bucket
                    THEN ts - ((ts AT TIME ZONE tz) - date_trunc('hour', ts AT TIME ZONE tz))
                    ELSE date_trunc(unit, ts AT TIME ZONE tz) AT TIME ZONE tz END) * 1000)::bigint k, count(*) c
            FROM tz_src GROUP BY 1) s $$;

-- calendar intervals: buckets start at local midnight (23 h and 25 h days)
SELECT tz, unit,
       pg_temp.hist(tz, jsonb_build_object('calendar_interval', unit)) = pg_temp.sql_trunc(tz, unit) AS equal_to_sql,
       jsonb_array_length(pg_temp.hist(tz, jsonb_build_object('calendar_interval', unit))) AS buckets
  FROM (VALUES ('Europe/Berlin'), ('America/New_York'), ('Asia/Kolkata'), ('UTC')) z(tz),
       (VALUES ('day'), ('week'), ('month'), ('hour')) u(unit)
 ORDER BY 1, 2;
-- the day of the spring change holds 23 hours of docs, the autumn one 25
SELECT b->>'key_as_string' AS key_as_string, b->>'doc_count' AS doc_count
  FROM jsonb_array_elements(pg_temp.tzs('{"size": 0, "query": {"range": {"date": {"gte": "2016-03-26T00:00:00", "lt": "2016-03-29T00:00:00", "time_zone": "Europe/Berlin"}}},
         "aggs": {"h": {"date_histogram": {"field": "date", "calendar_interval": "1d", "time_zone": "Europe/Berlin"}}}}')->'aggregations'->'h'->'buckets') b;
SELECT b->>'key_as_string' AS key_as_string, b->>'doc_count' AS doc_count
  FROM jsonb_array_elements(pg_temp.tzs('{"size": 0, "query": {"range": {"date": {"gte": "2016-10-29", "lte": "2016-10-31", "time_zone": "Europe/Berlin"}}},
         "aggs": {"h": {"date_histogram": {"field": "date", "calendar_interval": "day", "time_zone": "Europe/Berlin"}}}}')->'aggregations'->'h'->'buckets') b;
-- fixed intervals round in local time too: 12h buckets, an 11h one on 27 March
SELECT pg_temp.hist('Europe/Berlin', '{"fixed_interval": "12h"}')
     = (SELECT jsonb_agg(jsonb_build_array(k, c) ORDER BY k)
          FROM (SELECT (extract(epoch FROM (date_trunc('day', ts AT TIME ZONE 'Europe/Berlin')
                          + CASE WHEN extract(hour FROM ts AT TIME ZONE 'Europe/Berlin') >= 12 THEN interval '12 hours' ELSE interval '0' END)
                          AT TIME ZONE 'Europe/Berlin') * 1000)::bigint k, count(*) c
                  FROM tz_src GROUP BY 1) s) AS fixed_12h_equal_to_sql;
SELECT b->>'key_as_string' AS key_as_string, b->>'doc_count' AS doc_count
  FROM jsonb_array_elements(pg_temp.tzs('{"size": 0, "query": {"range": {"date": {"gte": "2016-03-26T12:00:00", "lt": "2016-03-28T00:00:00", "time_zone": "Europe/Berlin"}}},
         "aggs": {"h": {"date_histogram": {"field": "date", "fixed_interval": "12h", "time_zone": "Europe/Berlin"}}}}')->'aggregations'->'h'->'buckets') b;
-- hourly in New York when clocks go back: the repeated 01:00 hour is two buckets
SELECT b->>'key_as_string' AS key_as_string, b->>'doc_count' AS doc_count
  FROM jsonb_array_elements(pg_temp.tzs('{"size": 0, "query": {"range": {"date": {"gte": "2016-11-06T00:00:00-04:00", "lt": "2016-11-06T03:00:00-05:00"}}},
         "aggs": {"h": {"date_histogram": {"field": "date", "calendar_interval": "hour", "time_zone": "America/New_York"}}}}')->'aggregations'->'h'->'buckets') b;
-- empty buckets between extended_bounds step by local days across the change
SELECT jsonb_path_query_array(pg_temp.tzs('{"size": 0, "query": {"range": {"date": {"gte": "2016-03-27T12:00:00Z", "lt": "2016-03-27T13:00:00Z"}}},
         "aggs": {"h": {"date_histogram": {"field": "date", "calendar_interval": "day", "time_zone": "Europe/Berlin", "min_doc_count": 0,
                  "extended_bounds": {"min": "2016-03-25T12:00:00Z", "max": "2016-03-29T12:00:00Z"}}}}}'), '$.aggregations.h.buckets[*].key_as_string') AS days;

-- ---- date_range: bounds without a zone are local time ------------------------
SELECT pg_temp.tzs('{"size": 0, "aggs": {"r": {"date_range": {"field": "date", "time_zone": "CET", "ranges": [{"to": "2016-03-27"}, {"from": "2016-03-27", "to": "2016-03-28"}, {"from": "2016-03-28T00:00:00Z", "to": "2016-03-28||+1d/d"}]}}}}')->'aggregations';
SELECT (SELECT count(*) FROM tz_src WHERE ts < '2016-03-27 00:00 Europe/Berlin') AS sql_before,
       (SELECT count(*) FROM tz_src WHERE ts >= '2016-03-27 00:00 Europe/Berlin' AND ts < '2016-03-28 00:00 Europe/Berlin') AS sql_that_day;

-- ---- the range query's time_zone, with date math rounding in local time ------
SELECT (pg_temp.tzs(jsonb_build_object('size', 0, 'track_total_hits', true, 'query', jsonb_build_object('range', jsonb_build_object('date',
          jsonb_build_object('gte', lo, 'lt', hi, 'time_zone', tz)))))->'hits'->'total'->>'value')::int AS hits,
       (SELECT count(*) FROM tz_src WHERE ts >= (lo_sql::timestamp AT TIME ZONE tz) AND ts < (hi_sql::timestamp AT TIME ZONE tz))::int AS sql,
       tz, lo, hi
  FROM (VALUES ('Europe/Berlin', '2016-03-27', '2016-03-28', '2016-03-27', '2016-03-28'),
               ('Europe/Berlin', '2016-03-27T01:00:00', '2016-03-27T04:00:00', '2016-03-27 01:00', '2016-03-27 04:00'),
               ('America/New_York', '2016-11-06||/d', '2016-11-06||+1d/d', '2016-11-06', '2016-11-07'),
               ('+05:30', '2016-03-12T10:00', '2016-03-12T22:00', '2016-03-12 10:00', '2016-03-12 22:00')) v(tz, lo, hi, lo_sql, hi_sql);
-- a bound with its own offset ignores time_zone
SELECT (pg_temp.tzs('{"size": 0, "track_total_hits": true, "query": {"range": {"date": {"gte": "2016-03-12T00:00:00Z", "lt": "2016-03-12T01:00:00Z", "time_zone": "Asia/Tokyo"}}}}')->'hits'->'total'->>'value')::int AS own_zone;
-- ---- query_string's time_zone applies to its date ranges -----------------------
SELECT (pg_temp.tzs('{"size": 0, "track_total_hits": true, "query": {"query_string": {"query": "date:[2016-03-27 TO 2016-03-28}", "time_zone": "Europe/Berlin"}}}')->'hits'->'total'->>'value')::int AS qs_berlin,
       (pg_temp.tzs('{"size": 0, "track_total_hits": true, "query": {"query_string": {"query": "date:[2016-03-27 TO 2016-03-28}"}}}')->'hits'->'total'->>'value')::int AS qs_utc;

-- ---- errors ------------------------------------------------------------------
SELECT r.status, r.body->'error'->>'type' AS type, r.body->'error'->>'reason' AS reason
  FROM (VALUES ('{"size": 0, "aggs": {"h": {"date_histogram": {"field": "date", "calendar_interval": "day", "time_zone": "Mars/Olympus"}}}}'),
               ('{"size": 0, "aggs": {"h": {"date_range": {"field": "date", "time_zone": "+25:00", "ranges": [{"to": "2016-01-01"}]}}}}'),
               ('{"query": {"range": {"date": {"gte": "2016-01-01", "time_zone": "../../etc/passwd"}}}}'),
               ('{"query": {"query_string": {"query": "date:[2016 TO 2017]", "time_zone": "Nowhere/Else"}}}')) v(b),
       search_engine.request('POST', '/tzi/_search', v.b) r;

SELECT search_engine.delete_index('tzi') IS NOT NULL AS deleted;
DROP TABLE tz_src;
