#!/usr/bin/env python3
"""Fails when CTest skipped a test that this machine should have been able to run.

    scripts/check-skips.py JUNIT.xml [--allow REQ ...]

JUNIT.xml is CTest's `--output-junit` file. A test is skipped only by exiting 77 without a
failure (tests/support/catch_main.cpp; a failure after the marker is a failure, not a skip), and
says what it lacked with a line "NCCLSWEEP_SKIP(requirement): reason" (tests/support/skip.hpp);
the GPU tests, shell scripts that exit 77 without a GPU, count as requirement "gpu". Skips whose requirement is in --allow are listed and
accepted; any other skip is an error (exit 1): scripts/test.sh installs sshd and chromium and
runs as root, so a test that skipped for lack of them hides a broken setup, not a missing GPU.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET

MARKER = re.compile(r"NCCLSWEEP_SKIP\(([^)]*)\): ?(.*)")


def skipped_tests(path):
    tree = ET.parse(path)
    for case in tree.iter("testcase"):
        skipped = case.find("skipped")
        status = case.get("status", "")
        if skipped is None and status not in ("notrun", "skipped"):
            continue
        out = "".join(e.text or "" for e in case.iter("system-out"))
        match = MARKER.search(out)
        name = case.get("name", "?")
        if match:
            yield name, match.group(1), match.group(2)
        elif name.startswith("gpu:"):
            yield name, "gpu", "no GPU on this machine (exit 77)"
        else:
            yield name, "unknown", "skipped without saying why"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit")
    parser.add_argument("--allow", nargs="*", default=[], help="requirements whose skips are expected here")
    args = parser.parse_args()
    try:
        skips = list(skipped_tests(args.junit))
    except (OSError, ET.ParseError) as error:
        print(f"check-skips: cannot read {args.junit}: {error}", file=sys.stderr)
        return 2
    bad = [s for s in skips if s[1] not in args.allow]
    for name, requirement, reason in skips:
        verdict = "NOT ALLOWED" if requirement not in args.allow else "expected"
        print(f"check-skips: skipped ({requirement}, {verdict}): {name}: {reason}", file=sys.stderr)
    if bad:
        print(f"check-skips: {len(bad)} test(s) skipped for want of something this machine should have "
              f"({', '.join(sorted({s[1] for s in bad}))}); fix the setup or run with SANITIZE=0 CHECK_SKIPS=0 "
              "to look at the rest", file=sys.stderr)
        return 1
    print(f"check-skips: {len(skips)} skipped, all expected here", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
