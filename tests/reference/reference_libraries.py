"""snowflaked against ID libraries no one here wrote, installed from npm into
the build tree: @sapphire/snowflake (Twitter's layout, any epoch) and
sonyflake (the sequence above a 16-bit machine ID).

1. IDs each library makes decode in snowflaked (`snowflaked decode` with the
   matching layout) to the time, datacenter, worker and sequence the library
   was given.
2. IDs a real snowflaked daemon issues decode in each library to what the
   daemon's /decode says.

Usage: reference_libraries.py SNOWFLAKED WORKDIR
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import npm_packages  # noqa: E402
import snowflaked_daemon  # noqa: E402

BINARY, WORKDIR = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARIES = {"@sapphire/snowflake": "3.5.5", "sonyflake": "1.1.2"}
TWITTER_EPOCH = 1288834974657  # the twitter preset's, given to @sapphire/snowflake
# npm's sonyflake counts 1 ms units since its epoch (sony's Go original
# counts 10 ms): its IDs are the sonyflake order with time_unit_ms 1.
SONYFLAKE_EPOCH = 1589760000000  # 2020-05-18, its README's example
FIELDS = ("timestamp_ms", "datacenter_id", "worker_id", "sequence")
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what)


def node(directory, command, given=None):
    done = subprocess.run(["node", os.path.join(HERE, "libraries.mjs"), command, str(TWITTER_EPOCH),
                           str(SONYFLAKE_EPOCH)],
                          cwd=directory, input=json.dumps(given) if given else None,
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def config(layout, coordinator):
    return {"layout": layout, "coordinator": dict(coordinator, type="static")}


def decode(config, id_text):
    done = subprocess.run([BINARY, "decode", id_text, "--config", config], capture_output=True,
                          text=True, timeout=30)
    if done.returncode != 0:
        fail(f"snowflaked decode {id_text}: exit {done.returncode}: {done.stderr}")
        return {}
    return json.loads(done.stdout)


def compare(what, expected, got):
    for field in FIELDS:
        if field in expected and expected[field] != got.get(field):
            fail(f"{what}: {field} {expected[field]} expected, got {got.get(field)}")


class Daemon(snowflaked_daemon.Daemon):
    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
            return json.load(r)

    def issued_and_decoded(self, count):
        """IDs the daemon issues (a batch spans time units), with its /decode of each."""
        ids = self.get(f"/id/reference?count={count}")["ids"] + [self.get("/id/reference")["id"]]
        return ids, [self.get(f"/decode/{i}") for i in ids]


def main():
    modules = os.path.join(WORKDIR, "npm-reference")
    npm_packages.install(modules, LIBRARIES)
    with tempfile.TemporaryDirectory() as tmp:
        # Daemons issue in these layouts; `snowflaked decode` reads their files.
        daemons = {
            "sapphire": (Daemon(BINARY, config({"preset": "twitter"}, {"datacenter_id": 3, "static_worker_id": 7}),
                                tmp, "twitter"), 100),
            "sonyflake": (Daemon(BINARY, config({"time_bits": 39, "worker_bits": 16, "sequence_bits": 8,
                                                 "time_unit_ms": 1, "epoch": SONYFLAKE_EPOCH,
                                                 "order": "time,sequence,datacenter,worker"},
                                                {"static_worker_id": 2}), tmp, "sonyflake"), 600),
        }
        twitter, sony = daemons["sapphire"][0].config_path, daemons["sonyflake"][0].config_path

        # 1. Their IDs, read by snowflaked.
        made = node(modules, "make")
        for given in made["sapphire"]:
            compare(f"@sapphire/snowflake ID {given['id']} in snowflaked", given, decode(twitter, given["id"]))
        for given in made["sonyflake"]:
            compare(f"sonyflake ID {given['id']} in snowflaked", dict(given, datacenter_id=0),
                    decode(sony, given["id"]))

        # 2. snowflaked's IDs, read by them.
        issued = {}
        for name, (daemon, count) in daemons.items():
            try:
                issued[name] = daemon.issued_and_decoded(count)
            finally:
                daemon.stop()
        read = node(modules, "read", {name: ids for name, (ids, _) in issued.items()})
        for name, (ids, decoded) in issued.items():
            for theirs, ours in zip(read[name], decoded):
                expected = {f: ours[f] for f in FIELDS if f in theirs}
                compare(f"snowflaked ID {ours['id']} in {name}", expected, theirs)
        spans = {name: len({d["timestamp_ms"] for d in decoded}) for name, (_, decoded) in issued.items()}
        sequences = {name: max(d["sequence"] for d in decoded) for name, (_, decoded) in issued.items()}
        print(f"reference libraries: {len(made['sapphire'])} + {len(made['sonyflake'])} of their IDs "
              f"decoded by snowflaked; {sum(len(ids) for ids, _ in issued.values())} of snowflaked's "
              f"decoded by them (time units spanned {spans}, highest sequence {sequences})")
    if failures:
        sys.exit(f"{len(failures)} failure(s)")


main()
