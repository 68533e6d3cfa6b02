-- Replica apply (src/replication): the operations of one index's shard,
-- read from its translog, applied to another index's shard as a primary's
-- replica_ops are -- in order, and out of order (chunks in reverse, as
-- concurrent replication requests may arrive).  The copy must end with the
-- primary's documents, seq_nos and versions, and refuse an older term.
SELECT search_engine.create_index(i, '{"settings": {"number_of_shards": 1},
  "mappings": {"properties": {"v": {"type": "integer"}}}}')->>'acknowledged'
  FROM (VALUES ('rp'), ('rc_in_order'), ('rc_reversed'), ('rc_one_by_one')) v(i);
-- seq_nos 0..8: indexes, an update, deletes, an id deleted and indexed again
-- (out of order, the index must not be lost to its older delete, nor the
-- deleted ids come back through their older index operations)
SELECT (search_engine.bulk($$
{"index": {"_id": "1"}}
{"v": 1}
{"index": {"_id": "2"}}
{"v": 2}
{"index": {"_id": "3"}}
{"v": 3}
{"index": {"_id": "4"}}
{"v": 4}
{"delete": {"_id": "2"}}
{"index": {"_id": "2"}}
{"v": 22}
{"delete": {"_id": "4"}}
{"update": {"_id": "1"}}
{"doc": {"v": 11}}
{"delete": {"_id": "3"}}
$$, 'rp', 'true'))::jsonb->>'errors';

SELECT i, search_engine._replica_apply_from('rp', i, 0, 1, c, r)
  FROM (VALUES ('rc_in_order', 100, false), ('rc_reversed', 2, true),
               ('rc_one_by_one', 1, true)) v(i, c, r);
SELECT search_engine.refresh(i)->'_shards'->>'failed'
  FROM (VALUES ('rp'), ('rc_in_order'), ('rc_reversed'), ('rc_one_by_one')) v(i);

-- every copy: the same documents with the same seq_no, term, version, source
CREATE FUNCTION pg_temp.docs(idx text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(CASE WHEN (g->>'found')::boolean
                         THEN format('%s@%s/%s v%s %s', id, g->>'_seq_no', g->>'_primary_term',
                                     g->>'_version', g->'_source')
                         ELSE id || ' -' END, ', ' ORDER BY id)
    FROM generate_series(1, 4) id, search_engine.get_doc(idx, id::text) g $$;
SELECT i, pg_temp.docs(i), pg_temp.docs(i) = pg_temp.docs('rp') AS same_as_primary,
       search_engine.count(i) AS docs
  FROM (VALUES ('rp'), ('rc_in_order'), ('rc_reversed'), ('rc_one_by_one')) v(i);

-- applying them again changes nothing (duplicates are only marked processed)
SELECT search_engine._replica_apply_from('rp', 'rc_reversed', 0, 1, 3, false);
SELECT search_engine.refresh('rc_reversed')->'_shards'->>'failed';
SELECT pg_temp.docs('rc_reversed') = pg_temp.docs('rp') AS still_same,
       search_engine.count('rc_reversed') AS docs;

-- a newer term is taken; an older one is refused afterwards
SELECT search_engine._replica_apply_from('rp', 'rc_in_order', 0, 2, 100, false);
SELECT search_engine._replica_apply_from('rp', 'rc_in_order', 0, 1, 100, false);

-- replica operations of a primary with no such copy here
SELECT search_engine._replica_apply_from('rp', 'no_such_index', 0, 1, 100, false);

SELECT search_engine.delete_index(i)->>'acknowledged'
  FROM (VALUES ('rp'), ('rc_in_order'), ('rc_reversed'), ('rc_one_by_one')) v(i);
