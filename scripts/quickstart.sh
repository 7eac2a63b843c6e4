#!/usr/bin/env bash
# Installs what is needed, builds ncclsweep and tpverify, and runs the quickstart sweep on this
# machine (local target, simulated engine, results in ./ncclsweep.db). Only what the two
# programs need: no test packages (scripts/install-deps.sh --test has those), no test suites, no
# benchmarks, and tpverify without its CUDA module (the quickstart simulates; on a GPU host,
# scripts/build.sh builds the module too). The libraries compile in batches (NCCLSWEEP_UNITY).
# Time from a fresh Debian 12 machine: README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLSWEEP_TESTS=OFF -DNCCLSWEEP_BENCH=OFF \
  -DNCCLSWEEP_CUDA=OFF -DNCCLSWEEP_UNITY=ON >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target ncclsweep tpverify
"./$build_dir/cli/ncclsweep" plan experiments/quickstart.yaml
"./$build_dir/cli/ncclsweep" run experiments/quickstart.yaml --db ./ncclsweep.db
