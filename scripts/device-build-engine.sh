#!/usr/bin/env bash
# Engine-only Release build of tpverify into ./build-device (for the GPU machine's scripts:
# device-engine.sh, device-measure-collectives.sh). CUDA_ARCH picks the sm (default 90).
# Prints the CUDA line of the configure step and the build seconds; exits 1 when it fails.
set -uo pipefail
cd "$(dirname "$0")/.."
echo "== build (engine only)"
t0=$(date +%s)
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLSWEEP_ENGINE_ONLY=ON \
  -DNCCLSWEEP_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90} | grep tpverify || exit 1
ninja -C build-device tpverify >/dev/null || { ninja -C build-device tpverify | tail -30; exit 1; }
echo "build seconds: $(( $(date +%s) - t0 ))"
