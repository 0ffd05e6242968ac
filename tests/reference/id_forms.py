"""The ID forms against implementations no one here wrote: npm's
@noble/ciphers (its FF1) and npm's uuid, installed into the build tree, and
Python's uuid module. A real snowflaked daemon (static mode, a key, an admin
listener) hands out the IDs.

1. Opaque IDs, both ways: every opaque ID the daemon issued, with the ID its
   admin listener decodes it to, is what noble's FF1 (AES-256, radix 2, 63
   digits, the tag as the tweak) makes of that ID, and noble decrypts it
   back; random 63-bit values noble encrypts are decoded by the daemon to
   those values. No opaque ID equals its ID.
2. UUIDs: each is valid and of version 7 to npm's uuid and to Python's uuid
   module (variant RFC 4122), one daemon's increase, and each decodes (the
   daemon's /decode, and `snowflaked decode`) to an ID of its worker whose
   time is the UUID's unix_ts_ms.

Usage: id_forms.py SNOWFLAKED WORKDIR
"""

import http.client
import json
import os
import secrets
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import npm_packages  # noqa: E402
import snowflaked_daemon  # noqa: E402

BINARY, WORKDIR = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARIES = {"@noble/ciphers": "2.4.0", "uuid": "14.0.3"}
ISSUED = 2000      # opaque IDs, and UUIDs, from the daemon
RANDOM = 2000      # random values through noble's FF1 and back through the daemon
WORKER = 11
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what)


class Client:
    """One keep-alive connection."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def get(self, path):
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"GET {path}: {r.status} {body[:200]!r}")
        return json.loads(body)


def node(modules, command, given):
    done = subprocess.run(["node", os.path.join(HERE, "forms.mjs"), command], cwd=modules,
                          input=json.dumps(given), capture_output=True, text=True, timeout=120,
                          check=True)
    return json.loads(done.stdout)


def issued(client, tag, form, count):
    ids = []
    while len(ids) < count:
        ids += client.get(f"/id/{tag}?form={form}&count={min(500, count - len(ids))}")["ids"]
    return ids


def check_opaque(modules, main, admin, key_hex):
    opaque = issued(main, "order", "opaque", ISSUED)
    plain = [admin.get(f"/decode/{o}?form=opaque&tag=order")["id"] for o in opaque]
    if any(p == o for p, o in zip(plain, opaque)):
        fail("an opaque ID equals its ID")
    if len(set(opaque)) != len(opaque):
        fail("an opaque ID twice")
    result = node(modules, "ff1", {"key": key_hex, "tweak": "order",
                                   "pairs": list(zip(plain, opaque)), "random": RANDOM})
    for m in result["mismatches"][:5]:
        fail(f"noble's FF1 disagrees: {m}")
    if result["checked"] != ISSUED:
        fail(f"noble checked {result['checked']} pairs, not {ISSUED}")
    wrong = 0
    for value, image in result["random"]:
        if admin.get(f"/decode/{image}?form=opaque&tag=order")["id"] != value:
            wrong += 1
    if wrong:
        fail(f"{wrong} of {RANDOM} random values noble encrypted did not decode back in snowflaked")
    return len(result["random"]) - wrong


def check_uuids(modules, main, admin, config_path):
    uuids = issued(main, "event", "uuid", ISSUED)
    result = node(modules, "uuid", uuids)
    for u in result["wrong"][:5]:
        fail(f"npm's uuid: not a valid version 7 UUID: {u}")
    for u in uuids:
        parsed = uuid.UUID(u)
        if parsed.version != 7 or parsed.variant != uuid.RFC_4122 or str(parsed) != u:
            fail(f"Python's uuid: {u} is version {parsed.version}, variant {parsed.variant}")
            break
    if uuids != sorted(uuids):
        fail("one daemon's UUIDs do not increase")
    for u in uuids[:: ISSUED // 50]:
        fields = admin.get(f"/decode/{u}")
        if fields["worker_id"] != WORKER or fields["timestamp_ms"] != uuid.UUID(u).int >> 80:
            fail(f"/decode/{u}: {fields}")
    cli = subprocess.run([BINARY, "decode", uuids[0], "--config", config_path], capture_output=True,
                         text=True, timeout=30)
    if cli.returncode != 0 or json.loads(cli.stdout)["uuid"] != uuids[0]:
        fail(f"snowflaked decode {uuids[0]}: exit {cli.returncode} {cli.stdout}{cli.stderr}")
    return len(uuids)


def main():
    modules = os.path.join(WORKDIR, "npm-reference-forms")
    npm_packages.install(modules, LIBRARIES)
    with tempfile.TemporaryDirectory() as tmp:
        key_hex = secrets.token_hex(32)
        key_file = os.path.join(tmp, "opaque.key")
        with open(key_file, "w", encoding="utf-8") as f:
            f.write(key_hex + "\n")
        daemon = snowflaked_daemon.Daemon(
            BINARY, {"coordinator": {"type": "static", "static_worker_id": WORKER},
                     "forms": {"opaque_key_file": key_file},
                     "http": {"admin_listen": "127.0.0.1:0", "max_batch": 500}}, tmp, "forms")
        try:
            main_client, admin_client = Client(daemon.port), Client(daemon.admin_port)
            both_ways = check_opaque(modules, main_client, admin_client, key_hex)
            uuids = check_uuids(modules, main_client, admin_client, daemon.config_path)
        finally:
            daemon.stop()
    print(f"id forms: {ISSUED} opaque IDs from snowflaked agree with noble's FF1 both ways, "
          f"{both_ways} random values noble encrypted decode back in snowflaked; {uuids} UUIDs "
          f"valid version 7 to npm's uuid and Python's uuid, increasing, decoding to their IDs")
    if failures:
        sys.exit(f"{len(failures)} failure(s)")


main()
