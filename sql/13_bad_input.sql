-- Bad input that used to get through (issue 13): each now gets ES's 400,
-- with ES's error type and wording, or ES's answer -- in the REST face and
-- in the typed SQL functions (SQLSTATE from the ES type, the type in
-- DETAIL).  A document read back never fails because of one bad document.

-- status and ES error type + reason (or the result) of a REST call
CREATE FUNCTION bad_rest(m text, p text, b text DEFAULT NULL) RETURNS TABLE (status int, answer text)
LANGUAGE sql AS $$
  SELECT status, coalesce(body->'error'->>'type' || ': ' || (body->'error'->>'reason'),
                          body->>'result', body->>'acknowledged', 'ok')
    FROM search_engine.request(m, p, b) $$;
-- SQLSTATE, ES type and message of a typed call
CREATE FUNCTION bad_sql(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; det text; msg text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL, msg = MESSAGE_TEXT;
  RETURN st || ' ' || det || ': ' || msg;
END $$;
-- the ids of a search's hits, in order
CREATE FUNCTION bad_ids(r jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(h->>'_id', ',' ORDER BY o), '-')
    FROM jsonb_array_elements(r->'hits'->'hits') WITH ORDINALITY AS t(h, o) $$;

SELECT search_engine.create_index('bad')->'acknowledged';
SELECT search_engine.bulk(E'{"index": {"_id": "1"}}\n{"title": "one", "n": 1, "d": "2020-01-01"}\n' ||
                          E'{"index": {"_id": "2"}}\n{"title": "two", "n": 2, "d": "2021-01-01"}\n',
                          'bad', refresh => 'true')::jsonb->'errors' AS errors;

-- ---- \u0000 in a document ------------------------------------------------
-- PostgreSQL's text and jsonb cannot hold U+0000 (jsonb_in refuses it), so
-- a document holding one, in a value or a key, at any depth, is refused
-- where it comes in, as ES refuses a document it cannot parse: 400
-- mapper_parsing_exception.  An escaped backslash before u0000 is text.
SELECT i->>'_id' AS id, i->>'status' AS status, i->'error'->>'type' AS type, i->'error'->>'reason' AS reason
  FROM jsonb_path_query(search_engine.bulk(
         E'{"index": {"_id": "n1"}}\n{"t": "a\\u0000b"}\n' ||
         E'{"index": {"_id": "n2"}}\n{"t\\u0000": 1}\n' ||
         E'{"create": {"_id": "n3"}}\n{"o": {"deep": ["x", {"k": "\\u0000"}]}}\n' ||
         E'{"update": {"_id": "1"}}\n{"doc": {"t": "\\u0000"}}\n' ||
         E'{"index": {"_id": "n4"}}\n{"t": "fine \\\\u0000 text"}\n',
         'bad', refresh => 'true')::jsonb, '$.items[*].*') i;
SELECT (bad_rest('PUT', '/bad/_doc/n5', '{"t": "a\u0000b"}')).*;
SELECT status, body->'items'->0->'index'->'error'->>'type' AS type
  FROM search_engine.request('POST', '/bad/_bulk?refresh=true', E'{"index": {"_id": "n6"}}\n{"t": "\\u0000"}\n');
-- a script that makes one is refused the same way
SELECT (bad_rest('POST', '/bad/_update/1', '{"script": "ctx._source.t = ''a\\u0000b''"}')).*;
SELECT bad_sql($$SELECT search_engine.update_doc('bad', '1', '{"script": {"source": "ctx._source.t = ''x\\0''"}}')$$);
-- the typed functions take jsonb, which refuses it itself
SELECT bad_sql($$SELECT search_engine.index_doc('bad', 'n7', '{"t": "a\u0000b"}')$$);
-- nothing of it was stored, and every read works
SELECT search_engine.get_doc('bad', 'n4')->'_source' AS n4, search_engine.get_doc('bad', '1')->'_source'->>'t' AS t;
SELECT bad_ids(search_engine.search('bad', '{"sort": [{"n": "asc"}]}')) AS ids;
SELECT count(*) FROM search_engine.search_hits('bad');
SELECT status, body->'hits'->'total'->'value' AS total FROM search_engine.request('GET', '/bad/_search');

-- ---- if_seq_no / if_primary_term -------------------------------------------
-- a negative value is not "no condition" (the write would be unconditional)
-- and a value that is not a number is not 0: ES's 400s, document untouched
SELECT p, (bad_rest('PUT', p, '{"title": "cas"}')).*
  FROM (VALUES ('/bad/_doc/1?if_seq_no=-1&if_primary_term=1'),
               ('/bad/_doc/1?if_seq_no=0&if_primary_term=-1'),
               ('/bad/_doc/1?if_seq_no=abc&if_primary_term=1'),
               ('/bad/_doc/1?if_seq_no=0&if_primary_term=1x'),
               ('/bad/_doc/1?if_seq_no=99999999999999999999&if_primary_term=1'),
               ('/bad/_doc/1?if_seq_no=0'),
               ('/bad/_doc/1?if_primary_term=1'),
               ('/bad/_create/9?if_seq_no=-7&if_primary_term=1')) AS v(p);
SELECT (bad_rest('DELETE', '/bad/_doc/1?if_seq_no=-5&if_primary_term=1')).*;
SELECT (bad_rest('POST', '/bad/_update/1?if_seq_no=-1&if_primary_term=1', '{"doc": {"x": 1}}')).*;
SELECT bad_sql($$SELECT search_engine.index_doc('bad', '1', '{"title": "cas"}', if_seq_no => -1, if_primary_term => 1)$$);
SELECT bad_sql($$SELECT search_engine.delete_doc('bad', '1', if_seq_no => 0, if_primary_term => -1)$$);
SELECT bad_sql($$SELECT search_engine.update_doc('bad', '1', '{"doc": {"x": 1}}', if_seq_no => -3, if_primary_term => 1)$$);
SELECT bad_sql($$SELECT search_engine.index_doc('bad', '1', '{"title": "cas"}', if_seq_no => 0)$$);
-- bulk action lines: the whole request is refused, as ES's parser does
SELECT bad_sql($$SELECT search_engine.bulk(E'{"index": {"_id": "1", "if_seq_no": -1, "if_primary_term": 1}}\n{"title": "cas"}\n', 'bad')$$);
SELECT bad_sql($$SELECT search_engine.bulk(E'{"delete": {"_id": "1", "if_seq_no": 0, "if_primary_term": -2}}\n', 'bad')$$);
SELECT (bad_rest('POST', '/bad/_bulk', E'{"update": {"_id": "1", "if_seq_no": -1, "if_primary_term": 1}}\n{"doc": {"x": 1}}\n')).*;
SELECT search_engine.get_doc('bad', '1')->'_version' AS version, search_engine.get_doc('bad', '1')->'_source'->>'title' AS title;
-- a stale condition is still a conflict, a current one still writes
SELECT (bad_rest('PUT', '/bad/_doc/2?if_seq_no=0&if_primary_term=1', '{"title": "two", "n": 2}')).*;
SELECT (bad_rest('PUT', '/bad/_doc/2?if_seq_no=1&if_primary_term=1', '{"title": "two", "n": 2, "d": "2021-01-01"}')).*;

-- ---- integer URL parameters: the whole value, in range --------------------
SELECT p, (bad_rest('GET', p)).*
  FROM (VALUES ('/bad/_search?size=-1'), ('/bad/_search?from=-1'),
               ('/bad/_search?size=99999999999999'), ('/bad/_search?size=2147483648'),
               ('/bad/_search?size=ten'), ('/bad/_search?size='), ('/bad/_search?from=1.5'),
               ('/bad/_search?size=%2B1'), ('/bad/_search?from=0&size=0')) AS v(p);
SELECT (bad_rest('POST', '/bad/_forcemerge?max_num_segments=one')).*;
-- the body's size and from were already checked (SQL face)
SELECT bad_sql($$SELECT search_engine.search('bad', '{"size": -1}')$$);

-- ---- update/delete-by-query and reindex: batch size, max_docs, throttle ---
SELECT p, (bad_rest('POST', p)).*
  FROM (VALUES ('/bad/_update_by_query?scroll_size=0'), ('/bad/_update_by_query?scroll_size=-1'),
               ('/bad/_update_by_query?scroll_size=10001'), ('/bad/_update_by_query?scroll_size=x'),
               ('/bad/_update_by_query?max_docs=-5'), ('/bad/_update_by_query?max_docs=0'),
               ('/bad/_delete_by_query?max_docs=-1'), ('/bad/_delete_by_query?max_docs=1e3'),
               ('/bad/_update_by_query?requests_per_second=0'),
               ('/bad/_update_by_query?requests_per_second=-2'),
               ('/bad/_delete_by_query?requests_per_second=fast'),
               ('/_update_by_query/x:1/_rethrottle'),
               ('/_update_by_query/x:1/_rethrottle?requests_per_second=0')) AS v(p);
SELECT (bad_rest('POST', '/_reindex?requests_per_second=0', '{"source": {"index": "bad"}, "dest": {"index": "bad2"}}')).*;
SELECT (bad_rest('POST', '/_reindex', '{"source": {"index": "bad", "size": 0}, "dest": {"index": "bad2"}}')).*;
SELECT (bad_rest('POST', '/bad/_update_by_query', '{"max_docs": -3}')).*;
SELECT bad_sql($$SELECT search_engine.update_by_query('bad', scroll_size => 0)$$);
SELECT bad_sql($$SELECT search_engine.update_by_query('bad', scroll_size => 20000)$$);
SELECT bad_sql($$SELECT search_engine.update_by_query('bad', max_docs => -5)$$);
SELECT bad_sql($$SELECT search_engine.delete_by_query('bad', '{"query": {"match_all": {}}}', max_docs => 0)$$);
SELECT bad_sql($$SELECT search_engine.update_by_query('bad', requests_per_second => 0)$$);
SELECT bad_sql($$SELECT search_engine.reindex('{"source": {"index": "bad"}, "dest": {"index": "bad2"}}', requests_per_second => -0.5)$$);
SELECT bad_sql($$SELECT search_engine.rethrottle_task('x:1', NULL)$$);
SELECT bad_sql($$SELECT search_engine.rethrottle_task('x:1', 0)$$);
SELECT count(*) AS bad2 FROM search_engine.indices WHERE index = 'bad2';
-- in range they run: max_docs bounds the documents touched
SELECT search_engine.update_by_query('bad', max_docs => 1, requests_per_second => -1)->'total' AS total;
SELECT (bad_rest('POST', '/bad/_update_by_query?max_docs=1&scroll_size=1&requests_per_second=1000')).status;

-- ---- cluster health: wait_for_status and timeout ----------------------------
SELECT p, (bad_rest('GET', p)).*
  FROM (VALUES ('/_cluster/health?wait_for_status=bogus'), ('/_cluster/health/bad?wait_for_status='),
               ('/_cluster/health?timeout=10'), ('/_cluster/health?timeout=-5s'),
               ('/_cluster/health?timeout=1.5s')) AS v(p);
SELECT status, body->>'status' AS health
  FROM search_engine.request('GET', '/_cluster/health/bad?wait_for_status=YELLOW&timeout=30s');
SELECT bad_sql($$SELECT search_engine.cluster_health('bad', 'bogus')$$);
SELECT search_engine.cluster_health('bad', 'Yellow', 30000)->>'status' AS health;

-- ---- task ids -----------------------------------------------------------------
SELECT (bad_rest('GET', '/_tasks/:1')).*;
SELECT (bad_rest('GET', '/_tasks/x:y')).*;

-- ---- bulk action lines: duplicate keys and an empty _id ----------------------
-- a repeated key is ES's parse error (strict duplicate detection), for the
-- whole bulk; an empty _id fails an index/create item, and is a missing id
-- (the whole bulk) for delete and update
SELECT bad_sql($$SELECT search_engine.bulk(E'{"index": {"_id": "d1", "_id": "d2"}}\n{"t": 1}\n', 'bad')$$);
SELECT bad_sql($$SELECT search_engine.bulk(E'{"index": {"_index": "bad", "_index": "other"}}\n{"t": 1}\n')$$);
SELECT (bad_rest('POST', '/bad/_bulk', E'{"delete": {"_id": "1"}, "delete": {"_id": "2"}}\n')).*;
SELECT i->>'_id' AS id, i->>'status' AS status, i->'error'->>'type' AS type, i->'error'->>'reason' AS reason
  FROM jsonb_path_query(search_engine.bulk(E'{"index": {"_id": ""}}\n{"t": 1}\n{"create": {"_id": ""}}\n{"t": 1}\n' ||
                                           E'{"index": {"_id": "e1"}}\n{"t": 1}\n', 'bad')::jsonb, '$.items[*].*') i;
SELECT bad_sql($$SELECT search_engine.bulk(E'{"delete": {"_id": ""}}\n', 'bad')$$);
SELECT (bad_rest('POST', '/bad/_bulk', E'{"update": {"_id": ""}}\n{"doc": {"t": 1}}\n')).*;
SELECT bad_sql($$SELECT search_engine.index_doc('bad', '', '{"t": 1}')$$);
SELECT bad_sql($$SELECT search_engine.delete_doc('bad', '')$$);
SELECT search_engine.get_doc('bad', '')->'found' AS empty_id_stored;

-- ---- date math out of range ---------------------------------------------------
-- it used to wrap around and match every document (or none)
SELECT q, (bad_rest('POST', '/bad/_search', format('{"query": {"range": {"d": %s}}}', q))).*
  FROM (VALUES ('{"lt": "now+300000000y"}'), ('{"gt": "now-300000000y"}'), ('{"lte": "now+3000000000M"}'),
               ('{"gte": "2020-01-01||+300000000y"}'), ('{"lt": "now+300000000y/y"}')) AS v(q);
SELECT bad_sql($$SELECT search_engine.search('bad', '{"query": {"range": {"d": {"lt": "now+300000000y"}}}}')$$);
-- far, but in range: ES's answer
SELECT bad_ids(search_engine.search('bad', '{"query": {"range": {"d": {"gt": "now+200000000y"}}}}')) AS beyond,
       bad_ids(search_engine.search('bad', '{"query": {"range": {"d": {"lt": "now+200000000y"}}}, "sort": [{"n": "asc"}]}')) AS before;

-- ---- q=*:* in the URL is match_all (ES's query_string) ------------------------
SELECT q, status, body->'hits'->'total'->'value' AS total
  FROM (VALUES ('*:*'), ('*'), ('title:*'), ('title:one')) AS v(q),
       LATERAL search_engine.request('GET', '/bad/_search?q=' || q);
SELECT status, body->'count' AS count FROM search_engine.request('GET', '/bad/_count?q=*:*');

-- ---- index.max_result_window above 10000 is honoured ---------------------------
SELECT search_engine.create_index('wide', '{"settings": {"number_of_shards": 1, "index.max_result_window": 20000}}')->'acknowledged';
SELECT search_engine.bulk(string_agg(format(E'{"index": {"_id": "%s"}}\n{"n": %s}', i, i), E'\n') || E'\n',
                          'wide', refresh => 'true')::jsonb->'errors' AS errors
  FROM generate_series(1, 10005) i;
SELECT bad_ids(search_engine.search('wide', '{"from": 10000, "size": 10, "sort": [{"n": "asc"}], "_source": false}')) AS ids;
SELECT status, bad_ids(body) AS ids
  FROM search_engine.request('POST', '/wide/_search?from=10002&size=5', '{"sort": [{"n": "asc"}], "_source": false}');
SELECT count(*) FROM search_engine.search_hits('wide', '{"size": 10005, "_source": false}');
SELECT (bad_rest('GET', '/wide/_search?from=19995&size=10')).*;
-- several indices: the lowest limit holds
SELECT (bad_rest('GET', '/wide,bad/_search?from=10000&size=1')).*;
-- raised on a live index, it holds at once
SELECT search_engine.put_settings('bad', '{"index": {"max_result_window": 30000}}')->'acknowledged';
SELECT (bad_rest('GET', '/wide,bad/_search?from=10000&size=1')).*;
SELECT bad_ids(search_engine.search('bad', '{"from": 25000, "size": 10}')) AS ids;
-- the by-query batch size is held to it too
SELECT search_engine.delete_by_query('wide', '{"query": {"term": {"n": 7}}}', scroll_size => 15000, refresh => true)->'deleted' AS deleted;

SELECT search_engine.delete_index('bad')->'acknowledged', search_engine.delete_index('wide')->'acknowledged';
DROP FUNCTION bad_rest(text, text, text);
DROP FUNCTION bad_sql(text);
DROP FUNCTION bad_ids(jsonb);
