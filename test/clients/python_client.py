#!/usr/bin/env python3
"""Drive search_engine's HTTP endpoint with Debian's python3-elasticsearch
(7.17), unchanged, as TAP test 330 asks: index creation, helpers.bulk and
helpers.streaming_bulk against a tiny write queue with max_retries (items
rejected with 429 are retried), helpers.scan (scroll + clear_scroll),
search, update_by_query with wait_for_completion=False and the tasks API.

Prints one "name value" line per figure the Perl test checks; any client
error is raised (non-zero exit, traceback on stderr).

usage: python_client.py URL DOCS
"""
import sys
import time

from elasticsearch import Elasticsearch, helpers

url, ndocs = sys.argv[1], int(sys.argv[2])
es = Elasticsearch([url], timeout=120, max_retries=0)


def say(name, value):
    print(name, value, flush=True)


info = es.info()
say("version", info["version"]["number"])
say("tagline", info["tagline"])

# 8 shards: one bulk touches all of them, more than the queue admits
es.indices.create(index="py", body={
    "settings": {"number_of_shards": 8, "number_of_replicas": 0},
    "mappings": {"properties": {"n": {"type": "long"}, "title": {"type": "text"},
                                "tag": {"type": "keyword"}}}})

retries = {"n": 0}


def docs(prefix, count):
    for i in range(count):
        yield {"_index": "py", "_id": "%s-%d" % (prefix, i),
               "_source": {"n": i, "title": "document %d of %s" % (i, prefix),
                           "tag": prefix}}


# helpers.bulk: all items indexed despite 429s, stats_only counts them.
# raise_on_error=False: with 7.17's default (True) the helper raises on the
# first chunk with a failed item before its retry loop sees the 429s.
ok, failed = helpers.bulk(es, docs("bulk", ndocs), chunk_size=500, max_retries=20,
                          initial_backoff=0.05, max_backoff=0.5, stats_only=True,
                          raise_on_error=False)
say("bulk_ok", ok)
say("bulk_failed", failed)

# streaming_bulk: each item's own result; a 429 item is retried, not yielded
# as a failure, until it is indexed
statuses = {}
for okay, item in helpers.streaming_bulk(es, docs("stream", ndocs), chunk_size=500,
                                         max_retries=20, initial_backoff=0.05,
                                         max_backoff=0.5, raise_on_error=False):
    st = item["index"]["status"]
    statuses[st] = statuses.get(st, 0) + 1
say("stream_statuses", ",".join("%s:%d" % kv for kv in sorted(statuses.items())))

es.indices.refresh(index="py")
say("count", es.count(index="py")["count"])

# the rejections happened: the write pool's rejected counter moved
tp = es.nodes.stats(node_id="_local", metric="thread_pool")
say("write_rejected", sum(n["thread_pool"]["write"]["rejected"]
                          for n in tp["nodes"].values()))

# helpers.scan: every document once, through scroll pages of 300
seen = set()
for hit in helpers.scan(es, index="py", query={"query": {"term": {"tag": "stream"}}},
                        size=300, scroll="1m"):
    seen.add(hit["_id"])
say("scan", len(seen))
# again: with search_engine.max_open_scroll_context at one scroll's shard
# contexts, this only opens if the first scan cleared its scroll
again = sum(1 for _ in helpers.scan(es, index="py", query={"query": {"term": {"tag": "bulk"}}},
                                    size=1000, scroll="1m"))
say("scan_again", again)

res = es.search(index="py", body={"query": {"match": {"title": "document 7"}}, "size": 3})
say("search_total", res["hits"]["total"]["value"])
say("search_top_has_7", int(any(h["_source"]["n"] == 7 for h in res["hits"]["hits"])))

# update_by_query in the background, then poll the task to completion
t = es.update_by_query(index="py", body={
    "query": {"term": {"tag": "bulk"}},
    "script": {"source": "ctx._source.tag = 'updated'", "lang": "painless"}},
    wait_for_completion=False, conflicts="proceed")
task_id = t["task"]
say("task_id_form", int(":" in task_id))
deadline = time.time() + 120
while True:
    task = es.tasks.get(task_id=task_id)
    if task.get("completed"):
        break
    if time.time() > deadline:
        raise SystemExit("task %s not completed in 120 s: %r" % (task_id, task))
    time.sleep(0.2)
say("task_updated", task["response"]["updated"])
say("task_failures", len(task["response"].get("failures", [])))
es.indices.refresh(index="py")
say("updated_count", es.count(index="py", body={"query": {"term": {"tag": "updated"}}})["count"])
say("tasks_list_ok", int("nodes" in es.tasks.list()))
