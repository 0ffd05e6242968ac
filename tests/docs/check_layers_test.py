#!/usr/bin/env python3
"""scripts/check-layers.py catches what it is for: on a copy of src/ and
include/ it passes; with one fault planted in the copy (an include up a
floor, one across a floor, a file loose in src/, a room it does not know, a
file over 800 lines, one over 600 that does not say its one job, an include
climbing out of its folder) it
exits 1 naming that file. A checker that always passed would fail here.

Usage: check_layers_test.py SOURCE_DIR
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

INCLUDE_UP = '#include "snowflake/workers/coordinator.hpp"\n'
INCLUDE_ACROSS = '#include "snowflake/http/router.hpp"\n'

# (what is planted: a function of the copy's root, what the checker must say)
PLANTED = [
    (lambda root: prepend(root / "src/zk/node_data.cpp", INCLUDE_UP),
     "src/zk/node_data.cpp (zk) includes snowflake/workers/coordinator.hpp (workers)"),
    (lambda root: prepend(root / "include/snowflake/cluster/cluster_vouch.hpp",
                          '#include "snowflake/sequence_store/sequence_ranges.hpp"\n'),
     "cluster_vouch.hpp (cluster) includes snowflake/sequence_store/sequence_ranges.hpp"),
    (lambda root: prepend(root / "src/zk/zk_session.cpp", INCLUDE_ACROSS),
     "src/zk/zk_session.cpp (zk) includes snowflake/http/router.hpp (http)"),
    (lambda root: prepend(root / "src/zk/node_data.cpp", '#include "../base/clock.hpp"\n'),
     "src/zk/node_data.cpp includes ../base/clock.hpp"),
    (lambda root: (root / "include/snowflake/stray.hpp").write_text("#pragma once\n"),
     "include/snowflake/stray.hpp is in include/snowflake/ itself"),
    (lambda root: (root / "src/stray.h").write_text("#pragma once\n"),
     "src/stray.h is in src/ itself"),
    (lambda root: (root / "src/stray.cpp").write_text("int stray() { return 0; }\n"),
     "src/stray.cpp is in src/ itself"),
    # server.cpp says its one job: only the 800-line bound can catch it.
    (lambda root: append(root / "src/http/server.cpp", "// filler\n" * 100),
     "over 800: split it by job"),
    (lambda root: append(root / "src/zk/zk_session.cpp", "// filler\n" * 100),
     "over 600, and its first comment does not say its one job"),
    (lambda root: (root / "src/misc").mkdir() or
     (root / "src/misc/thing.cpp").write_text("int thing() { return 0; }\n"),
     "src/misc/thing.cpp is in a room this script does not know: misc/"),
]


def prepend(path: pathlib.Path, line: str) -> None:
    path.write_text(line + path.read_text())


def append(path: pathlib.Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def check(root: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "scripts/check-layers.py")],
                          capture_output=True, text=True)


def copy_tree(source: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    root = into / "tree"
    for part in ("src", "include", "scripts"):
        shutil.copytree(source / part, root / part)
    return root


def main() -> int:
    source = pathlib.Path(sys.argv[1]).resolve()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        clean = check(copy_tree(source, pathlib.Path(tmp) / "clean"))
        if clean.returncode != 0:
            failures.append(f"the clean copy fails:\n{clean.stdout}{clean.stderr}")
        for index, (plant, said) in enumerate(PLANTED):
            root = copy_tree(source, pathlib.Path(tmp) / str(index))
            plant(root)
            run = check(root)
            if run.returncode != 1 or said not in run.stdout:
                failures.append(f"planted fault {index} not caught as \"{said}\" "
                                f"(exit {run.returncode}):\n{run.stdout}{run.stderr}")
    for failure in failures:
        print(f"check_layers_test: {failure}")
    if failures:
        return 1
    print(f"check_layers_test: the clean copy passes, and each of {len(PLANTED)} planted "
          "faults is caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
