#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UndefinedBehaviorSanitizer (-DNCCLSWEEP_SANITIZE=ON)
# into ./build-asan (or $BUILD_DIR) and runs the whole CTest suite under it; any report stops
# the test that hit it (halt_on_error=1) and fails the run. See docs/reliability.md
# "Fuzzing and sanitizers".
#   JOBS=2 scripts/sanitize.sh            # build with 2 jobs (default: nproc)
#   CTEST_JOBS=4 scripts/sanitize.sh      # run 4 tests at a time (default: 3)
#   scripts/sanitize.sh -R core           # extra arguments go to ctest
#   SANITIZE_STEPS=build scripts/sanitize.sh   # only build (test: only run; default: both)
# The build is Debug (assertions on) at -O1 -g1: -O0 runs the suite markedly slower under ASan,
# and -O1 keeps stack traces readable; -g1 keeps the line tables a report's stack trace needs
# (function, file and line) and drops the variables' debug info, which no report reads: the
# largest unit (core's unity_1) compiles in 24.8 s instead of 36.6 s with -g. BUILD_TYPE and
# SANITIZE_CFLAGS override both. CTEST_JOBS sets the suite's parallelism (default 3: it waits
# on processes, sshd and Slurm more than it computes).
# Tests whose names contain "bounded memory" run in a second pass with a small ASan quarantine
# (see below). Not run: the `gpu` label, and the end-to-end tests of Slurm, Chromium and the
# long simulated studies (below; ASAN_ALL=1 runs them). tpverify's CUDA backend is switched off in this build
# (-DNCCLSWEEP_CUDA=OFF): nvcc does not accept -fsanitize=address, and ASan's shadow memory
# clashes with the CUDA driver's fixed mappings; the GPU test skips without it anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build_dir=${BUILD_DIR:-build-asan}
jobs=${JOBS:-$(nproc)}
ctest_jobs=${CTEST_JOBS:-3}
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Executables link without PIE: UBSan's 2 MB of source locations per unit would otherwise be
# relocated at every start (13,800 page faults and 0.29 s of CPU to start test_core and exit,
# 7,900 and 0.20 s without PIE), and the suite starts a test binary for each of its 750 tests and
# ncclsweep or tpverify many times in most end-to-end tests.
# No bench/ programs: no test runs them, and they are timed in the ordinary build. The test
# suites compile in batches of 8 files, as in scripts/test.sh, and their own code at -O0 with
# ASan only (tests/CMakeLists.txt): the code under test keeps -O1 and ASan + UBSan.
steps=${SANITIZE_STEPS:-build,test}
cflags=${SANITIZE_CFLAGS:--O1 -g1}
if [[ ,$steps, == *,build,* ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Debug}" \
    -DCMAKE_CXX_FLAGS_DEBUG="$cflags" -DCMAKE_C_FLAGS_DEBUG="$cflags" \
    -DNCCLSWEEP_SANITIZE=ON -DNCCLSWEEP_CUDA=OFF -DNCCLSWEEP_BENCH=OFF -DNCCLSWEEP_UNITY=ON \
    -DNCCLSWEEP_TEST_FLAGS="${SANITIZE_TEST_FLAGS:--O0}" \
    -DCMAKE_EXE_LINKER_FLAGS=-no-pie \
    "${launcher[@]}" >/dev/null
  cmake --build "$build_dir" -j "$jobs"
fi
[[ ,$steps, == *,test,* ]] || exit 0
# halt_on_error: the first report ends the process with a failure (UBSan too: the build also
# uses -fno-sanitize-recover=undefined). Leaks are errors. Stack traces with symbols.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$build_dir"
# Tests that assert a bound on ncclsweep's peak RSS run in a second pass with a 16 MB
# quarantine: ASan keeps the last 256 MB of freed blocks by default (to catch use-after-free),
# so 150 MB of streamed log lines would show up as ~550 MB of RSS that is ASan's, not the tool's.
memory_tests='bounded memory'
# Not run under the sanitizers (ASAN_ALL=1 runs them too): the 18 end-to-end tests whose time
# goes to other programs and to long simulated studies — a one-node Slurm (its daemons, sbatch,
# time limits), headless Chromium, the seed study, quickstart, the README tour and the nightly
# gate (dozens of tpverify runs each). The ordinary pass runs them; the code they reach is the
# Slurm runner, the report, search, diff and the store, which their unit tests (remote:slurm
# target, results:*, core:*) and the other 100 end-to-end tests run here. They were 185 s of the
# pass's 535 s (docs/reliability.md "CI time").
heavy_e2e='^e2e: ?(slurm|seed study|report|nightly gate|readme tour|quickstart):'
excluded="$memory_tests"
[ "${ASAN_ALL:-0}" != 0 ] || excluded="$memory_tests|$heavy_e2e"
# The in-process unit suites (core, results, engine, tuner) run as one process each (their
# `whole` tests, tests/CMakeLists.txt) rather than one process per case.
status=0
ctest --output-on-failure -j "$ctest_jobs" --timeout 900 -LE '^(gpu|core|results|engine|tuner)$' -E "$excluded" --output-junit "$PWD/ctest-junit.xml" "$@" || status=$?
ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=16:thread_local_quarantine_size_kb=64" \
  ctest --output-on-failure --timeout 900 -LE gpu -R "$memory_tests" --output-junit "$PWD/ctest-junit-memory.xml" "$@" || status=$?
# Skips are failures here too unless allowed (scripts/test.sh passes its list; see check-skips.py).
if [ "${CHECK_SKIPS:-1}" != 0 ] && [ -n "${ALLOWED_SKIPS:-}" ]; then
  # shellcheck disable=SC2086
  python3 "$repo/scripts/check-skips.py" ctest-junit.xml --allow $ALLOWED_SKIPS || status=1
  # shellcheck disable=SC2086
  python3 "$repo/scripts/check-skips.py" ctest-junit-memory.xml --allow $ALLOWED_SKIPS || status=1
fi
exit $status
