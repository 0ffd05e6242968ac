#!/usr/bin/env python3
"""The docs say what the code does, wherever a fact can be read off both
mechanically (check-docs.py only sees that links resolve):

- exit codes: the table of docs/operations.md, "Exit codes", has a row for
  each constant of include/snowflake/process/program_config.hpp and no other; every exit code a
  doc or the usage text names is one of them; a condition the code gives a
  fixed code (another layout: kExitConflict) is never said to exit with
  another;
- the config file: a doc names no config file but the one the package
  installs (packaging/debian/conffiles), a file of the tree, or a
  placeholder;
- routes: every path the router serves is in docs/openapi.yaml and back,
  and each is in the route tables of README.md and docs/api.md;
- config keys: every key the parser reads (src/config/*.cpp) is a row of
  docs/configuration.md's key table and back; the environment table
  matches kOverridableKeys;
- refusal codes: every 503 code of docs/api.md's error table (and /health's
  `unhealthy`) is a `code` label value of snowflake_refusals_total
  (Metrics::kRefusalCodes), and back: one the metric does not know is
  counted as "other"; api.md's table of what each 503 means has a row for
  each code of its 503 rows and no other, and README.md's table one for
  each a request route answers (all but /ready's own, `stopping` and
  `sequences_disabled`);
- the command line: docs/api.md's synopsis ("Command line") has every
  subcommand of the usage text (src/commands/command_line.cpp) and no
  other, each with the same flags, optional ones in brackets in both;
- versions: a release a doc names ("made before 0.4", "runs 0.4.0") is one
  of CHANGELOG.md's (not the unreleased next one);
- figures: each figure README.md cites beside a link (4,096,000) is in the
  section it links to; the span a sequence buffer lasts ("13.5 to 28.5
  minutes of its rate") follows from the defaults of SequenceSettings.

Exits 1 naming each mismatch. Run by CTest (label docs); tests/docs/
doc_facts_test.py plants mismatches in a copy to see each one caught.

Usage: check-doc-facts.py [SOURCE_DIR]   (default: this checkout)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
ROOT = ROOT.resolve()

# A condition the code always gives the same exit code, and how docs word
# it. A doc naming one of these and an exit code in the same clause must
# name that code. (include/snowflake/process/program_config.hpp says which condition is which.)
CONDITIONS = {
    r"another (?:ID )?layout|another strategy|different strategies|a Leaf node|not new":
        "kExitConflict",
    r"bad (?:key|flag|config|command line)|unknown key|wrong value": "kExitUsage",
    r"in use by another|directory in use": "kExitFailure",
}
EXIT_STATEMENT = r"(?:\(exit|exits?|exited|is exit|exit code) (\d+)((?:(?:,| and| or) \d+\b)*)"
# The JsonSection variables of the config parser and the section each reads;
# None for sections whose keys are not fixed (a helper's, the tags' object).
SECTIONS = {"root": "", "layout": "layout", "gen": "generator", "coord": "coordinator",
            "zk": "zookeeper", "http": "http", "seq": "sequences", "forms": "forms",
            "leases": "leases",
            "section": None, "by_tag": None, "by_name": None, "pool": None}
FIGURE = re.compile(r"\b\d{1,3}(?:,\d{3})+\b|\b\d+\.\d+\b")


def read(rel):
    return (ROOT / rel).read_text()


def docs():
    """README.md and docs/*.md, by name."""
    return {p.relative_to(ROOT).as_posix(): p.read_text()
            for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}


def prose(text):
    """Text outside fenced blocks (each left as its blank lines, so that line
    numbers hold)."""
    return re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text,
                  flags=re.S | re.M)


def loose(pattern):
    """A pattern whose spaces match any run of white space: a phrase may wrap."""
    return pattern.replace(" ", r"\s+")


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def section(text, title):
    """The text under the heading `title` (fenced blocks left out, where a
    shell comment would pass for a heading), to the next heading as high."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    m = re.search(rf"^(#+) {re.escape(title)}\s*$", text, re.M)
    if not m:
        return None
    rest = text[m.end():]
    end = re.search(rf"^#{{1,{len(m.group(1))}}} ", rest, re.M)
    return rest[:end.start()] if end else rest


def both_ways(wrong, in_code, in_doc, missing, extra):
    """What the code has and the doc lacks (`missing`), and what the doc has
    and the code lacks (`extra`): each a message with {} for the item."""
    wrong.extend(missing.format(x) for x in sorted(in_code - in_doc))
    wrong.extend(extra.format(x) for x in sorted(in_doc - in_code))


def exit_codes(wrong):
    code = {name: int(n) for name, n in re.findall(
        r"inline constexpr int (kExit\w+) = (\d+);", read("include/snowflake/process/program_config.hpp"))}
    codes = set(code.values())
    table = section(read("docs/operations.md"), "Exit codes") or ""
    rows = {int(n) for n in re.findall(r"^\| (\d+) \|", table, re.M)}
    if not code:
        wrong.append("include/snowflake/process/program_config.hpp: no kExit* constants found")
    both_ways(wrong, codes, rows,
              "docs/operations.md, Exit codes: no row for exit code {}",
              "docs/operations.md, Exit codes: a row for exit code {}, which "
              "include/snowflake/process/program_config.hpp does not define")
    texts = {name: prose(text) for name, text in docs().items()}
    usage = read("src/commands/command_line.cpp")
    texts["src/commands/command_line.cpp"] = usage
    for name, text in texts.items():
        for m in re.finditer(loose(EXIT_STATEMENT), text, re.I):
            for n in [m.group(1), *re.findall(r"\d+", m.group(2))]:
                if int(n) not in codes:
                    wrong.append(f"{name}:{line_of(text, m.start())}: names exit code {n}, which "
                                 "include/snowflake/process/program_config.hpp does not define")
        for m in re.finditer(loose(r"Exit codes: ((?:\d+ [^,]+, )+\d+)"), text):
            said = {int(n) for n in re.findall(r"(?:^|,\s+)(\d+)\b", m.group(1))}
            if said != codes:
                wrong.append(f"{name}:{line_of(text, m.start())}: its list of exit codes "
                             f"({sorted(said)}) is not the code's ({sorted(codes)})")
        for condition, constant in CONDITIONS.items():
            pattern = loose(rf"({condition})[^.;:()]{{0,80}}?{EXIT_STATEMENT}")
            for m in re.finditer(pattern, text, re.I):
                if int(m.group(2)) != code.get(constant):
                    said = " ".join(m.group(0).split())
                    wrong.append(f'{name}:{line_of(text, m.start())}: "{said}": {m.group(1)} '
                                 f"exits {code.get(constant)} ({constant})")


def config_file_names(wrong):
    installed = {line.strip() for line in read("packaging/debian/conffiles").splitlines()
                 if line.strip().endswith(".json")}
    for name, text in docs().items():
        for m in re.finditer(r"/etc/snowflaked/[\w.-]+\.json", text):
            if m.group(0) not in installed:
                wrong.append(f"{name}:{line_of(text, m.start())}: names {m.group(0)}; the package "
                             f"installs {sorted(installed)}")
        for m in re.finditer(r"--config[ =]([^\s`)\]]+)", text):
            arg = m.group(1)
            if arg.startswith("/etc/snowflaked/"):
                continue  # judged above
            placeholder = arg.isupper() or arg[0] in "<$["
            if not placeholder and not (ROOT / arg).is_file():
                wrong.append(f"{name}:{line_of(text, m.start())}: --config {arg}: neither the "
                             f"installed {sorted(installed)} nor a file of the tree")
        for m in re.finditer(r"(?<![\w/.-])config\.json\b", text):
            wrong.append(f"{name}:{line_of(text, m.start())}: names config.json; the package "
                         f"installs {sorted(installed)}")


def routes(wrong):
    served = re.findall(r'path(?: == |\.starts_with\()"(/[^"]*)"',
                        re.search(r"Route route_of\(.*?\n}", read("src/http/router.cpp"),
                                  re.S).group(0))
    documented = re.findall(r"^  (/\S*):\s*$", read("docs/openapi.yaml"), re.M)
    if not served or not documented:
        wrong.append("no routes found in src/http/router.cpp's route_of or docs/openapi.yaml")
    # The router matches /id/ as a prefix; OpenAPI spells it /id/{tag} (and
    # /segments/ as /segments/{namespace}/{name} and /segments/distributor/...).
    for path in served:
        if not any(p == path or (path.endswith("/") and re.fullmatch(
                re.escape(path) + r"(?:\w+/)?\{\w+\}(?:/\{\w+\})*", p)) for p in documented):
            wrong.append(f"src/http/router.cpp serves {path}, which docs/openapi.yaml lacks")
    for p in documented:
        if not any(p == s or p.startswith(s) and s.endswith("/") for s in served):
            wrong.append(f"docs/openapi.yaml has {p}, which src/http/router.cpp does not serve")
    all_docs = docs()
    for name in ("README.md", "docs/api.md"):
        rows = "\n".join(line for line in all_docs[name].splitlines() if line.startswith("|"))
        for p, methods in route_methods().items():
            spelled = re.sub(r"\{(\w+)\}", r"<\1>", p)
            for method in methods:
                if not re.search(rf"`{method} {re.escape(spelled)}[`?\[ ]", rows):
                    wrong.append(f"{name}: its route table lacks {method} {spelled}")


def route_methods():
    """Each path of docs/openapi.yaml and the methods it answers: its
    operations but the one listed for every other method ("Every method
    but ...")."""
    out = {}
    for block in re.split(r"^(?=  /)", read("docs/openapi.yaml").split("\ncomponents:")[0], flags=re.M):
        head = re.match(r"  (/\S*):\s*$", block, re.M)
        if not head:
            continue
        ops = re.findall(r"^    (get|put|post|delete|patch):\n      (\w+):(.*)$", block, re.M)
        out[head.group(1)] = [op.upper() for op, key, text in ops
                              if not (key == "description" and text.strip().startswith("Every method but"))]
    return out


def config_keys(wrong):
    """The keys the parser reads: a section's getter called with a literal
    key (coord.integer("min_id", ...)), a helper given the section and a key
    (read_secret_line(zk, "auth_file", ...)), or a local lambda of the
    function reading one section (ms("lease_timeout_ms", ...))."""
    keys = set()
    for path in sorted((ROOT / "src" / "config").glob("config*.cpp")):
        current, lambdas = None, set()
        for line in path.read_text().splitlines():
            if m := re.match(r"\S.*\bJsonSection&? (\w+)[,)]", line):
                current, lambdas = m.group(1), set()  # a function of one section begins
            for var in re.findall(r"\bJsonSection&? (\w+)", line):
                if var not in SECTIONS:
                    wrong.append(f"{path.relative_to(ROOT)}: JsonSection {var}: add it to "
                                 "SECTIONS in scripts/check-doc-facts.py")
            lambdas.update(re.findall(r"\bauto (\w+) = \[&\]\(const char\* key", line))
            reads = re.findall(r"\b(\w+)\.(?:integer|string|boolean|choice|string_list|raw)"
                               r'\("(\w+)"', line) + re.findall(r'\b\w+\((\w+), "(\w+)"', line)
            reads += [(current, key) for name, key in re.findall(r'\b(\w+)\("(\w+)"', line)
                      if name in lambdas]
            for var, key in reads:
                if SECTIONS.get(var) is not None:
                    keys.add(f"{SECTIONS[var]}.{key}".lstrip("."))
    doc = read("docs/configuration.md")
    table = set(re.findall(r"^\| `([a-z_.]+)` \|", section(doc, "Keys") or "", re.M))
    if not keys:
        wrong.append("src/config/*.cpp: no config keys found")
    both_ways(wrong, keys, table,
              "docs/configuration.md: the key table lacks {}, which src/config/*.cpp reads",
              "docs/configuration.md: the key table has {}, which src/config/*.cpp does not read")
    env = set(re.findall(r'\{"(SNOWFLAKED_\w+)", "([\w.]+)"', read("include/snowflake/config/config.hpp")))
    env_doc = set(re.findall(r"^\| `(SNOWFLAKED_\w+)` \| `([\w.]+)`", doc, re.M))
    for variable, key in sorted(env ^ env_doc):
        where = "lacks" if (variable, key) in env else "has"
        wrong.append(f"docs/configuration.md: the environment table {where} {variable} -> "
                     f"{key}; kOverridableKeys (include/snowflake/config/config.hpp) "
                     f"{'has' if where == 'lacks' else 'does not have'} it")


def refusal_codes(wrong):
    header = read("include/snowflake/runtime/metrics.hpp")
    m = re.search(r"kRefusalCodes = \{(.*?)\};", header, re.S)
    in_code = set(re.findall(r'"(\w+)"', m.group(1))) - {"other"} if m else set()
    table = section(read("docs/api.md"), "HTTP API") or ""
    in_doc = {"unhealthy"}  # /health's, in its own row of the route table
    for row in re.findall(r"^\| 503 \| (.*?) \|", table, re.M):
        in_doc |= set(re.findall(r"`(\w+)`", row))
    both_ways(wrong, in_code, in_doc,
              "docs/api.md: its 503 rows lack {}, which snowflake_refusals_total counts",
              "docs/api.md: 503 {} is counted as code=\"other\" (Metrics::kRefusalCodes lacks it)")
    explained = set(re.findall(r"^\| \[`(\w+)`\]\(monitoring\.md#\w+\) \|", table, re.M))
    both_ways(wrong, in_doc - {"unhealthy"}, explained,
              "docs/api.md: the table of what each 503 means has no row for {}",
              "docs/api.md: the table of what each 503 means explains {}, which no 503 row lists")
    readme = set(re.findall(r"^\| `(\w+)` \| .* \| \[\w+\]\(docs/monitoring\.md#\w+\) \|$",
                            read("README.md"), re.M))
    both_ways(wrong, in_doc - {"unhealthy", "stopping", "sequences_disabled"}, readme,
              "README.md: its 503 table lacks {}, which a request may get",
              "README.md: its 503 table has {}, which docs/api.md's 503 rows do not")


def synopsis(text):
    """{subcommand: (flags, optional flags)} of a usage block: the lines from
    `snowflaked ...` on, without the descriptions (from column 45 on, or
    after a gap of three spaces)."""
    entries, head = {}, None
    for line in text.splitlines():
        body = line.rstrip()
        indent = len(body) - len(body.lstrip())
        if not body or indent >= 45:
            continue
        body = re.split(r" {3,}", body.strip(), maxsplit=1)[0]
        if body.startswith("snowflaked --help"):  # the usage text's Options list them
            head = None
            continue
        if body.startswith("snowflaked"):
            words = []
            for w in body.split()[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", w):
                    break
                words.append(w)
            head = " ".join(words)
            entries.setdefault(head, (set(), set()))
        elif head is None or not body.startswith(("[", "--", "(")):
            head = None
            continue
        flags, optional = entries[head]
        depth = 0
        for m in re.finditer(r"\[|\]|--[a-z][a-z-]*", body):
            t = m.group(0)
            depth += 1 if t == "[" else -1 if t == "]" else 0
            if t.startswith("--"):
                flags.add(t)
                if depth > 0:
                    optional.add(t)
    return entries


def command_line(wrong):
    usage = re.search(r'R"\(Usage:\n(.*?)\)"', read("src/commands/command_line.cpp"), re.S)
    block = re.search(r"^## Command line\n+```\n(.*?)^```", read("docs/api.md"), re.S | re.M)
    if not usage or not block:
        wrong.append("the usage text or docs/api.md's Command line block is not found")
        return
    code, doc = synopsis(usage.group(1)), synopsis(block.group(1))
    both_ways(wrong, set(code), set(doc),
              "docs/api.md: its command line lacks `snowflaked {}`",
              "docs/api.md: its command line shows `snowflaked {}`, which the usage text lacks")
    for head in sorted(set(code) & set(doc)):
        name = f"snowflaked {head}".strip()
        both_ways(wrong, code[head][0], doc[head][0],
                  f"docs/api.md: `{name}` lacks {{}}, which the usage text shows",
                  f"docs/api.md: `{name}` shows {{}}, which the usage text lacks")
        for flag in sorted(code[head][0] & doc[head][0]):
            if (flag in code[head][1]) != (flag in doc[head][1]):
                wrong.append(f"`{name}` {flag}: optional in "
                             f"{'the usage text' if flag in code[head][1] else 'docs/api.md'} "
                             "only")


def cited_versions(wrong):
    released = re.findall(r"^## (\d+\.\d+)\.\d+\b", read("CHANGELOG.md"), re.M)
    full = set(re.findall(r"^## (\d+\.\d+\.\d+)\b", read("CHANGELOG.md"), re.M))
    for name, text in docs().items():
        text = prose(text)
        for m in re.finditer(r"\b(?:before|after|since|by|runs|running|version) "
                             r"(0\.\d{1,2}(?:\.\d+)?)\b(?!\.\d| ?%| s\b| ms\b)", text):
            v = m.group(1)
            if v not in full and v not in released:
                wrong.append(f"{name}:{line_of(text, m.start())}: names version {v}, which "
                             "CHANGELOG.md has not released")


def cited_figures(wrong):
    readme = prose(read("README.md"))
    # A paragraph, a list item or a table row: a figure beside a link is one
    # it cites.
    for part in re.split(r"\n\s*\n|\n(?=- |\|)", readme):
        for target, anchor in re.findall(r"\]\((docs/[\w.-]+\.md)(?:#([\w-]+))?\)", part):
            linked = read(target)
            if anchor:
                titles = re.findall(r"^#+ (.+?)\s*$", linked, re.M)
                title = next((t for t in titles
                              if re.sub(r"[^\w\- ]", "", t.lower()).replace(" ", "-") == anchor),
                             None)
                linked = section(linked, title) if title else linked
            where = f"{target}#{anchor}" if anchor else target
            for figure in FIGURE.findall(re.sub(r"\]\([^)]*\)", "]", part)):
                if figure not in linked:
                    wrong.append(f"README.md:{line_of(readme, readme.find(part))}: cites {figure}, "
                                 f"which {where} does not hold")


def buffer_span(wrong):
    settings = re.search(r"struct SequenceSettings \{.*?\n\};",
                         read("include/snowflake/config/config.hpp"), re.S).group(0)
    duration = int(re.search(r"segment_duration\{(\d+)\}", settings).group(1))
    refill = int(re.search(r"refill_at_percent = (\d+);", settings).group(1)) / 100
    # At a steady rate a range lasts segment_duration; the next is fetched
    # once refill_at of it is used, so the buffer holds (1 - refill) to
    # (2 - refill) ranges (include/snowflake/sequences/sizing.hpp).
    span = ((1 - refill) * duration / 60, (2 - refill) * duration / 60)
    texts = {**docs(), "include/snowflake/sequences/sizing.hpp":
             read("include/snowflake/sequences/sizing.hpp")}
    for name, text in texts.items():
        for m in re.finditer(loose(r"(\d+(?:\.\d+)?) to (\d+(?:\.\d+)?) minutes of "
                                   r"(?:its rate|numbers)"), text):
            if (float(m.group(1)), float(m.group(2))) != tuple(round(x, 2) for x in span):
                wrong.append(f"{name}:{line_of(text, m.start())}: a buffer of {m.group(1)} to "
                             f"{m.group(2)} minutes; the defaults give {span[0]:g} to "
                             f"{span[1]:g}")


def main():
    wrong = []
    for check in (exit_codes, config_file_names, routes, config_keys, refusal_codes,
                  command_line, cited_versions, cited_figures, buffer_span):
        check(wrong)
    for mismatch in wrong:
        print(f"check-doc-facts: {mismatch}")
    if wrong:
        return 1
    print("check-doc-facts: exit codes, the config file's name, routes, config keys, refusal "
          "codes, the command line, cited versions and figures agree with the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
