#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, the GPU tests (tpverify's
# and the tuner plugin's), the
# measurements of docs/benchmarks-gpu.md (TP = 1 on one H200) and the kernel tables the sim
# prices from (--measure-kernels, INT4 and bf16 experts). Logs go to $OUT (default
# ./device-out): engine.log, the two kernel tables, and runs.tar.gz (every run's JSON and
# stderr). A failing build fails the script; a failing GPU test is logged and the runs go on
# (their own --check runs say whether their numbers can be trusted), the script then exits 1.
# Sets no NCCL_* itself except NCCL_NVLS_ENABLE=0 where the machine requires it (multi-GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-engine-common.sh
device_setup engine.log
echo "== machine"; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
nvcc --version | tail -1
gpus=$(nvidia-smi -L | grep -c '^GPU ')
[ "$gpus" -ge 2 ] && export NCCL_NVLS_ENABLE=0  # the machine's rule: NVLink multicast stays off
bash scripts/device-build-engine.sh || exit 1
tpv=build-device/engine/tpverify
echo "== gpu test"
tests/engine/gpu_tpverify.sh $tpv; rc=$?
echo "gpu test rc=$rc"
gpu_test=$rc
echo "== gpu tuner plugin test"
ninja -C build-device nccl_tuner_ncclsweep >/dev/null || { echo "tuner plugin build failed"; gpu_test=1; }
tests/tuner/gpu_tuner_plugin.sh $tpv build-device/tuner/libnccl-tuner-ncclsweep.so; rc=$?
echo "gpu tuner plugin test rc=$rc"
[ $rc -eq 0 ] || gpu_test=1
K=(--backend cuda --json --model kimi-k2.5 --iters ${ITERS:-30} --warmup 5)
run t4 $tpv "${K[@]}" --tokens 4
run t1 $tpv "${K[@]}" --tokens 1
run t4_bf16 $tpv "${K[@]}" --tokens 4 --expert-format bf16
run t1_bf16 $tpv "${K[@]}" --tokens 1 --expert-format bf16
run t4_check $tpv "${K[@]}" --tokens 4 --fusion on --check
run t1_check $tpv "${K[@]}" --tokens 1 --check --iters 10
run t4_cublas env TPVERIFY_GEMM=cublas $tpv "${K[@]}" --tokens 4 --iters 10
run t4_stale $tpv "${K[@]}" --tokens 4 --check --inject stale --iters 10
run t4_both_cublas env TPVERIFY_GEMM=cublas TPVERIFY_ATTENTION=cublas $tpv "${K[@]}" --tokens 4 --iters 10 --check
# The previous kernels against the default: the router's top-k on one warp a token
# (TPVERIFY_TOPK=redux, the previous default; =shfl the one before, with --check), the INT4
# experts without the folded offset at every row count (TPVERIFY_INT4=u4) and with it at every
# row count (TPVERIFY_INT4=u4f, the default until 2026-12-04's), the fused MLA attention
# (TPVERIFY_ATTENTION=fused, with its --check at the pass's shape), every step its own kernel
# (TPVERIFY_FUSE=none).
run t4_topk_redux env TPVERIFY_TOPK=redux $tpv "${K[@]}" --tokens 4
run t1_topk_redux env TPVERIFY_TOPK=redux $tpv "${K[@]}" --tokens 1
run t4_topk_shfl_check env TPVERIFY_TOPK=shfl $tpv "${K[@]}" --tokens 4 --iters 10 --check
run t4_int4_plain env TPVERIFY_INT4=u4 $tpv "${K[@]}" --tokens 4
run t1_int4_plain env TPVERIFY_INT4=u4 $tpv "${K[@]}" --tokens 1
run t4_int4_fold env TPVERIFY_INT4=u4f $tpv "${K[@]}" --tokens 4
run t1_int4_fold env TPVERIFY_INT4=u4f $tpv "${K[@]}" --tokens 1
# The same two kernels with the load ring in two register sets used in turn (u4r, u4fr): on an
# H100 u4r was 52 µs faster at 1 token and u4fr 95 µs slower at 4 (run14-h100-int4-rotate.txt).
run t1_int4_rotate env TPVERIFY_INT4=u4r $tpv "${K[@]}" --tokens 1
run t1_int4_rotate_check env TPVERIFY_INT4=u4r $tpv "${K[@]}" --tokens 1 --check --iters 10
run t4_int4_fold_rotate env TPVERIFY_INT4=u4fr $tpv "${K[@]}" --tokens 4
run t4_attn_fused env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 4 --iters 10 --check
run t4_fuse_none env TPVERIFY_FUSE=none $tpv "${K[@]}" --tokens 4 --iters 10
# The MoE block on one stream (TPVERIFY_MOE_STREAMS=1, the layout before 2026-12-05) against the
# default two streams.
run t4_moe_one env TPVERIFY_MOE_STREAMS=1 $tpv "${K[@]}" --tokens 4
run t1_moe_one env TPVERIFY_MOE_STREAMS=1 $tpv "${K[@]}" --tokens 1
run t4_again $tpv "${K[@]}" --tokens 4
run t1_again $tpv "${K[@]}" --tokens 1
${EXTRA_RUNS:-true}
echo "== kernel tables"
$tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"; echo "rc=$?"
$tpv --backend cuda --measure-kernels --tokens 4 --expert-format bf16 > "$out/kernels-bf16.txt" 2> "$runs/kernels-bf16.err"; echo "rc=$?"
summarize
exit $(( gpu_test == 0 ? 0 : 1 ))
