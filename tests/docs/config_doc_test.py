#!/usr/bin/env python3
"""docs/configuration.md's key table and conf/local.json say the same: every
key of the file is in the table, and every key of the table whose default is
a plain value (a number, a string, a list, a boolean) is in the file with
that value, but for the two the file sets for a local try. The daemon itself
refuses unknown keys, so every key of the file is real (CTest checks that
every conf/ file loads).

Usage: config_doc_test.py SOURCE_DIR
"""
import json
import pathlib
import re
import sys

SET_FOR_A_LOCAL_TRY = {"service", "coordinator.state_dir"}


def table(doc):
    rows = {}
    for line in doc.read_text().splitlines():
        m = re.match(r"\| `([a-z_.]+)` \| (.+?) \|", line)
        if m:
            rows[m.group(1)] = m.group(2).strip()
    return rows


def flattened(value, prefix=""):
    # An empty object is a value of its own (leases.pools: {}), not no key.
    if isinstance(value, dict) and value:
        out = {}
        for k, v in value.items():
            out.update(flattened(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: value}


def plain_default(cell):
    """The default as a JSON value, if the cell is one ("`\"info\"`", "41"),
    not a pattern ("/snowflake/<service>") or words."""
    if "<" in cell:
        return False, None
    try:
        return True, json.loads(cell.strip("`"))
    except ValueError:
        return False, None


def main(source):
    documented = table(source / "docs/configuration.md")
    spelled = flattened(json.loads((source / "conf/local.json").read_text()))
    wrong = [f"conf/local.json has {k}, which docs/configuration.md does not list"
             for k in spelled if k not in documented]
    checked = 0
    for key, cell in documented.items():
        plain, default = plain_default(cell)
        if not plain or key in SET_FOR_A_LOCAL_TRY:
            continue
        checked += 1
        if key not in spelled:
            wrong.append(f"conf/local.json lacks {key} (default {cell})")
        elif spelled[key] != default:
            wrong.append(f"conf/local.json: {key} is {spelled[key]!r}, the table's default {cell}")
    for line in wrong:
        print(f"config_doc_test: {line}")
    if not documented or wrong:
        return 1
    print(f"config_doc_test: {len(documented)} keys documented, {checked} plain defaults "
          f"spelled out in conf/local.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
