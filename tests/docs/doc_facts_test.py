#!/usr/bin/env python3
"""scripts/check-doc-facts.py catches what it is for: run on a copy of the
tree's docs and code it passes; with one mismatch planted in the copy (the
mismatches issue 38 found, and one of each other kind it checks) it exits 1
naming that mismatch. A checker that always passed would fail here.

Usage: doc_facts_test.py SOURCE_DIR
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

# What the checker reads (and conf/, for a --config naming a file of the tree).
COPIED = ["README.md", "CHANGELOG.md", "docs", "src", "include", "packaging", "conf"]

# (file, text in it, planted in its place, what the checker must say)
PLANTED = [
    ("docs/operations.md", "another layout or datacenter exits 3",
     "another layout or datacenter exits 1", "another layout exits 3 (kExitConflict)"),
    ("docs/operations.md", "\n| 3 | a config the cluster contradicts",
     "\n| 4 | a config the cluster contradicts", "a row for exit code 4"),
    ("docs/design.md", "exits 1, naming the first one's pid", "exits 5, naming the first one's pid",
     "names exit code 5"),
    ("docs/api.md", "--config /etc/snowflaked/snowflaked.json",
     "--config /etc/snowflaked/config.json", "names /etc/snowflaked/config.json"),
    ("docs/api.md", "`/etc/snowflaked/snowflaked.json: layout.time_bits",
     "`config.json: layout.time_bits", "names config.json"),
    ("README.md", "`GET /api/segment/get/<key>`, ", "",
     "README.md: its route table lacks GET /api/segment/get/<key>"),
    ("docs/api.md", "| `GET /health` |", "| `GET /healthz` |",
     "docs/api.md: its route table lacks GET /health"),
    ("docs/configuration.md", "| `http.max_batch` |", "| `http.max_batches` |",
     "lacks http.max_batch"),
    ("docs/configuration.md", "| `SNOWFLAKED_LISTEN` | `http.listen` |",
     "| `SNOWFLAKED_LISTEN` | `http.admin_listen` |", "SNOWFLAKED_LISTEN -> http.listen"),
    ("README.md", "4,096,000 IDs/s, in", "4,100,000 IDs/s, in",
     "cites 4,100,000, which docs/CONTRIBUTING.md#benchmarks does not hold"),
    ("docs/api.md", "`period_exhausted`, `period_closed`, `not_owner` |",
     "`period_exhausted`, `period_closed`, `not_owner`, `owner_gone` |",
     "503 owner_gone is counted as code=\"other\""),
    ("README.md", "| `not_owner` |", "| `not_owned` |",
     "README.md: its 503 table lacks not_owner"),
    ("docs/api.md", "| [`period_closed`](", "| [`period_shut`](",
     "the table of what each 503 means has no row for period_closed"),
    ("docs/operations.md", "runs a release after\n  0.4.0", "runs 0.6",
     "names version 0.6, which CHANGELOG.md has not released"),
    ("docs/api.md", "snowflaked cluster forms --config FILE [--set]", "",
     "its command line lacks `snowflaked cluster forms`"),
    ("docs/api.md", "[--json] [--seq]   IDs", "[--json]   IDs",
     "`snowflaked get` lacks --seq, which the usage text shows"),
    ("src/commands/command_line.cpp", "seq create TAG [--start N]", "seq create TAG --start N",
     "`snowflaked seq create` --start: optional in docs/api.md only"),
    ("include/snowflake/runtime/metrics.hpp", '"period_closed",', "",
     "503 period_closed is counted as code=\"other\""),
    ("docs/monitoring.md", "13.5 to 28.5 minutes", "15 to 30 minutes",
     "a buffer of 15 to 30 minutes; the defaults give 13.5 to 28.5"),
]


def check(copy):
    return subprocess.run([sys.executable, str(copy / "scripts/check-doc-facts.py"), str(copy)],
                          capture_output=True, text=True)


def main(source):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp)
        for name in COPIED + ["scripts/check-doc-facts.py"]:
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            if (source / name).is_dir():
                shutil.copytree(source / name, copy / name)
            else:
                shutil.copy(source / name, copy / name)
        clean = check(copy)
        if clean.returncode != 0:
            failures.append(f"the unplanted copy: exit {clean.returncode}\n{clean.stdout}")
        for rel, old, new, expected in PLANTED:
            path = copy / rel
            original = path.read_text()
            if old not in original:
                failures.append(f"{rel}: no {old!r} to plant a mismatch in (update PLANTED)")
                continue
            path.write_text(original.replace(old, new, 1))
            planted = check(copy)
            path.write_text(original)  # the next case starts from the clean copy
            if planted.returncode != 1 or expected not in planted.stdout:
                failures.append(f"{rel}: {old!r} -> {new!r}: exit {planted.returncode}, "
                                f"not 1 naming {expected!r}:\n{planted.stdout}{planted.stderr}")
    for f in failures:
        print(f"doc_facts_test: {f}")
    if failures:
        return 1
    print(f"doc_facts_test: the clean copy passes, and each of {len(PLANTED)} planted "
          "mismatches is caught")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1]).resolve()))
