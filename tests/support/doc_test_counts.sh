#!/usr/bin/env bash
# CTest test "support: test counts quoted in docs are CTest's": every quote of the form
#   ctest -R 'REGEX' ...; N tests        (a group of tests named in a doc)
#   `ctest -N` lists N tests             (the whole suite)
# in README.md and docs/*.md is checked against `ctest -N` in this build, so a doc that counts
# tests stays true when tests are added, merged or removed.
set -euo pipefail
source=${1:?source dir}
build=${2:?build dir}
count() {  # count [REGEX]: how many tests ctest -N lists (less the sanitizer build's `whole` suites)
  local out
  if [ $# -gt 0 ]; then out=$(ctest --test-dir "$build" -N -LE whole -R "$1"); else out=$(ctest --test-dir "$build" -N -LE whole); fi
  sed -n 's/^Total Tests: \([0-9]*\)$/\1/p' <<<"$out"
}
status=0
checked=0
while IFS=$'\t' read -r file regex quoted; do
  checked=$((checked + 1))
  if [ "$regex" = "-" ]; then actual=$(count); else actual=$(count "$regex"); fi
  if [ "$actual" != "$quoted" ]; then
    echo "FAIL: $file says ${regex/#-/the whole suite} has $quoted tests; ctest -N lists $actual"
    status=1
  else
    echo "ok: $file: ${regex/#-/the whole suite}: $quoted tests"
  fi
done < <(python3 - "$source" <<'PY'
import pathlib, re, sys
root = pathlib.Path(sys.argv[1])
for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
    text = path.read_text()
    for m in re.finditer(r"ctest -R '([^']+)'[^;\n]*; ([0-9]+) tests", text):
        print(f"{path.name}\t{m.group(1)}\t{m.group(2)}")
    for m in re.finditer(r"`ctest -N` lists ([0-9,]+) tests", text):
        print(f"{path.name}\t-\t{m.group(1).replace(',', '')}")
PY
)
[ "$checked" -gt 0 ] || { echo "FAIL: no quoted test count found (the docs' wording changed?)"; exit 1; }
exit $status
