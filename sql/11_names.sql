-- Names from requests never become file names: index names, ids, routing
-- values and task ids with "..", "/", "\", NUL, 255+ bytes or non-ASCII
-- are either stored and read back unchanged or refused with ES's error,
-- and the data directory holds only uuid- and number-shaped names.

-- ES's status, error type and reason (or result) of a REST call
CREATE FUNCTION es(m text, p text, b text DEFAULT NULL) RETURNS TABLE (status int, answer text)
LANGUAGE sql AS $$
  SELECT status, coalesce(body->'error'->>'type' || ': ' || (body->'error'->>'reason'),
                          body->>'error', body->>'result', body->>'acknowledged')
    FROM search_engine.request(m, p, b) $$;
-- long runs of one character shortened, for reading
CREATE FUNCTION squeeze(t text) RETURNS text LANGUAGE sql AS $$
  SELECT regexp_replace(t, '(.)\1{11,}', '\1\1\1...', 'g') $$;
-- the ES type and reason of a failing typed call
CREATE FUNCTION refusal(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE det text; msg text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS det = PG_EXCEPTION_DETAIL, msg = MESSAGE_TEXT;
  RETURN det || ': ' || squeeze(msg);
END $$;

-- ---- index names -------------------------------------------------------
SELECT squeeze(name) AS name, refusal(format('SELECT search_engine.create_index(%L)', name))
  FROM (VALUES ('..'), ('.'), ('../x'), ('a/../b'), ('a\b'), ('/abs'), ('x#y'), ('x:y'),
               ('_x'), ('Été'), ('ÉTÉ'), (repeat('x', 256))) AS v(name);
SELECT octet_length(repeat('é', 128)) AS bytes,
       refusal(format('SELECT search_engine.create_index(%L)', repeat('é', 128)));
-- valid names: non-ASCII lowercase up to 255 bytes, dots inside
SELECT (search_engine.create_index(name))->>'index' = name AS created
  FROM (VALUES ('été'), ('名前'), ('a..b'), ('.hidden'), (repeat('é', 127) || 'x')) AS v(name);
SELECT squeeze(index) AS index, octet_length(index) FROM search_engine.indices
 WHERE index IN ('été', '名前', 'a..b', '.hidden', repeat('é', 127) || 'x') ORDER BY octet_length(index), index;

-- REST PUT: the path is decoded first, so %2F and %5C are parts of the name
SELECT path, (es('PUT', path)).*
  FROM (VALUES ('/..'), ('/%2E%2E'), ('/a%2F..%2Fb'), ('/a%5Cb'), ('/%C3%89t%C3%A9'),
               ('/evil%00x'), ('/%C3%B1and%C3%BA')) AS v(path);
SELECT status FROM search_engine.request('HEAD', '/%E5%90%8D%E5%89%8D');
SELECT (es('GET', '/evil')).*;
SELECT status, body->'été'->'settings'->'index'->>'provided_name' FROM search_engine.request('GET', '/%C3%A9t%C3%A9');

-- bulk auto-creates indices: invalid names fail their item, a NUL the request
SELECT item->'index'->>'_index' AS index, item->'index'->>'status' AS status,
       coalesce(item->'index'->'error'->>'reason', item->'index'->>'result') AS answer
  FROM json_array_elements(search_engine.bulk(
         E'{"index": {"_index": "../up", "_id": "1"}}\n{"a": 1}\n'
         '{"index": {"_index": "a\\\\b", "_id": "1"}}\n{"a": 1}\n'
         '{"index": {"_index": "Über", "_id": "1"}}\n{"a": 1}\n'
         '{"index": {"_index": "über", "_id": "1"}}\n{"a": 1}\n', refresh => 'true')->'items') AS item;
SELECT (es('POST', '/_bulk', E'{"index": {"_index": "nu\\u0000l", "_id": "1"}}\n{"a": 1}\n')).*;
SELECT (es('POST', '/_mget', '{"docs": [{"_index": "über\u0000x", "_id": "1"}]}')).*;
SELECT (es('POST', '/_reindex', '{"source": {"index": "über"}, "dest": {"index": "x\u0000y"}}')).*;
SELECT (es('POST', '/_reindex', '{"source": {"index": ["über", 7]}, "dest": {"index": "copy"}}')).*;
SELECT index FROM search_engine.indices WHERE index LIKE 'nu%' OR index LIKE 'evil%' OR index LIKE '%up';

-- ---- document ids -------------------------------------------------------
SELECT search_engine.create_index('names', '{"settings": {"number_of_shards": 2}}') IS NOT NULL;
SELECT squeeze(id) AS id, (search_engine.index_doc('names', id, jsonb_build_object('id', id)))->>'result' AS result
  FROM (VALUES ('..'), ('../../etc/passwd'), ('a/b'), ('a\b'), ('/abs'), ('ü/../ß'),
               ('名前'), (repeat('i', 512)), (repeat('é', 256))) AS v(id);
SELECT refusal(format('SELECT search_engine.index_doc(%L, %L, %L)', 'names', repeat('i', 513), '{}'));
SELECT refusal(format('SELECT search_engine.index_doc(%L, %L, %L)', 'names', repeat('é', 257), '{}'));
-- REST _doc/{id}: %2F is part of the id; %00 is refused at the door
SELECT path, (es('PUT', path, '{"via": "rest"}')).*
  FROM (VALUES ('/names/_doc/..%2F..%2Frest'), ('/names/_doc/%C3%BC%5C..'), ('/names/_doc/a%00b'),
               ('/names/_doc/1?routing=r%00x')) AS v(path);
SELECT status, body->>'_id' FROM search_engine.request('GET', '/names/_doc/..%2F..%2Frest');
SELECT status, body->>'_id' FROM search_engine.request('GET', '/names/_doc/%C3%BC%5C..');
SELECT (es('GET', '/names/_doc/a')).*;
-- bulk: a NUL in _id refuses the request, an id over 512 bytes too
SELECT (es('POST', '/_bulk', E'{"index": {"_index": "names", "_id": "n\\u0000ul"}}\n{"a": 1}\n')).*;
SELECT status, squeeze(answer)
  FROM es('POST', '/names/_bulk', '{"index": {"_id": "' || repeat('b', 513) || E'"}}\n{"a": 1}\n');
SELECT item->'index'->>'_id' AS id, item->'index'->>'result' AS result
  FROM json_array_elements(search_engine.bulk(
         E'{"index": {"_index": "names", "_id": "bulk/../x"}}\n{"a": 1}\n'
         '{"index": {"_index": "names", "_id": "bulk\\\\\\\\x"}}\n{"a": 1}\n'
         '{"index": {"_index": "names", "_id": "\\u00fcber\\u2603"}}\n{"a": 1}\n', refresh => 'true')->'items') AS item;
SELECT (es('POST', '/_mget', '{"ids": ["a\u0000b"]}')).*;
SELECT (es('POST', '/names/_mget', '{"docs": [{"_id": "1", "routing": "r\u0000"}]}')).*;
-- every id reads back as written, by get and by search
SELECT squeeze(id) AS id, (search_engine.get_doc('names', id))->>'_id' = id AS same
  FROM (VALUES ('..'), ('../../etc/passwd'), ('a/b'), ('a\b'), ('/abs'), ('ü/../ß'), ('名前'),
               (repeat('i', 512)), (repeat('é', 256)), ('../../rest'), ('ü\..'), ('bulk/../x'),
               ('bulk\\x'), ('über☃')) AS v(id);
SELECT search_engine.refresh('names') IS NOT NULL;
SELECT squeeze(h->>'_id') AS id, octet_length(h->>'_id') AS bytes
  FROM jsonb_array_elements(search_engine.search('names', '{"size": 100, "sort": ["_doc"]}')->'hits'->'hits') h
 ORDER BY h->>'_id' COLLATE "C";

-- ---- routing -------------------------------------------------------------
SELECT squeeze(routing) AS routing, octet_length(routing) AS bytes,
       (search_engine.index_doc('names', 'r' || n, '{}', routing => routing))->>'result' AS result,
       (search_engine.get_doc('names', 'r' || n, routing => routing))->>'_routing' = routing AS same
  FROM unnest(ARRAY['..', '../x', 'a\b', '名前', repeat('r', 32766)]) WITH ORDINALITY AS v(routing, n);
SELECT status, left(answer, 92) || ' ... ' || right(answer, 44)
  FROM es('PUT', '/names/_doc/big?routing=' || repeat('r', 32767), '{}');
SELECT (es('POST', '/_bulk', E'{"index": {"_index": "names", "_id": "1", "routing": "r\\u0000x"}}\n{"a": 1}\n')).*;

-- ---- task ids --------------------------------------------------------------
SELECT (search_engine.update_by_query('names', '{}', wait_for_completion => false)->>'task') AS task \gset
SELECT (search_engine.get_task(:'task', true))->'completed' AS completed;
SELECT (search_engine.get_task(split_part(:'task', ':', 2)))->'completed' AS bare_number;
SELECT id, refusal(format('SELECT search_engine.get_task(%L)', id))
  FROM (VALUES ('..'), ('../1'), ('1/../1'), ('1.json'), ('_tasks/1'), (' 1'), ('+1'), ('0x1'),
               ('99999999999999999999'), ('-1'), ('')) AS v(id);
-- the node part must be this node's whole name, not a prefix of it (masked:
-- task numbers and the node name vary)
SELECT regexp_replace(refusal(format('SELECT search_engine.get_task(%L)', node || split_part(:'task', ':', 2))),
                      '\[.*\]', '[...]') AS refusal
  FROM (VALUES (':'), ('x' || split_part(:'task', ':', 1) || ':')) AS v(node);
SELECT path, (es('GET', path)).*
  FROM (VALUES ('/_tasks/..%2F1'), ('/_tasks/1%00x'), ('/_tasks/1.json'), ('/_tasks/%2E%2E')) AS v(path);

-- ---- the data directory: nothing named after any of the above --------------
SELECT search_engine.flush('names') IS NOT NULL;
WITH RECURSIVE tree(path, rel, isdir) AS (
  SELECT coalesce(nullif(current_setting('search_engine.data_directory'), ''), 'search_engine'), '', true
  UNION ALL
  SELECT t.path || '/' || c, t.rel || '/' || c, coalesce((pg_stat_file(t.path || '/' || c, true)).isdir, false)
    FROM tree t, pg_ls_dir(t.path, true, false) c
   WHERE t.isdir)
SELECT count(*) > 20 AS entries,
       count(*) FILTER (WHERE rel ~ '^/indices/[^/]+$') = (SELECT count(*) FROM search_engine.indices) AS a_dir_per_index,
       array_agg(rel) FILTER (WHERE rel !~ ('^(/_state(/cluster_state(\.tmp)?|/indices(/[A-Za-z0-9_-]{22}-[0-9]+(\.tmp)?)?)?'
                                             '|/_tasks(/[0-9]+\.json(\.tmp)?)?'
                                             '|/indices(/[A-Za-z0-9_-]{22}(/[0-9]+'
                                             '(/index(/(_[0-9]+\.seg|_[0-9]+_[0-9]+\.liv|segments_[0-9]+)(\.tmp)?)?'
                                             '|/translog(/translog-[0-9]+\.tlog)?)?)?)?)?$')) AS unexpected
  FROM tree;

SELECT bool_and(search_engine.delete_index(index) IS NOT NULL) AS deleted
  FROM search_engine.indices
 WHERE index IN ('names', 'ñandú', 'été', '名前', 'a..b', '.hidden', 'über', repeat('é', 127) || 'x');
DROP FUNCTION es(text, text, text);
DROP FUNCTION refusal(text);
DROP FUNCTION squeeze(text);
