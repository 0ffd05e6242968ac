#!/usr/bin/python3
"""Prints a runbook's shell block from a Markdown document, as the tests run it.

A runbook block is a ```sh fence right after a marker line of its own:

    <!-- runbook: restore -->
    ```sh
    ...
    ```

The block printed is the fence's text, letter for letter: what a user copies
is what the tests run (tests/e2e/restore_runbook.py, tests/live/). `--config
PATH` puts PATH where the block names the installed config
(/etc/snowflaked/snowflaked.json), the one difference a test needs; a block
that does not name it is refused, as are a marker with no ```sh fence right
after it, a fence never closed and a name marked twice.

Usage: runbook-block.py [--config PATH] NAME [DOC]   (DOC: default stdin)
       runbook-block.py --list [DOC]                 the names, one a line
Exit 0: printed; 2: no such block, or a malformed one (the reason on stderr).
"""

import argparse
import re
import sys

INSTALLED_CONFIG = "/etc/snowflaked/snowflaked.json"
MARKER = re.compile(r"^<!--\s*runbook:\s*([A-Za-z0-9_.-]+)\s*-->\s*$")


class Malformed(Exception):
    pass


def blocks(text):
    """{name: block text} of every marked block of `text`, in order."""
    found = {}
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        name, where = m.group(1), i + 1
        if name in found:
            raise Malformed(f"line {where}: runbook {name!r} is marked twice")
        if i + 1 >= len(lines) or lines[i + 1].rstrip() != "```sh":
            raise Malformed(f"line {where}: runbook {name!r}: no ```sh fence on the next line")
        body = []
        i += 2
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise Malformed(f"line {where}: runbook {name!r}: its fence is never closed")
        found[name] = "".join(body)
        i += 1
    return found


def block(text, name, config=None):
    """The block `name` of `text`, with `config` for the installed config's path."""
    found = blocks(text)
    if name not in found:
        raise Malformed(f"no runbook {name!r} (marked: {', '.join(found) or 'none'})")
    body = found[name]
    if config is not None:
        if INSTALLED_CONFIG not in body:
            raise Malformed(f"runbook {name!r} does not name {INSTALLED_CONFIG}")
        body = body.replace(INSTALLED_CONFIG, config)
    return body


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the names of the marked blocks")
    parser.add_argument("--config", metavar="PATH",
                        help=f"put PATH where the block names {INSTALLED_CONFIG}")
    parser.add_argument("args", nargs="*", metavar="NAME [DOC]")
    options = parser.parse_args()
    if len(options.args) > (1 if options.list else 2) or (not options.list and not options.args):
        parser.error("NAME [DOC], or --list [DOC]")
    doc = options.args[-1] if len(options.args) == (1 if options.list else 2) else None
    try:
        text = open(doc, encoding="utf-8").read() if doc else sys.stdin.read()
        if options.list:
            sys.stdout.write("".join(f"{name}\n" for name in blocks(text)))
        else:
            sys.stdout.write(block(text, options.args[0], options.config))
    except (Malformed, OSError) as e:
        print(f"runbook-block: {doc or 'stdin'}: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
