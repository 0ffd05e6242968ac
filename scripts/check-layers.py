#!/usr/bin/env python3
"""The rooms of src/ and include/snowflake/, one kind each, and the one rule
between them: a file includes only files of its own room or of a room on a
lower floor, so that every arrow points down (../shared/DESIGN.md, "Parts").
A room is a folder, the same name under src/ and include/snowflake/.

  0 base            the ground floor every room uses: clocks (ours and
                    ZooKeeper's as seen), the lease, results, names, time as
                    text, JSON integers, SHA-256, listen addresses, TLS files
  1 ids             the ID model (layout, generator, text, JSON, a form's
    sequences       name, form policy); dense sequences on the request path
                    (buffer, registry, replies in flight, sizing, templates,
                    periods); neither includes the other
  2 forms           what an issued ID is handed out as: pure functions
  3 runtime         what a running daemon counts and its parts share
                    (metrics, gauges, the worker slot, liveness)
  4 config          the settings, read and validated; coordinator.type
  5 state           the local disk (state file and directory, the time
                    reservation, the owner token)
  6 zk              the ZooKeeper session, node data, the tree's paths, an
    http            alive node; http/ (router, server); client/ (snowflaked
    client          get): none includes another
  7 cluster         the cluster's identity, fences, history, vouch, form
                    policy and migration floor: what holds for every daemon
  8 sequence_store  where sequences are kept in ZooKeeper: ranges, nodes,
                    periods, strict owners, holders, the supplier
  9 workers         who owns a worker ID: strategies, pool, coordinator (which
                    freezes the sequences when it finds a loss)
 10 migration       raising the migration floor, reading Leaf's tree
 11 report          what the operator commands print (pool status, floor)
 12 process         the process around the daemon: its wiring, signals,
                    systemd, logging; what every process of ours reads its
                    config and exits with (program_config)
 13 commands        one file per subcommand (run starts the daemon)
 14 main            src/main.cpp: the command line dispatched

Prints each include that points up or across, and exits 1 if there is one;
a file of src/ outside every room (but main.cpp) fails too, as does a file
over 800 lines, or over 600 whose first line is not a comment saying its
one job ("// One job: ..."), or an include that climbs out of its folder
("../"): what a room offers the others is under include/snowflake/<room>/. Run by
scripts/lint.sh.
"""
import pathlib
import re
import sys

MAX_LINES = 800
MAX_LINES_UNSAID = 600
ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

LAYER = {"base": 0, "ids": 1, "sequences": 1, "forms": 2, "runtime": 3, "config": 4,
         "state": 5, "zk": 6, "http": 6, "client": 6, "cluster": 7, "sequence_store": 8,
         "workers": 9, "migration": 10, "report": 11, "process": 12, "commands": 13,
         "main": 14}


def part_of(path: pathlib.Path) -> str:
    """The room a file of src/ or include/snowflake/ belongs to."""
    rel = path.relative_to(ROOT)
    parts = rel.parts[2:] if rel.parts[0] == "include" else rel.parts[1:]
    if len(parts) > 1:
        return parts[0]
    # src/main.cpp, and the generated include/snowflake/version.hpp's
    # template, the one file of include/snowflake/ outside a room.
    return "main" if parts[0] == "main.cpp" else "base"


def resolve(source: pathlib.Path, name: str):
    """The file an include names: beside the source, or under include/."""
    for base in (source.parent, ROOT / "include"):
        candidate = (base / name).resolve()
        if candidate.exists():
            return candidate
    # Generated headers (version.hpp) belong to the base.
    return None


def main() -> int:
    files = [p for d in ("src", "include") for p in (ROOT / d).rglob("*")
             if p.suffix in (".hpp", ".cpp", ".in", ".h", ".cc") and p.is_file()]
    wrong = []
    for source in sorted(files):
        mine = part_of(source)
        rel = source.relative_to(ROOT)
        if rel.parts[0] == "src" and len(rel.parts) == 2 and rel.name != "main.cpp":
            wrong.append(f"{rel} is in src/ itself: src/ holds main.cpp and rooms")
            continue
        if rel.parts[0] == "include" and len(rel.parts) == 3 and rel.name != "version.hpp.in":
            wrong.append(f"{rel} is in include/snowflake/ itself: it holds rooms (and "
                         "version.hpp.in)")
            continue
        if mine not in LAYER:
            wrong.append(f"{rel} is in a room this script does not know: {mine}/")
            continue
        text = source.read_text()
        lines = text.count("\n")
        if lines > MAX_LINES:
            wrong.append(f"{rel} has {lines} lines, over {MAX_LINES}: split it by job")
        elif lines > MAX_LINES_UNSAID and not text.startswith("// One job:"):
            wrong.append(f"{rel} has {lines} lines, over {MAX_LINES_UNSAID}, and its first "
                         "comment does not say its one job (\"// One job: ...\")")
        for name in INCLUDE.findall(text):
            if name.startswith("../"):
                wrong.append(f"{rel} includes {name}: a header another room uses is under "
                             "include/snowflake/<room>/, included as snowflake/<room>/...")
                continue
            target = resolve(source, name)
            if target is None:
                continue
            theirs = part_of(target)
            if theirs == mine or theirs not in LAYER:
                continue
            if LAYER[theirs] >= LAYER[mine]:
                wrong.append(f"{source.relative_to(ROOT)} ({mine}) includes {name} ({theirs})")
    for line in wrong:
        print(f"check-layers: {line}")
    if wrong:
        print("check-layers: an include may point only down: base < ids, sequences < forms < "
              "runtime < config < state < zk, http, client < cluster < "
              "sequence_store < workers < migration < report < process < commands < main "
              "(scripts/check-layers.py)", file=sys.stderr)
        return 1
    print(f"check-layers: {len(files)} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
