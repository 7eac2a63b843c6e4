#!/usr/bin/env bash
# Installs what is needed, builds, and runs the quickstart on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/cli/ncclsweep plan experiments/quickstart.yaml
# The quickstart sweep: local target, simulated engine, results in ./ncclsweep.db.
./build/cli/ncclsweep run experiments/quickstart.yaml --db ./ncclsweep.db
