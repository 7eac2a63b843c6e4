#!/usr/bin/env python3
"""Checks the folder dependency rules of docs/architecture.md against the #include lines.

    scripts/check-includes.py [SOURCE_DIR]

Every `#include "FOLDER/..."` in a source folder must name a folder that folder may depend
on. Exit 1 with one line per violation (file:line, what it includes, what is allowed), 0 when
the tree follows the rules. Run by CTest as "support: folder dependency rules".
"""
import pathlib
import re
import sys

# folder -> project folders its sources may include (itself always allowed). Keep in step with
# the table in docs/architecture.md.
RULES = {
    "core": set(),
    "remote": {"core"},
    "results": {"core"},
    "engine": set(),
    "tuner": set(),
    "cli": {"core", "remote", "results"},
    "bench": {"core", "remote", "results", "tests"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')
SUFFIXES = {".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp"}


def violations(root):
    for folder, allowed in RULES.items():
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                if target == folder or target in allowed or not (root / target).is_dir():
                    continue  # own folder, an allowed one, or not a project folder (e.g. "libssh/")
                shown = ", ".join(sorted(allowed)) or "nothing outside itself"
                yield f"{path.relative_to(root)}:{number}: {folder}/ includes {target}/ ({line.strip()}); " \
                      f"{folder}/ may include {shown} (docs/architecture.md)"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = list(violations(root))
    for line in found:
        print(line)
    if found:
        print(f"check-includes: {len(found)} include(s) break the folder dependency rules", file=sys.stderr)
        return 1
    print("check-includes: every #include follows the folder dependency rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
