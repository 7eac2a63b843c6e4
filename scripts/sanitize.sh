#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UndefinedBehaviorSanitizer (-DNCCLSWEEP_SANITIZE=ON)
# into ./build-asan (or $BUILD_DIR) and runs the whole CTest suite under it; any report stops
# the test that hit it (halt_on_error=1) and fails the run. See docs/reliability.md
# "Fuzzing and sanitizers".
#   JOBS=2 scripts/sanitize.sh            # build with 2 jobs (default: nproc)
#   scripts/sanitize.sh -R core           # extra arguments go to ctest
# Not run: the `gpu` label. tpverify's CUDA backend is switched off in this build
# (-DNCCLSWEEP_CUDA=OFF): nvcc does not accept -fsanitize=address, and ASan's shadow memory
# clashes with the CUDA driver's fixed mappings; the GPU test skips without it anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-asan}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Debug} \
  -DNCCLSWEEP_SANITIZE=ON -DNCCLSWEEP_CUDA=OFF >/dev/null
cmake --build "$build_dir" -j "$jobs"
# halt_on_error: the first report ends the process with a failure (UBSan too: the build also
# uses -fno-sanitize-recover=undefined). Leaks are errors. Stack traces with symbols.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$build_dir"
ctest --output-on-failure -j "$jobs" --timeout 900 -LE gpu "$@"
