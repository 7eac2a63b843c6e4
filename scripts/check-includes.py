#!/usr/bin/env python3
"""Checks the folder dependency rules of docs/architecture.md against the #include lines.

    scripts/check-includes.py [SOURCE_DIR]

Three rules, each a table below kept in step with docs/architecture.md:
- every `#include "FOLDER/..."` in a source folder names a folder that folder may depend on (RULES);
- inside core/, engine/ and results/, one folder per subject, layered: a subject includes the
  library's root files and the subjects of its row (CORE_RULES, SUBJECTS); core/'s subjects
  also declare their folder's namespace;
- no folder includes a third-party header (`#include <...>`) of a library it does not link
  (DENIED): core/ cannot reach SQLite or libssh, the engine nothing but CUDA and NCCL.
Exit 1 with one line per violation (file:line, what it includes, what is allowed), 0 when the
tree follows the rules. Run by CTest as "support: folder dependency rules".
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
# Inside core/, one folder per subject, layered: a subject may include the core/ root files
# (Result, Experiment, Target, text, log) and the subjects listed here. Keep in step with the
# table "core/ by subject" in docs/architecture.md.
CORE_RULES = {
    "stats": set(),
    "nccl": set(),
    "spec": {"nccl", "stats"},
    "plan": {"nccl", "spec", "stats"},
    "watch": {"nccl", "spec", "stats"},
    "search": {"nccl", "spec", "stats", "plan"},
    "sweep": {"nccl", "spec", "stats", "plan", "watch", "search"},
    "": set(),  # the root files of core/ include no subject
}
# engine/ and results/ by subject, as core/ (docs/architecture.md, "engine/ by subject" and
# "results/ by subject"). "" is the library's root folder, whose files every subject may include.
ENGINE_RULES = {
    "": set(),  # the vocabulary: options, the reporter, statistics
    "model": set(),
    "launch": set(),
    "run": {"model", "launch"},
    "sim": {"model", "run"},
    "cuda": {"model", "launch", "run", "sim"},
}
RESULTS_RULES = {
    "store": set(),
    "query": {"store"},
    "print": {"query", "store"},
    "export": {"query", "store"},
    "report": {"export", "query", "store"},
}
SUBJECTS = {"engine": ENGINE_RULES, "results": RESULTS_RULES}
# Third-party headers, by the start of their #include <...> name, and the library each is of.
# A folder must not include one of a library it does not link (DENIED); standard and POSIX
# headers are everyone's. The CUDA and NCCL headers are allowed in engine/cuda/ alone.
THIRD_PARTY = {
    "sqlite3.h": "SQLite", "libssh/": "libssh", "CLI/": "CLI11", "fmt/": "fmt",
    "yaml-cpp/": "yaml-cpp", "nlohmann/": "nlohmann-json", "re2/": "RE2", "catch2/": "Catch2",
    "cuda": "CUDA", "cublas": "cuBLAS", "nccl.h": "NCCL", "nccl_net.h": "NCCL",
}
GPU_HEADERS = {"cuda", "cublas", "nccl.h", "nccl_net.h"}
DENIED = {
    "core": {"sqlite3.h", "libssh/", "CLI/", "catch2/"} | GPU_HEADERS,
    "remote": {"sqlite3.h", "CLI/", "catch2/"} | GPU_HEADERS,
    "results": {"libssh/", "CLI/", "catch2/"} | GPU_HEADERS,
    "cli": {"sqlite3.h", "libssh/", "catch2/"} | GPU_HEADERS,
    "engine": set(THIRD_PARTY),
    "tuner": set(THIRD_PARTY),
}
ANGLE = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')
NAMESPACE = re.compile(r'^\s*namespace\s+ncclsweep((?:::(?:inline\s+)?[A-Za-z0-9_]+)*)\s*\{')
CORE_INCLUDE = re.compile(r'^\s*#\s*include\s+"core/(?:([A-Za-z0-9_]+)/)?[A-Za-z0-9_]+\.hpp"')
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


def core_violations(root):
    base = root / "core"
    for path in sorted(base.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(base)
        subject = rel.parts[0] if len(rel.parts) > 1 else ""
        if subject not in CORE_RULES:
            yield f"core/{rel}: core/{subject}/ is not a subject of docs/architecture.md (add it to CORE_RULES)"
            continue
        allowed = CORE_RULES[subject]
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            opened = NAMESPACE.match(line)
            if opened and subject:
                parts = [p.replace("inline", "").strip() for p in opened.group(1).split("::") if p]
                if not parts or parts[0] != subject:
                    yield f"core/{rel}:{number}: a file of core/{subject}/ declares namespace ncclsweep{opened.group(1)}; " \
                          f"its declarations belong in ncclsweep::{subject} (docs/architecture.md)"
                continue
            if opened and opened.group(1):
                first = opened.group(1).split("::")[1].replace("inline", "").strip()
                if first in CORE_RULES:
                    yield f"core/{rel}:{number}: a root file of core/ declares the subject namespace ncclsweep::{first}"
                continue
            match = CORE_INCLUDE.match(line)
            if not match or match.group(1) is None or match.group(1) == subject or match.group(1) in allowed:
                continue
            who = f"core/{subject}/" if subject else "the core/ root"
            shown = ", ".join(f"core/{a}/" for a in sorted(allowed)) or "no other subject"
            yield f"core/{rel}:{number}: {who} includes core/{match.group(1)}/ ({line.strip()}); " \
                  f"{who} may include {shown} (docs/architecture.md)"


def sources(base):
    for path in sorted(base.rglob("*")):
        if path.suffix in SUFFIXES and path.is_file():
            yield path


def third_party_violations(root):
    for folder, denied in DENIED.items():
        base = root / folder
        if not base.is_dir():
            continue
        for path in sources(base):
            rel = path.relative_to(root)
            in_engine_cuda = folder == "engine" and len(rel.parts) > 2 and rel.parts[1] == "cuda"
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = ANGLE.match(line)
                if not match:
                    continue
                header = match.group(1)
                for prefix in sorted(denied):
                    if header.startswith(prefix) and not (in_engine_cuda and prefix in GPU_HEADERS):
                        yield f"{rel}:{number}: {folder}/ includes <{header}> ({THIRD_PARTY[prefix]}), " \
                              f"a library {folder}/ does not link (docs/architecture.md)"


def subject_violations(root):
    """engine/ and results/: the layered subjects of SUBJECTS."""
    for library, rules in SUBJECTS.items():
        base = root / library
        if not base.is_dir():
            continue
        pattern = re.compile(r'^\s*#\s*include\s+"' + library + r'/(?:([A-Za-z0-9_]+)/)?[A-Za-z0-9_.]+"')
        for path in sources(base):
            rel = path.relative_to(base)
            subject = rel.parts[0] if len(rel.parts) > 1 else ""
            if subject not in rules:
                yield f"{library}/{rel}: {library}/{subject}/ is not a subject of docs/architecture.md (add it to SUBJECTS)"
                continue
            allowed = rules[subject]
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = pattern.match(line)
                if not match:
                    continue
                target = match.group(1) or ""
                if target in (subject, "") or target in allowed:
                    continue  # its own folder, the library's root, or an allowed subject
                who = f"{library}/{subject}/" if subject else f"the {library}/ root"
                shown = ", ".join(f"{library}/{a}/" for a in sorted(allowed)) or "no other subject"
                yield f"{library}/{rel}:{number}: {who} includes {library}/{target}/ ({line.strip()}); " \
                      f"{who} may include {shown} (docs/architecture.md)"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    found = [*violations(root), *core_violations(root), *subject_violations(root),
             *third_party_violations(root)]
    for line in found:
        print(line)
    if found:
        print(f"check-includes: {len(found)} include(s) break the folder dependency rules", file=sys.stderr)
        return 1
    print("check-includes: every #include follows the folder dependency rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
