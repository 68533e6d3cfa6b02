#!/usr/bin/env python3
"""The Python-client side of bench/http_clients_bench.sh (issue 18), with
Debian's python3-elasticsearch 7.17 unchanged.

  ingest URL INDEX JSONL            helpers.parallel_bulk (2 threads, 1000 per
                                    request); prints seconds
  search URL INDEX QUERIES ROUNDS   top-10 match queries, one keep-alive
                                    connection; prints one latency (ms) a line
  sqlsearch INDEX QUERIES ROUNDS    the same searches as psql statements
                                    (\\timing gives the client-side time)
  reject URL INDEX JSONL CLIENTS BATCH
                                    CLIENTS processes, each its own client and
                                    connection, streaming_bulk of its share of
                                    the corpus with max_retries: prints seconds
                                    and the items the helpers sent (retries
                                    included)
  sqlfiles INDEX JSONL CLIENTS BATCH DIR MAX_RETRIES
                                    the same shares as psql scripts calling
                                    search_engine.bulk(max_retries => ...)
"""
import json
import sys
import threading
import time

from elasticsearch import Elasticsearch, helpers


def docs(path):
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            yield d


def doc_id(d):
    return "%s_%s_%s" % (d["package"], d["version"], d["architecture"])


def actions(index, ds):
    for d in ds:
        yield {"_index": index, "_id": doc_id(d), "_source": d}


def preserialized(index, ds):
    # a shipper's lines are JSON already: the client's serializer passes a
    # string through, so the clients spend their CPU on the HTTP exchange
    for d in ds:
        yield {"_index": index, "_id": doc_id(d), "_source": json.dumps(d)}


def shares(path, clients):
    out = [[] for _ in range(clients)]
    for i, d in enumerate(docs(path)):
        out[i % clients].append(d)
    return out


mode = sys.argv[1]
if mode == "ingest":
    url, index, path = sys.argv[2:5]
    es = Elasticsearch([url], timeout=300)
    t0 = time.time()
    n = 0
    for ok, item in helpers.parallel_bulk(es, actions(index, docs(path)), thread_count=2,
                                          chunk_size=1000, queue_size=4):
        if not ok:
            raise SystemExit("item failed: %r" % item)
        n += 1
    print("%.3f %d" % (time.time() - t0, n))
elif mode == "search":
    url, index, qpath, rounds = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    es = Elasticsearch([url], timeout=60)
    queries = [q.strip() for q in open(qpath) if q.strip()]
    es.info()
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            r = es.search(index=index, query={"match": {"description": q}}, size=10)
            dt = time.perf_counter() - t0
            assert len(r["hits"]["hits"]) > 0, q
            print("%.3f" % (dt * 1000))
elif mode == "sqlsearch":
    index, qpath, rounds = sys.argv[2], sys.argv[3], int(sys.argv[4])
    queries = [q.strip() for q in open(qpath) if q.strip()]
    print("\\timing on")
    for _ in range(rounds):
        for q in queries:
            body = json.dumps({"query": {"match": {"description": q}}, "size": 10})
            print("SELECT jsonb_array_length(search_engine.search('%s', $q$%s$q$)->'hits'->'hits') > 0;"
                  % (index, body))
elif mode == "reject":
    # one process per client, as separate shippers are (threads of one
    # Python process would share its interpreter lock and send less)
    import multiprocessing

    url, index, path, clients, batch = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
    parts = shares(path, clients)

    def run(k, res):
        es = Elasticsearch([url], timeout=300)
        sent = failed = 0
        for ok, item in helpers.streaming_bulk(es, preserialized(index, parts[k]), chunk_size=batch,
                                               max_retries=1000, initial_backoff=0.01,
                                               max_backoff=0.2, raise_on_error=False):
            sent += 1
            if not ok:
                failed += 1
        res.put((sent, failed))

    res = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=run, args=(k, res)) for k in range(clients)]
    t0 = time.time()
    for p in procs:
        p.start()
    got = [res.get() for _ in procs]
    for p in procs:
        p.join()
    print("%.3f %d %d" % (time.time() - t0, sum(g[0] for g in got), sum(g[1] for g in got)))
elif mode == "sqlfiles":
    index, path, clients, batch, out, retries = (sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                                 int(sys.argv[5]), sys.argv[6], int(sys.argv[7]))
    for k, part in enumerate(shares(path, clients)):
        with open("%s/client%d.sql" % (out, k), "w") as f:
            f.write("\\set ON_ERROR_STOP on\n")
            for i in range(0, len(part), batch):
                body = "".join(json.dumps({"index": {"_id": doc_id(d)}}) + "\n" + json.dumps(d) + "\n"
                               for d in part[i:i + batch])
                f.write("SELECT (search_engine.bulk($b$%s$b$, '%s', max_retries => %d))->>'errors';\n"
                        % (body, index, retries))
else:
    raise SystemExit(__doc__)
