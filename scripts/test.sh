#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test (unit, golden, end-to-end with a real
# sshd on 127.0.0.1; GPU tests skip cleanly on machines without a GPU), then builds everything
# again with AddressSanitizer + UndefinedBehaviorSanitizer and runs the suite once more under
# them (scripts/sanitize.sh, into ./build-asan). That second pass roughly doubles the time
# (about 20 more minutes on 2 cores); SANITIZE=0 skips it for a quick local check. CI (.ci/run)
# runs this script as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" --timeout 600)
if [ "${SANITIZE:-1}" != 0 ]; then
  echo "test.sh: all tests passed; now the same suite under ASan + UBSan (SANITIZE=0 skips this)"
  BUILD_DIR=build-asan bash scripts/sanitize.sh
fi
