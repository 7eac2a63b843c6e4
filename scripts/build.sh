#!/usr/bin/env bash
# Configures and builds ncclsweep + tpverify into ./build (or $BUILD_DIR).
# Extra arguments go to CMake (e.g. -DNCCLSWEEP_SANITIZE=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake_args=(-S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo})
if [ "${CI:-}" = "true" ]; then
  cmake_args+=(-DNCCLSWEEP_WERROR=ON)
fi
# nvcc is optional: with it, tpverify also gets its CUDA backend.
if [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake "${cmake_args[@]}" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
