#!/usr/bin/env bash
# CTest test "support: folder dependency rules": the tree follows docs/architecture.md's rules,
# and the checker does catch a violation (a core/ file including results/).
set -euo pipefail
source=${1:?source dir}
python3 "$source/scripts/check-includes.py" "$source"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/core" "$work/results"
echo '#include "results/store.hpp"' >"$work/core/bad.cpp"
if python3 "$source/scripts/check-includes.py" "$work" >"$work/out" 2>&1; then
  echo "FAIL: the checker accepted core/ including results/"; cat "$work/out"; exit 1
fi
grep -q "core/bad.cpp:1: core/ includes results/" "$work/out" || { echo "FAIL: no file:line"; cat "$work/out"; exit 1; }
echo "ok: the rules hold and a violation is caught"
