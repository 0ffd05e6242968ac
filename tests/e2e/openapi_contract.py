#!/usr/bin/python3
"""Walks docs/openapi.yaml against real snowflaked daemons.

1. Every documented response (path, method, status) is produced by a real
   request, and the answer matches the document: media type, the documented
   headers and their schemas, and the body against its JSON schema
   (python3-jsonschema, Draft 2020-12, which OpenAPI 3.1 uses).
2. Nothing undocumented: every answer to a sweep of methods and targets over
   every route (and paths that are no route) has its status documented.
3. Every example in the document validates against its schema, and
   GET /openapi.yaml serves exactly the document.

Usage: openapi_contract.py SNOWFLAKED OPENAPI_YAML
"""

import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import jsonschema
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import snowflaked_daemon  # noqa: E402
import zookeeper_server  # noqa: E402

BINARY, DOCUMENT = sys.argv[1], sys.argv[2]
with open(DOCUMENT, encoding="utf-8") as f:
    DOC_TEXT = f.read()
DOC = yaml.safe_load(DOC_TEXT)
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what)


def deref(node):
    """Follows $ref (local ones, as this document uses) to the node itself."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        target = DOC
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
        seen += 1
        assert seen < 10, "a $ref cycle"
    return node


def validator(schema):
    # The whole document is the root, so the schema's $refs resolve in it.
    resolver = jsonschema.RefResolver(base_uri="", referrer=DOC)
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


def check_schema(schema, value, where):
    errors = list(validator(schema).iter_errors(value))
    for e in errors:
        fail(f"{where}: {e.message} at {list(e.absolute_path)}")


# --- daemons --------------------------------------------------------------

def Daemon(config, workdir, name):  # noqa: N802 (a class elsewhere)
    return snowflaked_daemon.Daemon(BINARY, config, workdir, name)


def exchange(port, raw, read_timeout=10.0):
    """Sends raw bytes; returns (status, headers, body) of the one answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        if raw:
            s.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        is_head = raw.startswith(b"HEAD ")
        while not is_head and len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body


def request(port, method, target, headers=None, body=b""):
    lines = [f"{method} {target} HTTP/1.1", "Host: test", "Connection: close"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return exchange(port, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


# Waits in the kernel (x86-64 numbers): futex, restart_syscall (a futex or
# sleep cut by the stop), epoll_wait, poll, clock_nanosleep. A thread stopped
# in one holds no lock; one stopped anywhere else may hold one the rest of the
# daemon needs (a log sink's, the allocator's, a sanitizer's), and then
# nothing answers at all.
IDLE_SYSCALLS = {"202", "219", "232", "7", "230"}


def stop_thread(pid, name):
    """Stops the thread of `pid` named `name` (ptrace stops only that thread;
    SIGSTOP would stop them all) while it waits in the kernel, until
    resume_thread; returns its id."""
    tid = None
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm", encoding="utf-8") as f:
                if f.read().strip() == name:
                    tid = int(task)
        except FileNotFoundError:
            pass  # a short-lived thread (a range fetch, say) ended after the listing
    if tid is None:
        raise LookupError(f"no thread named {name} in {pid}")
    ptrace_seize, ptrace_interrupt, ptrace_detach, wall = 0x4206, 0x4207, 17, 0x40000000
    deadline = time.monotonic() + 20
    while True:
        if LIBC.ptrace(ptrace_seize, tid, None, None) != 0 or \
                LIBC.ptrace(ptrace_interrupt, tid, None, None) != 0:
            raise OSError(ctypes.get_errno(), f"ptrace of thread {name}")
        os.waitpid(tid, wall)
        with open(f"/proc/{pid}/task/{tid}/syscall", encoding="utf-8") as f:
            if f.read().split()[0] in IDLE_SYSCALLS:
                return tid
        LIBC.ptrace(ptrace_detach, tid, None, None)
        if time.monotonic() > deadline:
            raise TimeoutError(f"thread {name} never waited in the kernel")
        time.sleep(0.01)


def resume_thread(tid):
    ptrace_detach = 17
    LIBC.ptrace(ptrace_detach, tid, None, None)


# --- checking one answer against the document -------------------------------

def operation_of(item, method):
    """The operation a method falls under: its own (HEAD: GET's), else the
    one listed for every other method ("Every method but ...")."""
    name = "get" if method in ("GET", "HEAD") else method.lower()
    if name in item:
        return name
    for other, op in item.items():
        if other != "parameters" and op.get("description", "").startswith("Every method but"):
            return other
    return None


def documented_response(template, method, status):
    item = DOC["paths"].get(template) if template else None
    if item is None:  # no route: the document's NotFound
        return deref({"$ref": "#/components/responses/NotFound"}) if status == 404 else None
    name = operation_of(item, method)
    response = item[name]["responses"].get(str(status)) if name else None
    return deref(response) if response else None


def check_answer(template, method, answer, where):
    status, headers, body = answer
    response = documented_response(template, method, status)
    if response is None:
        fail(f"{where}: status {status} is not documented for {method} {template}")
        return
    for name, header in response.get("headers", {}).items():
        header = deref(header)
        value = headers.get(name.lower())
        if value is None:
            fail(f"{where}: documented header {name} missing")
        else:
            check_schema(header["schema"], value, f"{where} header {name}")
    media = headers.get("content-type", "").split(";")[0].strip()
    content = response.get("content", {})
    if media not in content:
        fail(f"{where}: content type {media!r} is not one of {sorted(content)}")
        return
    if method == "HEAD":
        if body:
            fail(f"{where}: HEAD has a body")
        return
    schema = content[media].get("schema", {})
    if media == "application/json":
        try:
            value = json.loads(body)
        except ValueError:
            fail(f"{where}: body is not JSON: {body[:200]!r}")
            return
    else:
        value = body.decode("utf-8")
    check_schema(schema, value, f"{where} body")


# --- the walk ---------------------------------------------------------------

def main():
    # 3. The examples, and the document the binary serves.
    for template, item in DOC["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            for status, response in op["responses"].items():
                for media, content in deref(response).get("content", {}).items():
                    examples = [e["value"] for e in content.get("examples", {}).values()]
                    if "example" in content:
                        examples.append(content["example"])
                    for example in examples:
                        check_schema(content.get("schema", {}), example,
                                     f"example of {method} {template} {status} {media}")

    work = tempfile.mkdtemp(prefix="openapi-contract-")
    healthy = Daemon({"coordinator": {"type": "static", "static_worker_id": 5},
                      "http": {"max_batch": 100, "tag_allowlist": ["order", "user"],
                               "request_timeout_ms": 300, "leaf_compat": True}}, work, "healthy")
    # A migration floor an hour ahead: 503 floor_ahead until then.
    hour_ahead = ((int(time.time() * 1000) + 3_600_000 - 1735689600000) << 22)
    # Stopped last of all with a long shutdown delay: 503 stopping (its
    # stop() is a second SIGTERM, which ends the delay).
    floored = Daemon({"coordinator": {"type": "static", "min_id": str(hour_ahead)},
                      "http": {"leaf_compat": True, "shutdown_delay_ms": 600000}},
                     work, "floored")
    # A recycle daemon whose ZooKeeper does not answer: it never owns a
    # worker ID, so /id and /ready answer 503.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    lapsed = Daemon({"coordinator": {"type": "recycle"},
                     "zookeeper": {"hosts": f"127.0.0.1:{dead}", "connect_timeout_ms": 200},
                     "http": {"leaf_compat": True}},
                    work, "no-zookeeper")
    # One whose heartbeat thread is stopped: /health turns 503 once it is
    # overdue by session_timeout_ms + connect_timeout_ms (1.2 s here).
    stuck = Daemon({"coordinator": {"type": "recycle"},
                    "zookeeper": {"hosts": f"127.0.0.1:{dead}", "session_timeout_ms": 1000,
                                  "connect_timeout_ms": 200}},
                   work, "stuck")
    # One serving dense sequences from a real ZooKeeper: "order" asked for,
    # "cold" never (503 with ZooKeeper paused).
    zk = zookeeper_server.ZooKeeperServer(work)
    sequences = Daemon({"coordinator": {"type": "static", "static_worker_id": 7},
                        "zookeeper": {"hosts": zk.hosts, "session_timeout_ms": 1000,
                                      "connect_timeout_ms": 500},
                        "sequences": {"enabled": True, "max_wait_ms": 300},
                        "http": {"leaf_compat": True}}, work, "sequences")
    # The operator's commands on the same cluster, with a connect timeout a
    # loaded machine meets (the daemon's 500 ms is for its outage above).
    with open(sequences.config_path, encoding="utf-8") as f:
        admin_config = json.load(f)
    admin_config["zookeeper"]["connect_timeout_ms"] = 10000
    admin_path = os.path.join(work, "sequences-admin.json")
    with open(admin_path, "w", encoding="utf-8") as f:
        json.dump(admin_config, f)
    for tag, start in (("order", "1000"), ("cold", "1"), ("retired", "1")):
        subprocess.run([BINARY, "seq", "create", tag, "--start", start, "--config", admin_path],
                       check=True, capture_output=True)
    # "printed": with a template (its numbers as printed, and as they are).
    subprocess.run([BINARY, "seq", "create", "printed", "--template", "ORD-{n:08}", "--config",
                    admin_path], check=True, capture_output=True)
    # "daily" restarts each day (its answers name the period); "tiny" has
    # one number a day (then 503 period_exhausted).
    for tag, bound in (("daily", "999999"), ("tiny", "1")):
        subprocess.run([BINARY, "seq", "create", tag, "--reset", "daily", "--time-zone", "UTC",
                        "--template", "INV-{yyyy}{MM}{dd}-{n:06}", "--max", bound, "--config",
                        admin_path], check=True, capture_output=True)
    # "chat": strict; this daemon, static, holds no worker ID to own it by
    # (503 not_owner, with no owner to name).
    subprocess.run([BINARY, "seq", "create", "chat", "--order", "strict", "--config", admin_path],
                   check=True, capture_output=True)
    # CosId's segments: "cosid.orders" plain, "cosid.strict", "cosid.few"
    # with one number (a step of 2 is 410).
    for tag, extra in (("cosid.orders", []), ("cosid.strict", ["--order", "strict"]),
                       ("cosid.few", ["--max", "1"])):
        subprocess.run([BINARY, "seq", "create", tag, *extra, "--config", admin_path],
                       check=True, capture_output=True)
    # "retired": raised past the last number (410 sequence_exhausted).
    subprocess.run([BINARY, "seq", "raise", "retired", "--above", "9223372036854775807",
                    "--config", admin_path], check=True, capture_output=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        tags = json.loads(request(sequences.port, "GET", "/status")[2])["sequences"]["tags"]
        if "order" in tags and "cold" in tags:
            break
        time.sleep(0.05)
    # One leasing the recycle pool's worker IDs, on the same ZooKeeper.
    leasing = Daemon({"coordinator": {"type": "recycle"},
                      "zookeeper": {"hosts": zk.hosts, "root": "/snowflake/leases"},
                      "http": {"request_timeout_ms": 300},
                      "leases": {"enabled": True}}, work, "leasing")
    # One for CosId's routes, with short leases: a machine ID reclaimed in
    # seconds (M-03).
    cosid = Daemon({"coordinator": {"type": "recycle", "heartbeat_interval_ms": 300,
                                    "lease_timeout_ms": 1500, "reclaim_after_ms": 2500,
                                    "safety_margin_ms": 500, "max_skew_ms": 200,
                                    "max_boot_wait_ms": 5000},
                    "zookeeper": {"hosts": zk.hosts, "root": "/snowflake/cosid",
                                  "session_timeout_ms": 2000, "connect_timeout_ms": 2000},
                    "http": {"request_timeout_ms": 300},
                    "leases": {"enabled": True}}, work, "cosid")
    # One with every form, an admin listener and an admin token; one with a
    # token but no admin listener (the operators' routes stay, opaque
    # decoding takes the token).
    with open(os.path.join(work, "opaque.key"), "w", encoding="utf-8") as f:
        f.write("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n")
    with open(os.path.join(work, "admin.token"), "w", encoding="utf-8") as f:
        f.write(TOKEN + "\n")
    forms = {"opaque_key_file": os.path.join(work, "opaque.key"),
             "tags": {"secret": "opaque", "event": "uuid"}}
    formed = Daemon({"coordinator": {"type": "static", "static_worker_id": 9}, "forms": forms,
                     "http": {"leaf_compat": True, "admin_listen": "127.0.0.1:0",
                              "admin_token_file": os.path.join(work, "admin.token")}}, work, "formed")
    tokened = Daemon({"coordinator": {"type": "static", "static_worker_id": 10}, "forms": forms,
                      "http": {"leaf_compat": True,
                               "admin_token_file": os.path.join(work, "admin.token")}},
                      work, "tokened")
    stopped = stop_thread(stuck.process.pid, "heartbeat")
    try:
        walk(healthy.port, lapsed.port, floored.port, stuck.port, sequences.port, zk,
             Admin(formed.port, formed.admin_port, tokened.port),
             lambda: floored.process.send_signal(signal.SIGTERM), leasing.port, cosid.port)
    finally:
        leasing.stop()
        cosid.stop()
        formed.stop()
        tokened.stop()
        healthy.stop()
        lapsed.stop()
        # Killed: its SIGTERM (sent by the walk, or not if it ended early)
        # began a ten-minute shutdown delay, and two signals sent at once
        # may arrive as one.
        floored.process.kill()
        floored.process.wait(20)
        resume_thread(stopped)  # before it exits: a traced thread is ours to reap
        stuck.stop()
        sequences.stop()
        zk.stop()

    if failures:
        print(f"{len(failures)} contract failure(s)")
        sys.exit(1)
    print("the daemon answers as docs/openapi.yaml says")


def template_of(target):
    """The documented path a target falls under, by the router's own rule:
    /id/, /seq/, /decode/ and Leaf's get routes are prefixes (a tag or ID with a slash is a bad one),
    the other routes exact paths; anything else is no route."""
    path = target.split("?")[0]
    if path.startswith("/id/"):
        return "/id/{tag}"
    if path.startswith("/decode/"):
        return "/decode/{id}"
    if path.startswith("/seq/"):
        return "/seq/{tag}"
    if path.startswith("/api/snowflake/get/"):
        return "/api/snowflake/get/{key}"
    if path.startswith("/api/segment/get/"):
        return "/api/segment/get/{key}"
    if path.startswith("/v1/leases/"):
        return "/v1/leases/{worker_id}"
    if path.startswith("/machines/"):
        return "/machines/{namespace}"
    if path.startswith("/segments/"):
        rest = path[len("/segments/"):]
        if rest.startswith("distributor/") and "/" in rest[len("distributor/"):]:
            return "/segments/distributor/{namespace}/{name}"
        return "/segments/{namespace}/{name}"
    return path if path in DOC["paths"] else None


TOKEN = "contract-test-admin-token-0123456789abcdef"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


class Admin:
    """The ports of the daemons with forms: `main` and `admin` of one with an
    admin listener and a token, `tokened` of one with a token only."""

    def __init__(self, main, admin, tokened):
        self.main, self.admin, self.tokened = main, admin, tokened


def walk(port, lapsed_port, floored_port, stuck_port, seq_port, zk, forms, stop_floored,
         lease_port, cosid_port):
    long_target = "/id/" + "a" * 2100
    many_fields = {f"X-{i}": "y" for i in range(101)}
    produced = set()  # (template, GET or POST, status)

    def probe(template, method, target, on=port, headers=None, body=b"", raw=None):
        answer = exchange(on, raw) if raw is not None else request(on, method, target, headers, body)
        item = DOC["paths"].get(template) if template else None
        name = operation_of(item, method) if item else "get"
        produced.add((template, (name or method).upper(), answer[0]))
        check_answer(template, method, answer, f"{method} {target[:60]}")
        return answer

    # 1. Every documented response, from a real request. The refusals before
    # routing (400 malformed, 408, 413, 414, 431) on every route.
    for template in DOC["paths"]:
        target = {"/id/{tag}": "/id/order", "/decode/{id}": "/decode/123456789",
                  "/api/snowflake/get/{key}": "/api/snowflake/get/order",
                  "/seq/{tag}": "/seq/order", "/api/segment/get/{key}": "/api/segment/get/order",
                  "/decodeSnowflakeId": "/decodeSnowflakeId?snowflakeId=123456789",
                  "/v1/leases/{worker_id}": "/v1/leases/3",
                  "/machines/{namespace}": "/machines/ns",
                  "/segments/{namespace}/{name}": "/segments/cosid/orders",
                  "/segments/distributor/{namespace}/{name}":
                      "/segments/distributor/cosid/orders"}.get(template, template)
        for method in ("GET", "HEAD", "POST", "PUT", "DELETE"):
            probe(template, method, target)
        probe(template, "GET", target, raw=f"GET {target} HTTP/1.1\r\nHost: test\r\nX: a\x01b\r\n\r\n".encode())
        probe(template, "GET", target, raw=f"GET {target} HTTP/1.1\r\nHost: test\r\n".encode())  # 408
        probe(template, "GET", target, body=b"abc")
        probe(template, "GET", target, headers=many_fields)
        probe(template, "GET", target, headers={"X-Big": "a" * 9000})
        probe(template, "GET", target + "?" + "a" * 2100)
    probe("/id/{tag}", "GET", "/id/order?count=3")
    probe("/id/{tag}", "GET", "/id/order?count=2&format=text")
    probe("/id/{tag}", "GET", "/id/user", headers={"Accept": "text/plain"})
    probe("/id/{tag}", "GET", "/id/bad%20tag")
    probe("/id/{tag}", "GET", "/id/order?count=101")
    probe("/id/{tag}", "GET", "/id/stranger")  # 404 unknown_tag
    probe("/id/{tag}", "GET", "/id/order", on=lapsed_port)  # 503 not_ready
    probe("/ready", "GET", "/ready", on=lapsed_port)
    probe("/decode/{id}", "GET", "/decode/x")
    probe("/id/{tag}", "GET", "/id/order", on=floored_port)  # 503 floor_ahead
    probe("/api/snowflake/get/{key}", "GET", "/api/snowflake/get/bad%20key")
    probe("/api/snowflake/get/{key}", "GET", "/api/snowflake/get/stranger")
    probe("/api/snowflake/get/{key}", "GET", "/api/snowflake/get/order", on=lapsed_port)
    # Sequences: served from ZooKeeper's ranges; 503 for a tag with nothing
    # buffered while ZooKeeper answers nothing.
    probe("/seq/{tag}", "GET", "/seq/order", on=seq_port)
    probe("/seq/{tag}", "GET", "/seq/order?count=3", on=seq_port)
    probe("/seq/{tag}", "GET", "/seq/order?count=2&format=text", on=seq_port)
    for target in ("/seq/printed", "/seq/printed?count=3", "/seq/printed?count=2&format=text"):
        answer = probe("/seq/{tag}", "GET", target, on=seq_port)
        if answer[0] != 200 or "ORD-0000000" not in answer[2].decode():
            failures.append(f"GET {target}: {answer[0]} {answer[2][:80]!r}, not printed numbers")
    for target in ("/seq/daily", "/seq/daily?count=3", "/seq/daily?count=2&format=text"):
        answer = probe("/seq/{tag}", "GET", target, on=seq_port)
        if answer[0] != 200 or "INV-" not in answer[2].decode():
            failures.append(f"GET {target}: {answer[0]} {answer[2][:80]!r}, not a period's numbers")
    probe("/seq/{tag}", "GET", "/seq/tiny", on=seq_port)
    deadline = time.monotonic() + 20  # once the daemon has listed the strict tags
    while time.monotonic() < deadline and b"not_owner" not in request(seq_port, "GET",
                                                                      "/seq/chat")[2]:
        time.sleep(0.05)
    probe("/seq/{tag}", "GET", "/seq/chat", on=seq_port)  # 503 not_owner
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and b"period_exhausted" not in request(
            seq_port, "GET", "/seq/tiny")[2]:
        time.sleep(0.05)
    probe("/seq/{tag}", "GET", "/seq/tiny", on=seq_port)  # 503 period_exhausted
    probe("/seq/{tag}", "GET", "/seq/bad%20tag", on=seq_port)
    probe("/seq/{tag}", "GET", "/seq/stranger", on=seq_port)
    probe("/api/segment/get/{key}", "GET", "/api/segment/get/order", on=seq_port)
    probe("/api/segment/get/{key}", "GET", "/api/segment/get/bad%20key", on=seq_port)
    probe("/api/segment/get/{key}", "GET", "/api/segment/get/stranger", on=seq_port)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and request(seq_port, "GET", "/seq/retired")[0] != 410:
        time.sleep(0.05)
    probe("/seq/{tag}", "GET", "/seq/retired", on=seq_port)  # 410 sequence_exhausted
    probe("/api/segment/get/{key}", "GET", "/api/segment/get/retired", on=seq_port)
    probe("/status", "GET", "/status", on=seq_port)
    probe("/ready", "GET", "/ready", on=seq_port)
    probe("/ready", "GET", "/ready?for=seq", on=seq_port)
    probe("/ready", "GET", "/ready?for=seq", on=port)  # 503 sequences_disabled
    probe("/ready", "GET", "/ready?for=uuid")  # 400 bad_for
    zk.pause()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if json.loads(request(seq_port, "GET", "/status")[2])["sequences"]["zookeeper"] != "connected":
                break
            time.sleep(0.05)
        probe("/seq/{tag}", "GET", "/seq/cold", on=seq_port)  # 503 sequence_unavailable
        probe("/api/segment/get/{key}", "GET", "/api/segment/get/cold", on=seq_port)
        probe("/seq/{tag}", "GET", "/seq/order", on=seq_port)  # still served from the buffer
        # A segment needs ZooKeeper: 503 sequence_unavailable.
        probe("/segments/{namespace}/{name}", "PATCH", "/segments/cosid/orders?step=1",
              on=seq_port)
        probe("/ready", "GET", "/ready?for=seq", on=seq_port)  # and ready for it
    finally:
        zk.resume()
    probe("/decodeSnowflakeId", "GET", "/decodeSnowflakeId?snowflakeId=x")
    probe("/decodeSnowflakeId", "GET", "/decodeSnowflakeId?id=1")
    walk_forms(probe, port, seq_port, forms)
    walk_leases(probe, lease_port)
    walk_machines(probe, cosid_port)
    walk_segments(probe, seq_port, forms.admin, port)
    # 503 leases_disabled, in CosId's words, from a daemon that grants none.
    probe("/machines/{namespace}", "PATCH", "/machines/ns?instanceId=a&safeGuardDuration=PT5M")
    probe("/machines/{namespace}", "DELETE", "/machines/ns?instanceId=a")
    probe("/machines/{namespace}", "GET", "/machines/cluster")  # 404 before the method
    # The admin listener leases nothing.
    probe("/v1/leases", "POST", "/v1/leases?holder=contract", on=forms.admin)
    probe("/v1/leases", "GET", "/v1/leases", on=forms.admin)
    probe("/v1/leases/{worker_id}", "GET", "/v1/leases/x")  # 404 before the method is looked at
    # 503 leases_disabled from a daemon that grants none (once the request reads well).
    probe("/v1/leases", "POST", "/v1/leases?holder=contract")
    for method in ("PUT", "DELETE"):
        probe("/v1/leases/{worker_id}", method, "/v1/leases/3?token=0123456789abcdef0123456789abcdef")
    probe(None, "GET", "/nowhere")
    deadline = time.monotonic() + 20
    while request(stuck_port, "GET", "/health")[0] != 503 and time.monotonic() < deadline:
        time.sleep(0.1)
    probe("/health", "GET", "/health", on=stuck_port)  # 503 unhealthy
    # 503 floor_ahead is one of the documented codes; the floored daemon says so.
    _, _, floored = request(floored_port, "GET", "/ready")
    if json.loads(floored).get("error") != "floor_ahead":
        fail(f"/ready under a floor an hour ahead: {floored!r}")
    # SIGTERM with a shutdown delay: 503 stopping, requests still answered.
    stop_floored()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and b'"stopping"' not in request(floored_port, "GET", "/ready")[2]:
        time.sleep(0.05)
    probe("/ready", "GET", "/ready", on=floored_port)
    probe("/ready", "GET", "/ready?for=seq", on=floored_port)

    documented = set()
    for template, item in DOC["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                for status in op["responses"]:
                    documented.add((template, method.upper(), int(status)))
    documented.add((None, "GET", 404))
    for missing in sorted(documented - produced, key=str):
        fail(f"documented but never produced by the walk: {missing}")

    # 2. A sweep: whatever the router answers must be documented, on every
    # listener, with and without the admin token.
    for template in list(DOC["paths"]) + ["/", "/id", "/id/", "/decode/", "/x/y"]:
        base = (template.replace("{tag}", "t.1").replace("{key}", "t.1").replace("{id}", "99")
                .replace("{worker_id}", "99"))
        for method in ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
            for suffix in ("", "?count=1", "?format=json", "?zzz", "?count=x&count=2", "/extra",
                           "?form=opaque", "?form=uuid&tag=t.1", "?form=x"):
                for on in (port, lapsed_port, forms.main, forms.admin, forms.tokened):
                    target = base + suffix
                    for headers in ({}, BEARER, {"Authorization": "Bearer nope"}):
                        answer = request(on, method, target, headers)
                        check_answer(template_of(target), method, answer, f"sweep {method} {target}")

    # 3. The binary serves this very document.
    status, _, body = request(port, "GET", "/openapi.yaml")
    if status != 200 or body.decode("utf-8") != DOC_TEXT:
        fail("GET /openapi.yaml is not docs/openapi.yaml")


def walk_leases(probe, port):
    """The lease routes on a daemon that leases: taken, renewed, given back,
    and each refusal."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and request(port, "GET", "/ready")[0] != 200:
        time.sleep(0.05)
    taken = probe("/v1/leases", "POST", "/v1/leases?holder=contract&duration_ms=60000", on=port)
    if taken[0] != 200:
        fail(f"POST /v1/leases: {taken[0]} {taken[2][:200]!r}")
        return
    lease = json.loads(taken[2])
    one = f"/v1/leases/{lease['worker_id']}"
    token = lease["token"]
    stranger = "0123456789abcdef0123456789abcdef"
    probe("/v1/leases", "POST", "/v1/leases?holder=a%20b", on=port)  # 400 bad_holder
    probe("/v1/leases/{worker_id}", "PUT", f"{one}?token={token}&last_timestamp_ms=5", on=port)
    probe("/v1/leases/{worker_id}", "PUT", f"{one}?token=XYZ", on=port)  # 400 bad_token
    probe("/v1/leases/{worker_id}", "PUT", f"{one}?token={stranger}", on=port)  # 410
    probe("/v1/leases/{worker_id}", "PUT", f"/v1/leases/99999?token={token}", on=port)  # 404
    probe("/v1/leases/{worker_id}", "DELETE", f"{one}?token={token}&last_timestamp_ms=x",
          on=port)  # 400 bad_timestamp
    probe("/v1/leases/{worker_id}", "DELETE", f"/v1/leases/x?token={token}", on=port)  # 404
    probe("/v1/leases/{worker_id}", "DELETE", f"{one}?token={token}&last_timestamp_ms=5", on=port)
    probe("/v1/leases/{worker_id}", "DELETE", f"{one}?token={token}", on=port)  # 410 given back
    probe("/v1/leases", "PATCH", "/v1/leases", on=port)  # 405
    # A named pool: made by its first take, then renewed and given back in it.
    named = probe("/v1/leases", "POST", "/v1/leases?holder=contract&pool=sony&worker_bits=4",
                  on=port)
    if named[0] != 200:
        fail(f"POST /v1/leases?pool=sony: {named[0]} {named[2][:200]!r}")
        return
    sony = json.loads(named[2])
    in_sony = f"/v1/leases/{sony['worker_id']}?pool=sony&token={sony['token']}"
    probe("/v1/leases", "POST", "/v1/leases?holder=contract&pool=sony&worker_bits=5",
          on=port)  # 409 pool_conflict
    probe("/v1/leases", "POST", "/v1/leases?holder=contract&pool=elsewhere",
          on=port)  # 404 no_such_pool
    probe("/v1/leases", "POST", "/v1/leases?holder=contract&pool=sony&worker_bits=99",
          on=port)  # 400 bad_pool
    probe("/v1/leases/{worker_id}", "PUT", in_sony, on=port)
    probe("/v1/leases/{worker_id}", "DELETE", in_sony, on=port)
    # Refused before routing, in each of the routes' own methods.
    refused_before_routing(probe, port, (("/v1/leases", "POST", "/v1/leases?holder=contract"),
                                         ("/v1/leases/{worker_id}", "PUT", f"{one}?token={token}"),
                                         ("/v1/leases/{worker_id}", "DELETE",
                                          f"{one}?token={token}")))


def refused_before_routing(probe, port, requests):
    """408, 413, 431 (twice) and 414 for each (template, method, target), in
    that route's own method."""
    many_fields = {f"X-{i}": "y" for i in range(101)}
    for template, method, target in requests:
        probe(template, method, target, on=port,
              raw=f"{method} {target} HTTP/1.1\r\nHost: test\r\n".encode())  # 408
        probe(template, method, target, on=port, body=b"abc")
        probe(template, method, target, on=port, headers=many_fields)
        probe(template, method, target, on=port, headers={"X-Big": "a" * 9000})
        probe(template, method, target + "&" + "a" * 2100, on=port)


def walk_machines(probe, port):
    """CosId's proxy API on a leasing daemon with short leases: distribute,
    guard and revert, each refusal, and a machine ID lost once reclaimed."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and request(port, "GET", "/ready")[0] != 200:
        time.sleep(0.05)
    t = "/machines/{namespace}"

    def machine(instance, bits=None, guard="PT1S", ns="contract"):
        query = f"instanceId={instance}&stable=false"
        if bits is not None:
            query += f"&machineBit={bits}"
        if guard is not None:
            query += f"&safeGuardDuration={guard}"
        return f"/machines/{ns}?{query}"

    for instance in ("a:1", "b:1"):  # machineBit 1: two machine IDs
        if probe(t, "POST", machine(instance, 1), on=port)[0] != 200:
            fail(f"POST /machines/contract for {instance}")
            return
    probe(t, "POST", machine("c:1", 1), on=port)  # 503 M-01
    probe(t, "POST", machine("c:1", 2), on=port)  # 409 pool_conflict
    probe(t, "POST", machine("c:1", 1, ns="cluster"), on=port)  # 404 not_found
    probe(t, "POST", machine("c:1"), on=port)  # 400: no machineBit
    probe(t, "PATCH", machine("a:1"), on=port)  # 200
    probe(t, "PATCH", machine("zz"), on=port)  # 404 M-02
    probe(t, "PATCH", machine("a:1", guard="5m"), on=port)  # 400
    probe(t, "DELETE", machine("a:1", guard=None), on=port)  # 200
    probe(t, "DELETE", machine("zz", guard=None), on=port)  # 404 M-02
    probe(t, "DELETE", machine("a:1", guard=None) + "&machineBit=1", on=port)  # 400
    # a's, freed: its floor (a's fence) may lie past a lease this short
    # (503 lease_unavailable, documented) until it does not.
    deadline = time.monotonic() + 10
    while probe(t, "POST", machine("e:1", 1), on=port)[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    # b and e left silent: reclaimed once their lease and the margin are over.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        metrics = request(port, "GET", "/metrics")[2].decode()
        if 'snowflake_lease_pool_in_use{pool="contract"} 0' in metrics:
            break
        time.sleep(0.1)
    probe(t, "PATCH", machine("b:1"), on=port)  # 410 M-03
    probe(t, "DELETE", machine("e:1", guard=None), on=port)  # 410 M-03
    # Refused before routing, in each of its own methods.
    refused_before_routing(probe, port, ((t, "POST", machine("f:1", 1)),
                                         (t, "PATCH", machine("f:1")),
                                         (t, "DELETE", machine("f:1", guard=None))))


def walk_segments(probe, port, admin_port, quick_port):
    """CosId's segments on a daemon serving sequences: a segment, the
    factory's call, each refusal; those before routing on `quick_port`, whose
    request timeout is short."""
    t = "/segments/{namespace}/{name}"
    f = "/segments/distributor/{namespace}/{name}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and request(port, "PATCH",
                                                  "/segments/cosid/orders?step=10")[0] != 200:
        time.sleep(0.05)
    answer = probe(t, "PATCH", "/segments/cosid/orders?step=10", on=port)
    if answer[0] != 200 or not answer[2].decode().isdigit():
        fail(f"PATCH /segments/cosid/orders?step=10: {answer[0]} {answer[2][:80]!r}")
    probe(t, "PATCH", "/segments/cosid/orders?step=0", on=port)  # 400
    probe(t, "PATCH", "/segments/cosid/none?step=1", on=port)  # 404 no_such_sequence
    probe(t, "PATCH", "/segments/cosid?step=1", on=port)  # 404 not_found
    probe(t, "PATCH", "/segments/cosid/strict?step=1", on=port)  # 409 not_segmentable
    probe(t, "PATCH", "/segments/cosid/few?step=2", on=port)  # 410 sequence_exhausted
    probe(t, "GET", "/segments/cosid/orders?step=1", on=port)  # 405
    probe(t, "GET", "/segments/cosid/orders?step=1", on=admin_port)  # 404: not served there
    probe(f, "POST", "/segments/distributor/cosid/orders?offset=0&step=10", on=port)  # 200
    probe(f, "POST", "/segments/distributor/cosid/none?offset=0&step=10", on=port)  # 404
    probe(f, "POST", "/segments/distributor/cosid/orders?offset=-1&step=10", on=port)  # 400
    probe(f, "GET", "/segments/distributor/cosid/orders", on=port)  # 405
    probe(f, "GET", "/segments/distributor/cosid/orders", on=admin_port)  # 404
    refused_before_routing(probe, quick_port,
                           ((t, "PATCH", "/segments/cosid/orders?step=1"),
                            (f, "POST", "/segments/distributor/cosid/orders?step=1")))


def walk_forms(probe, plain_port, seq_port, forms):
    """The forms, the admin listener and the token."""
    main, admin, tokened = forms.main, forms.admin, forms.tokened
    opaque = json.loads(probe("/id/{tag}", "GET", "/id/order?form=opaque", on=main)[2])["id"]
    probe("/id/{tag}", "GET", "/id/order?form=opaque&count=3&format=text", on=main)
    probe("/id/{tag}", "GET", "/id/secret", on=main)  # opaque: the tag's form
    uuid = json.loads(probe("/id/{tag}", "GET", "/id/event", on=main)[2])["id"]
    probe("/id/{tag}", "GET", "/id/order?form=uuid&count=2", on=main)
    probe("/id/{tag}", "GET", "/id/order?form=uuid&format=text", on=main)
    probe("/id/{tag}", "GET", "/id/order?form=bogus", on=main)  # 400 bad_form
    probe("/id/{tag}", "GET", "/id/secret?form=plain", on=main)  # 400: pinned to opaque
    probe("/id/{tag}", "GET", "/id/order?form=opaque", on=plain_port)  # 400: no key
    probe("/id/{tag}", "GET", "/id/order", on=admin)  # 404: the admin listener issues nothing
    probe("/api/snowflake/get/{key}", "GET", "/api/snowflake/get/secret", on=main)
    probe("/api/snowflake/get/{key}", "GET", "/api/snowflake/get/event", on=main)
    probe("/seq/{tag}", "GET", "/seq/order?form=opaque", on=seq_port)  # 400: plain only
    probe("/seq/{tag}", "GET", "/seq/order", on=admin)
    probe("/health", "GET", "/health", on=admin)
    probe("/ready", "GET", "/ready", on=admin)
    # Decoding: a UUID anywhere /decode answers; an opaque ID on the admin
    # listener or with the token.
    probe("/decode/{id}", "GET", f"/decode/{uuid}", on=admin)
    probe("/decode/{id}", "GET", f"/decode/{opaque}?form=opaque&tag=order", on=admin)
    probe("/decode/{id}", "GET", f"/decode/{opaque}?form=opaque", on=admin)  # 400: no tag
    probe("/decode/{id}", "GET", f"/decode/{opaque}?form=opaque&tag=order", on=main,
          headers=BEARER)
    probe("/decode/{id}", "GET", f"/decode/{opaque}?form=opaque&tag=order", on=tokened)  # 401
    probe("/decode/{id}", "GET", f"/decode/{opaque}?form=opaque&tag=order", on=tokened,
          headers={"Authorization": "Bearer nope"})  # 403
    probe("/decode/{id}", "GET", f"/decode/{opaque}?form=opaque&tag=order", on=plain_port)  # 403
    probe("/decode/{id}", "GET", "/decode/123?form=fancy", on=admin)
    probe("/decode/{id}", "GET", "/decode/00000000-0000-4000-8000-000000000000", on=admin)
    # The operators' routes moved: 404 on the main listener, 403 with another
    # token, served with the token and on the admin listener.
    for template, target in (("/status", "/status"), ("/metrics", "/metrics"),
                             ("/openapi.yaml", "/openapi.yaml"), ("/decode/{id}", "/decode/123"),
                             ("/decodeSnowflakeId", "/decodeSnowflakeId?snowflakeId=123")):
        probe(template, "GET", target, on=main)
        probe(template, "GET", target, on=main, headers={"Authorization": "Bearer nope"})
        probe(template, "GET", target, on=main, headers=BEARER)
        probe(template, "GET", target, on=admin)
    # What the forms' answers decode to: the opaque ID to an ID of this
    # daemon (worker 9), the UUID likewise.
    for given, query in ((opaque, "?form=opaque&tag=order"), (uuid, "")):
        fields = json.loads(request(admin, "GET", f"/decode/{given}{query}")[2])
        if fields.get("worker_id") != 9:
            fail(f"/decode/{given}{query} on the admin listener: {fields}")


if __name__ == "__main__":
    main()
