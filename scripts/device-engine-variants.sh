#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, then the 4- and 1-token
# INT4 pass under the kernel configurations of the last comparison (TPVERIFY_ATTENTION,
# TPVERIFY_TOPK; docs/engine-cuda.md; run5-variants.log has the TPVERIFY_FUSE / PDL ones), the
# --check runs and (with KERNEL_TABLE=1) the INT4 kernel table. Two configurations run twice for the spread.
# Logs go to $OUT (default ./device-out): variants.log (with a summary table last), the kernel
# table kernels-int4.txt and runs.tar.gz (every run's JSON and stderr).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-engine-common.sh
device_setup variants.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
bash scripts/device-build-engine.sh || exit 1
tpv=build-device/engine/tpverify
K=(--backend cuda --json --model kimi-k2.5 --iters ${ITERS:-30} --warmup 5)
# Attention (TPVERIFY_ATTENTION: cuBLAS's two GEMMs and a softmax, or the fused MLA kernels) and
# the router's top-k (TPVERIFY_TOPK: redux, or shfl: the earlier kernel).
run t4_default $tpv "${K[@]}" --tokens 4
run t4_old env TPVERIFY_ATTENTION=cublas TPVERIFY_TOPK=shfl $tpv "${K[@]}" --tokens 4
run t4_attn_fused env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 4
run t4_attn_cublas env TPVERIFY_ATTENTION=cublas $tpv "${K[@]}" --tokens 4
run t4_fused_shfl env TPVERIFY_ATTENTION=fused TPVERIFY_TOPK=shfl $tpv "${K[@]}" --tokens 4
run t1_attn_fused env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 1
run t1_attn_cublas env TPVERIFY_ATTENTION=cublas $tpv "${K[@]}" --tokens 1
run t1_old env TPVERIFY_ATTENTION=cublas TPVERIFY_TOPK=shfl $tpv "${K[@]}" --tokens 1
run t4_check_fused env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 4 --fusion on --check --iters 10
run t1_check_fused env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 1 --check --iters 10
run t4_stale env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 4 --check --inject stale --iters 10
run t4_attn_fused_again env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 4
run t4_old_again env TPVERIFY_ATTENTION=cublas TPVERIFY_TOPK=shfl $tpv "${K[@]}" --tokens 4
if [ -n "${KERNEL_TABLE:-}" ]; then
  echo "== kernel table"
  timeout 200 $tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"
  echo "rc=$?"
fi
summarize
