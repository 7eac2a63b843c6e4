#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test (unit, golden, end-to-end with a real
# sshd on 127.0.0.1). GPU tests skip cleanly on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
