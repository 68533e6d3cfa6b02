#!/usr/bin/env python3
"""A small in-memory etcd v3 JSON gateway for test_etcd.c (stdlib only).

It keeps a revisioned key-value store with leases, transactions, history,
compaction and prefix watches, and answers the gateway's JSON (keys and
values base64, int64s as strings, zero values left out).  It prints its port
on stdout, then serves until stdin closes (the test program holds the pipe).

Faults are armed through POST /fake/control with a JSON object:
  {"fail": N, "status": 500}   the next N requests get that HTTP status
  {"hang": N, "ms": 3000}      the next N requests stall ms before answering
  {"watch": "split"}           each watch message is sent in two chunks
  {"watch": "pair"}            two watch messages in one chunk
  {"watch": "close"}           after the created ack, half a message, then close
  {"watch": "error:MESSAGE"}   refuse the watch with a stream error (as the
                               gateway relays one: HTTP 200, {"error": {...}})
  {"watch": "normal"}
GET /fake/stats answers {"connections": N, "requests": N, "watches": N,
"no_hasleader": N} (requests that did not ask for a member with a leader).
"""
import base64
import json
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Condition()
store = {}          # key bytes -> dict(value, create, mod, version, lease)
history = []        # (revision, type, kv dict) for watches
revision = 1
compacted = 0
leases = {}         # id -> [ttl, deadline]
next_lease = 7000
faults = {"fail": 0, "status": 500, "hang": 0, "ms": 0, "watch": "normal"}
stats = {"connections": 0, "requests": 0, "watches": 0, "no_hasleader": 0}
CLUSTER = {"cluster_id": "14841639068965178418", "member_id": "10276657743932975437",
           "raft_term": "2"}


def b64(b):
    return base64.b64encode(b).decode()


def unb64(s):
    return base64.b64decode(s or "")


def header():
    return dict(CLUSTER, revision=str(revision))


def kv_json(key, e):
    out = {"key": b64(key), "create_revision": str(e["create"]),
           "mod_revision": str(e["mod"]), "version": str(e["version"])}
    if e["value"]:
        out["value"] = b64(e["value"])
    if e["lease"]:
        out["lease"] = str(e["lease"])
    return out


def in_range(key, start, end):
    if not end:
        return key == start
    if end == b"\0":
        return key >= start
    return start <= key < end


def expire_leases():
    now = time.monotonic()
    for lid in [l for l, v in leases.items() if v[1] <= now]:
        revoke(lid)


def revoke(lid):
    del leases[lid]
    keys = [k for k, e in store.items() if e["lease"] == lid]
    if keys:
        write_begin()
        for k in keys:
            delete_key(k)


pending_rev = None


def write_begin():
    """One revision per write transaction, as etcd does."""
    global revision, pending_rev
    if pending_rev is None:
        revision += 1
        pending_rev = revision


def write_end():
    global pending_rev
    pending_rev = None
    lock.notify_all()


def put_key(key, value, lease):
    write_begin()
    e = store.get(key)
    if e is None:
        e = {"create": revision, "version": 0}
    e.update(value=value, mod=revision, version=e["version"] + 1, lease=lease)
    store[key] = e
    history.append((revision, "PUT", kv_json(key, e), key))


def delete_key(key):
    write_begin()
    del store[key]
    history.append((revision, "DELETE", {"key": b64(key), "mod_revision": str(revision)}, key))


def do_range(req):
    start, end = unb64(req.get("key")), unb64(req.get("range_end"))
    kvs = [kv_json(k, store[k]) for k in sorted(store) if in_range(k, start, end)]
    out = {"header": header()}
    if kvs:
        out["kvs"] = kvs
        out["count"] = str(len(kvs))
    return out


def do_put(req):
    lease = int(req.get("lease", 0))
    if lease and lease not in leases:
        raise EtcdError(404, "etcdserver: requested lease not found")
    put_key(unb64(req.get("key")), unb64(req.get("value")), lease)
    return {"header": header()}


def do_delete(req):
    start, end = unb64(req.get("key")), unb64(req.get("range_end"))
    keys = [k for k in sorted(store) if in_range(k, start, end)]
    for k in keys:
        delete_key(k)
    out = {"header": header()}
    if keys:
        out["deleted"] = str(len(keys))
    return out


def compare(c):
    e = store.get(unb64(c.get("key")))
    target = c.get("target", "VERSION")
    if target == "VALUE":
        have, want = (e["value"] if e else b""), unb64(c.get("value"))
    else:
        field = {"CREATE": ("create", "create_revision"), "MOD": ("mod", "mod_revision"),
                 "VERSION": ("version", "version"), "LEASE": ("lease", "lease")}[target]
        have, want = (e[field[0]] if e else 0), int(c.get(field[1], 0))
    return {"EQUAL": have == want, "NOT_EQUAL": have != want,
            "GREATER": have > want, "LESS": have < want}[c.get("result", "EQUAL")]


def do_txn(req):
    ok = all(compare(c) for c in req.get("compare", []))
    responses = []
    for op in req.get("success" if ok else "failure", []):
        if "request_put" in op:
            responses.append({"response_put": do_put(op["request_put"])})
        elif "request_delete_range" in op:
            responses.append({"response_delete_range": do_delete(op["request_delete_range"])})
        else:
            responses.append({"response_range": do_range(op["request_range"])})
    out = {"header": header(), "responses": responses}
    if ok:
        out["succeeded"] = True
    return out


def do_grant(req):
    global next_lease
    ttl = int(req.get("TTL", 0))
    next_lease += 1
    leases[next_lease] = [ttl, time.monotonic() + ttl]
    return {"header": header(), "ID": str(next_lease), "TTL": str(ttl)}


def do_keepalive(req):
    lid = int(req.get("ID", 0))
    out = {"header": header(), "ID": str(lid)}
    if lid in leases:
        leases[lid][1] = time.monotonic() + leases[lid][0]
        out["TTL"] = str(leases[lid][0])
    return {"result": out}


def do_revoke(req):
    lid = int(req.get("ID", 0))
    if lid not in leases:
        raise EtcdError(404, "etcdserver: requested lease not found")
    revoke(lid)
    return {"header": header()}


def do_compaction(req):
    global compacted
    rev = int(req.get("revision", 0))
    if rev <= compacted:
        raise EtcdError(400, "etcdserver: mvcc: required revision has been compacted")
    compacted = rev
    history[:] = [h for h in history if h[0] >= rev]
    return {"header": header()}


class EtcdError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


UNARY = {"/v3/kv/range": do_range, "/v3/kv/put": do_put, "/v3/kv/deleterange": do_delete,
         "/v3/kv/txn": do_txn, "/v3/lease/grant": do_grant,
         "/v3/lease/keepalive": do_keepalive, "/v3/lease/revoke": do_revoke,
         "/v3/kv/compaction": do_compaction}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        with lock:
            stats["connections"] += 1

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            self.send_json(200, dict(stats))

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        req = json.loads(body or b"{}")
        if self.path == "/fake/control":
            with lock:
                faults.update(req)
            return self.send_json(200, {})
        with lock:
            stats["requests"] += 1
            # (compaction is the test's own call, not the client's)
            if self.headers.get("Grpc-Metadata-hasleader") != "true" and \
                    self.path != "/v3/kv/compaction":
                stats["no_hasleader"] += 1
            fail, hang = faults["fail"] > 0, faults["hang"] > 0
            if fail:
                faults["fail"] -= 1
            elif hang:
                faults["hang"] -= 1
        if fail:
            return self.send_json(faults["status"], {"error": "injected failure",
                                                     "message": "injected failure", "code": 14})
        if hang:
            time.sleep(faults["ms"] / 1000.0)
        if self.path == "/v3/watch":
            with lock:
                stats["watches"] += 1
            return self.watch(req["create_request"])
        handler = UNARY.get(self.path)
        if handler is None:
            return self.send_json(404, {"error": "Not Found", "message": "Not Found", "code": 5})
        with lock:
            expire_leases()
            try:
                out = handler(req)
            except EtcdError as e:
                return self.send_json(e.status, {"error": e.message, "message": e.message,
                                                 "code": 5})
            finally:
                write_end()
        self.send_json(200, out)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, req):
        start, end = unb64(req.get("key")), unb64(req.get("range_end"))
        start_rev = int(req.get("start_revision", 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        mode = faults["watch"]
        msgs = []
        if mode.startswith("error:"):
            self.chunk(json.dumps({"error": {"grpc_code": 14, "http_code": 503,
                                             "message": mode[6:],
                                             "http_status": "Service Unavailable"}}).encode())
            self.chunk(b"")
            return

        def send(obj):
            data = json.dumps({"result": obj}).encode() + b"\n"
            if mode == "split":
                cut = len(data) // 2
                self.chunk(data[:cut])
                time.sleep(0.05)
                self.chunk(data[cut:])
            elif mode == "pair":
                msgs.append(data)
                if len(msgs) == 2:
                    self.chunk(b"".join(msgs))
                    msgs.clear()
            else:
                self.chunk(data)

        with lock:
            hdr = header()
            if start_rev == 0:
                start_rev = revision + 1
            compact = start_rev < compacted
        send({"header": hdr, "created": True})
        if mode == "close":
            self.chunk(b'{"result":{"header":{"revision":"')
            self.wfile.flush()
            self.close_connection = True
            return
        if compact:
            send({"header": hdr, "compact_revision": str(compacted), "canceled": True})
            if msgs:
                self.chunk(b"".join(msgs))
            self.chunk(b"")
            return
        next_rev = start_rev
        try:
            while True:
                with lock:
                    while not any(h[0] >= next_rev for h in history):
                        lock.wait(0.5)
                        expire_leases()
                        write_end() if pending_rev else None
                    rev = min(h[0] for h in history if h[0] >= next_rev)
                    evs = [dict({"kv": h[2]}, **({"type": "DELETE"} if h[1] == "DELETE" else {}))
                           for h in history if h[0] == rev and in_range(h[3], start, end)]
                    hdr = dict(header(), revision=str(rev))
                next_rev = rev + 1
                if evs:
                    send({"header": hdr, "events": evs})
        except (BrokenPipeError, ConnectionResetError):
            pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()            # the test program exited or closed the pipe


if __name__ == "__main__":
    main()
