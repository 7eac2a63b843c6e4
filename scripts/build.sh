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
# ccache, where installed, makes a rebuild after a small change (and the sanitizer pass's
# second configuration of the same sources) cheap.
if command -v ccache >/dev/null 2>&1; then
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# nvcc is optional: with it, tpverify also gets its CUDA backend.
if [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake "${cmake_args[@]}" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
