#!/usr/bin/env python3
"""Nothing lost on the way: every link of the Markdown files (README.md,
CHANGELOG.md, docs/, model/) resolves to a file, and to a heading where it
names one; and every place in the code, the alert rules, the OpenAPI
document, the unit and the scripts that cites a doc resolves too, whether as
a link (docs/monitoring.md#lease_expired) or as a doc and a heading's title
(docs/design.md, "Why two daemons never issue the same ID").

Exits 1 naming each one that does not. Run by CTest (label docs).
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CITED_ANCHOR = re.compile(r"\b((?:docs/)?[\w.-]+\.md)#([\w-]+)")
CITED_TITLE = re.compile(r'\b(docs/[\w.-]+\.md),\s*(?:#\s*|//\s*)?"([^"]+)"')


def tracked(*patterns):
    names = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                            "--", *patterns], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    return [ROOT / n for n in names if (ROOT / n).is_file()]


def without_code(text):
    """The text outside fenced blocks and inline code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(title):
    """GitHub's anchor for a heading."""
    title = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", title)
    title = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return title.replace(" ", "-")


def headings(path, cache={}):
    if path not in cache:
        titles = re.findall(r"^#{1,6} (.+?)\s*$",
                            re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M),
                            re.M)
        seen, anchors = {}, set()
        for t in titles:
            s = slug(t)
            anchors.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
        cache[path] = (anchors, {t.strip().strip("`") for t in titles})
    return cache[path]


def check_target(base, target, where, wrong):
    path, _, anchor = target.partition("#")
    file = (base / path).resolve() if path else where
    if not file.exists():
        wrong.append(f"{where.relative_to(ROOT)}: {target}: no such file")
        return
    if anchor and file.suffix == ".md" and anchor not in headings(file)[0]:
        wrong.append(f"{where.relative_to(ROOT)}: {target}: no such heading in "
                     f"{file.relative_to(ROOT)}")


def main():
    wrong = []
    docs = tracked("*.md")
    for doc in docs:
        for target in LINK.findall(without_code(doc.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            check_target(doc.parent, target, doc, wrong)
    citing = tracked("src/*", "include/*", "tests/*", "contrib/*", "docs/openapi.yaml",
                     "systemd/*", "packaging/*", "scripts/*", "model/*", "conf/*", ".ci/*",
                     "clients/*")
    cited = 0
    for source in citing:
        try:
            text = source.read_text()
        except UnicodeDecodeError:
            continue
        text = re.sub(r"\s*\n\s*(?://|#|\*)?\s*", " ", text)  # a citation may wrap
        for doc, anchor in CITED_ANCHOR.findall(text):
            file = ROOT / doc if doc.startswith("docs/") or "/" not in doc else None
            if doc.endswith("README.md") and doc != "README.md":
                continue  # another README (the model's): not a doc of ours to cite by anchor
            cited += 1
            check_target(ROOT, f"{doc}#{anchor}", source, wrong)
        for doc, title in CITED_TITLE.findall(text):
            cited += 1
            file = ROOT / doc
            if not file.exists():
                wrong.append(f"{source.relative_to(ROOT)}: {doc}: no such file")
            elif title not in headings(file)[1]:
                wrong.append(f'{source.relative_to(ROOT)}: {doc}, "{title}": no such heading')
    for line in wrong:
        print(f"check-docs: {line}")
    if wrong:
        return 1
    print(f"check-docs: {len(docs)} Markdown files' links and {cited} citations resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
