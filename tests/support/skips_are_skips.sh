#!/usr/bin/env bash
# CTest test "support: skips are skips": with sshd made unavailable (SSHD=/nonexistent), an ssh
# test must be reported by CTest as skipped, not passed, and scripts/check-skips.py must fail
# on that skip unless "sshd" is allowed. A test that prints the skip marker and then fails is a
# failure: the skip is an exit status (77, tests/support/catch_main.cpp) that a failure
# replaces, and every discovered test is registered with it alone (no skip regex, which CTest
# would let win over a failure). Usage: skips_are_skips.sh BUILD_DIR SOURCE_DIR
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

# A skip alone exits 77; a skip and then a failure exits as a failure.
rc=0; "$build/tests/test_core" "skip status: a test that only skips" >"$work/skip.out" 2>&1 || rc=$?
[ "$rc" = 77 ] || { cat "$work/skip.out"; fail "a test that only skipped exited $rc, not 77"; }
rc=0; "$build/tests/test_core" "skip status: a test that skips and then fails" >"$work/fail.out" 2>&1 || rc=$?
grep -q "NCCLSWEEP_SKIP(demo)" "$work/fail.out" || { cat "$work/fail.out"; fail "the failing test printed no marker"; }
{ [ "$rc" != 0 ] && [ "$rc" != 77 ]; } || { cat "$work/fail.out"; fail "a test that skipped and failed exited $rc"; }
# CTest reads them so, with the properties every discovered test has.
props=$(cat "$build"/tests/test_*_tests-*.cmake | grep -c "set_tests_properties" || true)
with_code=$(cat "$build"/tests/test_*_tests-*.cmake | grep "set_tests_properties" | grep -c "SKIP_RETURN_CODE 77" || true)
[ "$props" -gt 0 ] && [ "$props" = "$with_code" ] || fail "$with_code of $props discovered tests have SKIP_RETURN_CODE 77"
if cat "$build"/tests/test_*_tests-*.cmake | grep -q "SKIP_REGULAR_EXPRESSION\|DISCOVERY_TIMEOUT"; then
  fail "a discovered test has SKIP_REGULAR_EXPRESSION or the inert DISCOVERY_TIMEOUT"
fi
mkdir "$work/ctest"
cat >"$work/ctest/CTestTestfile.cmake" <<CMAKE
add_test(only_skips "$build/tests/test_core" "skip status: a test that only skips")
set_tests_properties(only_skips PROPERTIES SKIP_RETURN_CODE 77)
add_test(skips_then_fails "$build/tests/test_core" "skip status: a test that skips and then fails")
set_tests_properties(skips_then_fails PROPERTIES SKIP_RETURN_CODE 77)
CMAKE
(cd "$work/ctest" && ctest >"$work/mini.out" 2>&1) && { cat "$work/mini.out"; fail "ctest passed a failing test"; }
grep -q "only_skips .*Skipped" "$work/mini.out" || { cat "$work/mini.out"; fail "ctest did not skip the skip"; }
grep -q "skips_then_fails .*Failed" "$work/mini.out" || { cat "$work/mini.out"; fail "ctest did not fail the failure"; }
echo "ok: skipped, reported as skipped, refused by check-skips unless allowed; a failure after a skip fails"
