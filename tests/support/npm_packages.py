"""npm packages no one here wrote, for the reference tests: installed, pinned,
into a directory of the build tree (once: a later run finds them there)."""

import json
import os
import subprocess


def install(directory, packages):
    """`packages`: {name: version}, installed into `directory`/node_modules."""
    def installed(name, version):
        try:
            with open(os.path.join(directory, "node_modules", name, "package.json"),
                      encoding="utf-8") as f:
                return json.load(f)["version"] == version
        except (OSError, ValueError, KeyError):
            return False
    if all(installed(n, v) for n, v in packages.items()):
        return
    os.makedirs(directory, exist_ok=True)
    subprocess.run(["npm", "install", "--prefix", directory, "--no-audit", "--no-fund", "--no-save",
                    "--loglevel=error"] + [f"{n}@{v}" for n, v in packages.items()],
                   check=True, timeout=300)
