#!/usr/bin/env python3
"""The layers of src/ and include/, and the one rule between them: a file
includes only files of its own layer or of a layer below it, so that every
arrow points down (../shared/DESIGN.md, "Parts").

  0 base       clocks, the lease, results, text formats of time, listen
               addresses, TLS files: include/snowflake/*.hpp and src/*.cpp
               not named below
  1 ids        ids/: the ID model (layout, generator, text, JSON, a form's
               name, form policy)
    sequences  sequences/: dense sequences on the request path (buffer,
               registry, replies in flight, sizing, templates, periods in a
               time zone and their slots); ids and sequences
               include neither the other
  2 forms      forms/: what an issued ID is handed out as (FF1's opaque IDs,
               UUIDs): pure functions of an ID, a key and a tag
  3 runtime    metrics, worker_slot, coordination_gauges: what a running
               daemon counts and shares between its parts
  4 config     the settings, read and validated: config/ and config.hpp
  5 state      state/: the local disk (state file and directory, the time
               reservation, the owner token they record)
  6 parts      coord/ (ZooKeeper, worker IDs at run time), http/ (router,
               server), client/ (snowflaked get): none includes another
  7 migration  migration/: raising the migration floor, reading Leaf's tree
  8 report     report/: what the operator commands print (pool status, floor)
  9 program    main.cpp, daemon.cpp, commands/, logging, stop_signals

Prints each include that points up or across, and exits 1 if there is one.
Run by scripts/lint.sh.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

CONFIG = {"config"}
PROGRAM = {"main", "daemon", "logging", "stop_signals"}
RUNTIME = {"metrics", "worker_slot", "coordination_gauges"}
LAYER = {"base": 0, "ids": 1, "sequences": 1, "forms": 2, "runtime": 3, "config": 4, "state": 5,
         "coord": 6, "http": 6, "client": 6, "migration": 7, "report": 8, "program": 9}


def part_of(path: pathlib.Path) -> str:
    """The part a file of src/ or include/snowflake/ belongs to."""
    rel = path.relative_to(ROOT)
    parts = rel.parts[2:] if rel.parts[0] == "include" else rel.parts[1:]
    if len(parts) > 1:
        return "program" if parts[0] == "commands" else parts[0]
    stem = parts[0].split(".")[0]
    if stem in CONFIG:
        return "config"
    if stem in PROGRAM:
        return "program"
    if stem in RUNTIME:
        return "runtime"
    return "base"


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
             if p.suffix in (".hpp", ".cpp", ".in") and p.is_file()]
    wrong = []
    for source in sorted(files):
        mine = part_of(source)
        for name in INCLUDE.findall(source.read_text()):
            target = resolve(source, name)
            if target is None:
                continue
            theirs = part_of(target)
            if theirs == mine:
                continue
            if LAYER[theirs] >= LAYER[mine]:
                wrong.append(f"{source.relative_to(ROOT)} ({mine}) includes {name} ({theirs})")
    for line in wrong:
        print(f"check-layers: {line}")
    if wrong:
        print("check-layers: an include may point only down: base < ids, sequences < forms < "
              "runtime < config < state < "
              "coord, http, client < migration < report < program "
              "(scripts/check-layers.py)", file=sys.stderr)
        return 1
    print(f"check-layers: {len(files)} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
