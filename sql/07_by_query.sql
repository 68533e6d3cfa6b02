-- Update/delete-by-query, reindex, scripts and the tasks API.
SELECT search_engine.create_index('ubq', '{"settings": {"number_of_shards": 2, "number_of_replicas": 0},
  "mappings": {"properties": {"n": {"type": "integer"}, "tag": {"type": "keyword"}, "tags": {"type": "keyword"}, "title": {"type": "text"}}}}')->'acknowledged';
SELECT search_engine.bulk((SELECT string_agg(format(E'{"index": {"_id": "%s"}}\n{"n": %s, "tag": "%s", "tags": ["a"], "title": "doc %s"}',
                                                    i, i, CASE WHEN i % 3 = 0 THEN 'three' ELSE 'other' END, i), E'\n')
                           FROM generate_series(1, 60) i), 'ubq', refresh => 'true')->'errors';

-- a painless script on the documents a term query matches
SELECT r - 'took' FROM search_engine.update_by_query('ubq',
  '{"query": {"term": {"tag": "three"}}, "script": {"source": "ctx._source.n += params.inc; ctx._source.tags.add(\"b\")", "params": {"inc": 1000}}}',
  refresh => true) AS r;
-- exactly the matched documents changed
SELECT search_engine.count('ubq', '{"query": {"range": {"n": {"gt": 1000}}}}') AS bumped,
       search_engine.count('ubq', '{"query": {"term": {"tags": "b"}}}') AS tagged,
       search_engine.count('ubq', '{"query": {"term": {"tag": "three"}}}') AS three;
SELECT search_engine.get_doc('ubq', '3')->'_source', search_engine.get_doc('ubq', '3')->'_version';

-- noop and delete from a script, with slices
SELECT r->'total', r->'updated', r->'noops', r->'deleted', jsonb_array_length(r->'slices') FROM search_engine.update_by_query('ubq',
  '{"script": {"source": "if (ctx._source.n > 1000) { ctx.op = \"noop\" } else if (ctx._source.n <= 5) { ctx.op = \"delete\" } else { ctx._source.seen = true }"}}',
  slices => '3', refresh => true) AS r;
SELECT search_engine.count('ubq') AS left, search_engine.count('ubq', '{"query": {"exists": {"field": "seen"}}}') AS seen;

-- a script error fails that document only, and is reported with its position
SELECT r->'updated', r->'failures'->0->'cause'->>'type', r->'failures'->0->'cause'->>'reason' FROM search_engine.update_by_query('ubq',
  '{"query": {"ids": {"values": ["10", "11"]}}, "script": {"source": "if (ctx._id == \"10\") { ctx._source.missing.x = 1 } else { ctx._source.ok = 1 }"}}') AS r;
-- compile errors are refused up front
SELECT search_engine.update_by_query('ubq', '{"script": {"source": "ctx._source.n += ;"}}');

-- lang sql: an expression over $1 returning the new _source, NULL = noop
SELECT r->'updated', r->'noops' FROM search_engine.update_by_query('ubq',
  $${"query": {"range": {"n": {"lte": 20}}}, "script": {"lang": "sql", "source": "CASE WHEN ($1->>'n')::int % 2 = 0 THEN $1 || jsonb_build_object('even', true) END"}}$$,
  refresh => true) AS r;
SELECT search_engine.count('ubq', '{"query": {"exists": {"field": "even"}}}');

-- delete by query
SELECT r->'deleted', r->'total' FROM search_engine.delete_by_query('ubq', '{"query": {"term": {"tag": "three"}}}', slices => 'auto', refresh => true) AS r;
SELECT search_engine.count('ubq', '{"query": {"term": {"tag": "three"}}}');

-- many more slices than shards: every document exactly once
SELECT r->'total' = to_jsonb(search_engine.count('ubq')) AS all_once, r->'updated' = r->'total' AS all_updated, jsonb_array_length(r->'slices')
  FROM search_engine.update_by_query('ubq', '{"script": "ctx._source.pass = (ctx._source.pass ?: 0) + 1"}', slices => '50', refresh => true) AS r;
SELECT search_engine.count('ubq', '{"query": {"term": {"pass": 1}}}') = search_engine.count('ubq') AS each_once;

-- max_docs
SELECT r->'total' FROM search_engine.update_by_query('ubq', '{"max_docs": 4}', refresh => true) AS r;

-- reindex with a script
SELECT r->'created', r->'total' FROM search_engine.reindex(
  '{"source": {"index": "ubq", "query": {"range": {"n": {"lt": 30}}}}, "dest": {"index": "ubq_copy"}, "script": {"source": "ctx._source.copied = true"}}',
  refresh => true) AS r;
SELECT search_engine.count('ubq_copy', '{"query": {"term": {"copied": true}}}') = search_engine.count('ubq', '{"query": {"range": {"n": {"lt": 30}}}}') AS same;

-- wait_for_completion = false returns a task; get_task waits for it
SELECT (search_engine.update_by_query('ubq', '{}', refresh => true, wait_for_completion => false)->>'task') AS task \gset
SELECT t->'completed', t->'task'->>'action', t->'response'->'total' FROM search_engine.get_task(:'task', true) t;
SELECT status, action, total = updated + noops AS consistent FROM search_engine.tasks WHERE task_id = :'task';
SELECT status, body->'completed' FROM search_engine.request('GET', '/_tasks/' || :'task');

-- REST forms
SELECT status, body->'updated' FROM search_engine.request('POST', '/ubq/_update_by_query?conflicts=proceed&slices=auto&refresh=true', '{"query": {"ids": {"values": ["20"]}}, "script": "ctx._source.rest = 1"}');
SELECT status, body ? 'task' FROM search_engine.request('POST', '/ubq/_delete_by_query?wait_for_completion=false', '{"query": {"ids": {"values": ["20"]}}}');
SELECT status, body->'error'->>'type' FROM search_engine.request('POST', '/_tasks/nonode:1/_cancel');
SELECT status, body->'error'->>'type' FROM search_engine.request('GET', '/_tasks/' || split_part(:'task', ':', 1) || ':999999');
SELECT status, body->'error'->>'type' FROM search_engine.request('POST', '/nope/_update_by_query');
SELECT status, body->'error'->>'type' FROM search_engine.request('POST', '/ubq/_update_by_query?conflicts=maybe');
SELECT status, body->'error'->>'type' FROM search_engine.request('POST', '/ubq/_delete_by_query', '{"script": "ctx.op = 1"}');

-- throttled tasks do not hold the task workers while they wait: two tasks
-- at 0.01 requests per second (over every task worker's slice slots)
-- leave room for a third job, which finishes at once
SELECT (search_engine.update_by_query('ubq', '{}', slices => '4', scroll_size => 1, conflicts => 'proceed',
        requests_per_second => 0.01, wait_for_completion => false)->>'task') AS slow1 \gset
SELECT (search_engine.update_by_query('ubq', '{}', slices => '4', scroll_size => 1, conflicts => 'proceed',
        requests_per_second => 0.01, wait_for_completion => false)->>'task') AS slow2 \gset
SET statement_timeout = '30s';
SELECT r->'total' = r->'updated' AS third_done
  FROM search_engine.update_by_query('ubq_copy', '{}', slices => '2') AS r;
RESET statement_timeout;
SELECT count(*) AS throttled_running FROM search_engine.tasks
 WHERE task_id IN (:'slow1', :'slow2') AND status = 'running';
SELECT (search_engine.cancel_task(:'slow1') IS NOT NULL) AND (search_engine.cancel_task(:'slow2') IS NOT NULL) AS cancelled;
SELECT t->'completed', t->'response'->>'canceled' FROM search_engine.get_task(:'slow1', true) t;
SELECT t->'completed', t->'response'->>'canceled' FROM search_engine.get_task(:'slow2', true) t;

-- reindex into one of its sources is refused up front
SELECT status, body->'error'->>'type' AS type, body->'error'->>'reason' AS reason
  FROM search_engine.request('POST', '/_reindex', '{"source": {"index": "ubq,ubq_copy"}, "dest": {"index": "ubq_copy"}}');
-- an index deleted under an update-by-query stays deleted: the task's
-- writes report it missing instead of re-creating it
SELECT search_engine.bulk(string_agg(format(E'{"index": {"_index": "ubq_gone", "_id": "%s"}}\n{"n": %s}', i, i), E'\n') || E'\n',
                          refresh => 'true')::jsonb->>'errors' AS errors
  FROM generate_series(1, 20) i;
SELECT (search_engine.update_by_query('ubq_gone', '{}', scroll_size => 1, requests_per_second => 2,
        wait_for_completion => false)->>'task') AS gone_task \gset
SELECT search_engine.delete_index('ubq_gone')->>'acknowledged' AS deleted;
-- (the slice sees the index gone, or its shards already closed)
SELECT t->'response'->'failures'->0->'cause'->>'type'
         IN ('index_not_found_exception', 'no_shard_available_action_exception') AS failed_missing,
       (t->'response'->>'updated')::int < 20 AS stopped
  FROM search_engine.get_task(:'gone_task', true) t;
SELECT count(*) AS recreated FROM search_engine.indices WHERE index = 'ubq_gone';
