#!/usr/bin/env bash
# CTest test "support: skips are skips": with sshd made unavailable (SSHD=/nonexistent), an ssh
# test must be reported by CTest as skipped, not passed, and scripts/check-skips.py must fail
# on that skip unless "sshd" is allowed. Usage: skips_are_skips.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=${1:?build dir}; source=${2:?source dir}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
test_name='remote:ssh: streams, exit status and signals'
fail() { echo "FAIL: $*"; cat "$work/ctest.out" 2>/dev/null; exit 1; }
(cd "$build" && SSHD=/nonexistent ctest -R "^${test_name}\$" --output-junit "$work/junit.xml" >"$work/ctest.out" 2>&1) ||
  fail "ctest exited non-zero for a skipped test"
grep -q "Skipped" "$work/ctest.out" || fail "CTest did not report the test as skipped"
grep -q "100% tests passed, 0 tests failed out of 1" "$work/ctest.out" && ! grep -q "Skipped" "$work/ctest.out" &&
  fail "the skipped test counted as passed"
if python3 "$source/scripts/check-skips.py" "$work/junit.xml" --allow gpu 2>"$work/check.err"; then
  cat "$work/check.err"; fail "check-skips accepted an sshd skip"
fi
grep -q "skipped (sshd, NOT ALLOWED)" "$work/check.err" || { cat "$work/check.err"; fail "check-skips did not name the requirement"; }
python3 "$source/scripts/check-skips.py" "$work/junit.xml" --allow gpu sshd 2>"$work/check.err" ||
  { cat "$work/check.err"; fail "check-skips refused an allowed skip"; }
echo "ok: skipped, reported as skipped, refused by check-skips unless allowed"
