#!/usr/bin/env bash
# CTest test "support: a GPU host without a CUDA build fails the GPU tests": with a stand-in
# nvidia-smi that lists a GPU and a stand-in tpverify that says it was built without CUDA (both
# written here by hand), tests/engine/gpu_tpverify.sh and tests/tuner/gpu_tuner_plugin.sh must
# fail (exit 1), not skip; with an nvidia-smi that lists no GPU they skip (exit 77).
# Usage: gpu_without_cuda.sh SOURCE_DIR
set -uo pipefail
source=${1:?usage: gpu_without_cuda.sh SOURCE_DIR}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/gpu" "$work/nogpu"
printf '#!/bin/sh\necho "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)"\n' >"$work/gpu/nvidia-smi"
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$work/nogpu/nvidia-smi"
printf '#!/bin/sh\necho "tpverify: this tpverify was built without CUDA (rebuild on a host with nvcc and NCCL, or use --backend sim)" >&2\nexit 2\n' >"$work/tpverify"
touch "$work/plugin.so"
chmod +x "$work/gpu/nvidia-smi" "$work/nogpu/nvidia-smi" "$work/tpverify"

check() {  # check DIR EXPECTED_STATUS NAME COMMAND...
  local dir=$1 expected=$2 name=$3; shift 3
  local rc=0
  PATH="$work/$dir:$PATH" "$@" >"$work/out" 2>&1 || rc=$?
  [ "$rc" = "$expected" ] || { cat "$work/out"; fail "$name exited $rc, not $expected"; }
}
check gpu 1 "gpu_tpverify.sh with a GPU and no CUDA build" "$source/tests/engine/gpu_tpverify.sh" "$work/tpverify"
grep -q "built without CUDA" "$work/out" || { cat "$work/out"; fail "gpu_tpverify.sh does not say why"; }
check gpu 1 "gpu_tuner_plugin.sh with a GPU and no CUDA build" \
  "$source/tests/tuner/gpu_tuner_plugin.sh" "$work/tpverify" "$work/plugin.so" "$work/logs"
check nogpu 77 "gpu_tpverify.sh without a GPU" "$source/tests/engine/gpu_tpverify.sh" "$work/tpverify"
check nogpu 77 "gpu_tuner_plugin.sh without a GPU" \
  "$source/tests/tuner/gpu_tuner_plugin.sh" "$work/tpverify" "$work/plugin.so" "$work/logs"
echo "ok: a GPU without a CUDA build fails both GPU tests; no GPU skips them"
