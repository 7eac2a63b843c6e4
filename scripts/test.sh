#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test (unit, golden, end-to-end with a real
# sshd on 127.0.0.1; GPU tests skip cleanly on machines without a GPU), then builds everything
# again with AddressSanitizer + UndefinedBehaviorSanitizer and runs the suite once more under
# them (scripts/sanitize.sh, into ./build-asan). SANITIZE=0 skips that second pass for a quick
# local check; docs/reliability.md "CI time" has the measured time of both passes (19-23 min from
# a fresh clone on the 2-core development machine without ccache; 19 min 16 s at 7e0add0). CI
# (.ci/run) runs this script as it is.
#
# A test that cannot run on this machine is reported by CTest as skipped (never as passed),
# and scripts/check-skips.py then fails the run unless what it lacked is something this
# script cannot provide: a GPU (or, on a GPU host, a host without nvidia-smi), and tmpfs
# mounts and a one-node Slurm when not run as root. CHECK_SKIPS=0 turns that check off.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
# Formatting first: a drifted file fails in a second, before the builds (scripts/check-format.sh --fix mends it).
bash scripts/check-format.sh
# The test build leaves out debug info: -g costs about a quarter of each compile at -O2
# (tests/e2e/test_nightly_gate.cpp: 12.3 s with it, 8.9 s without) and more in the links, and
# no test reads it (Catch2 names the file and line of a failed check itself). scripts/build.sh
# alone still builds RelWithDebInfo with -g; the sanitizer pass keeps -g for its stack traces.
# The test suites compile in batches of 8 files (NCCLSWEEP_UNITY): 8 core test files took
# 24.8 s one by one and 15.0 s as one unit, as each file parses Catch2 and the headers again.
# The tests' own code at -O1 (NCCLSWEEP_TEST_FLAGS; the code under test stays at -O2): test_core's
# first batch compiles in 10.0 s instead of 13.1 s.
bash scripts/build.sh -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DNCCLSWEEP_UNITY=ON -DNCCLSWEEP_TEST_FLAGS=-O1
build_dir=${BUILD_DIR:-build}
allowed=(gpu no-nvidia-smi)
# Not root: no tmpfs mounts, slurmd may refuse to run as an ordinary user, and no test users
# (the login shells of tests/e2e/test_run_ssh_login.cpp) can be made.
[ "$(id -u)" -eq 0 ] || allowed+=(mount slurm root)
junit="$PWD/$build_dir/ctest-junit.xml"
# The sanitizer build compiles (niced) while the ordinary suite runs: the suite mostly waits on
# processes, sshd and Slurm (about half a core), so the two overlap instead of adding up. Its
# output goes to build-asan.log, shown if it fails.
asan_build=
if [ "${SANITIZE:-1}" != 0 ]; then
  # setsid: its own process group, so that an early exit stops the compilers too.
  SANITIZE_STEPS=build BUILD_DIR=build-asan setsid nice -n 10 bash scripts/sanitize.sh >build-asan.log 2>&1 &
  asan_build=$!
  trap '[ -n "$asan_build" ] && kill -- "-$asan_build" 2>/dev/null; true' EXIT
fi
# Three tests at a time on two cores (CTEST_JOBS): the suite waits on processes more than it
# computes, and no test depends on wall-clock timing (scripts/soak.sh runs the suite again and again
# with a CPU hog beside it; docs/reliability.md has its runs).
(cd "$build_dir" && ctest --output-on-failure -j "${CTEST_JOBS:-3}" --timeout 600 --output-junit "$junit")
if [ "${CHECK_SKIPS:-1}" != 0 ]; then
  python3 scripts/check-skips.py "$junit" --allow "${allowed[@]}"
fi
if [ -n "$asan_build" ]; then
  echo "test.sh: all tests passed; now the same suite under ASan + UBSan (SANITIZE=0 skips this)"
  if ! wait "$asan_build"; then
    asan_build=
    tail -n 60 build-asan.log
    echo "test.sh: the sanitizer build failed (build-asan.log)" >&2
    exit 1
  fi
  asan_build=
  SANITIZE_STEPS=test BUILD_DIR=build-asan ALLOWED_SKIPS="${allowed[*]}" bash scripts/sanitize.sh
fi
