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
out=${OUT:-device-out}
mkdir -p "$out"
runs=$(mktemp -d)
exec > >(tee -a "$out/engine.log") 2>&1
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
run() {  # run NAME ARGS...: one tpverify run, JSON to NAME.jsonl, wall time printed
  local name=$1; shift
  echo "== $name: $*"
  local s=$(date +%s%N)
  timeout 200 "$@" > "$runs/$name.jsonl" 2> "$runs/$name.err"; local rc=$?
  echo "rc=$rc wall_ms=$(( ($(date +%s%N) - s) / 1000000 ))"
  head -c 1500 "$runs/$name.err"
}
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
# The previous kernels against the default: the router's top-k of the shuffle rounds
# (TPVERIFY_TOPK=shfl), the fused MLA attention (TPVERIFY_ATTENTION=fused, with its --check at
# the pass's shape), every step its own kernel (TPVERIFY_FUSE=none).
run t4_topk_shfl env TPVERIFY_TOPK=shfl $tpv "${K[@]}" --tokens 4
run t1_topk_shfl env TPVERIFY_TOPK=shfl $tpv "${K[@]}" --tokens 1 --iters 10
run t4_attn_fused env TPVERIFY_ATTENTION=fused $tpv "${K[@]}" --tokens 4 --iters 10 --check
run t4_fuse_none env TPVERIFY_FUSE=none $tpv "${K[@]}" --tokens 4 --iters 10
run t4_again $tpv "${K[@]}" --tokens 4
${EXTRA_RUNS:-true}
echo "== kernel tables"
$tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"; echo "rc=$?"
$tpv --backend cuda --measure-kernels --tokens 4 --expert-format bf16 > "$out/kernels-bf16.txt" 2> "$runs/kernels-bf16.err"; echo "rc=$?"
tar czf "$out/runs.tar.gz" -C "$runs" .
echo "== summary"
for f in "$runs"/*.jsonl; do
  python3 - "$f" <<'PY'
import json, sys
name = sys.argv[1].rsplit('/', 1)[-1][:-6]
ev = []
for l in open(sys.argv[1]):
    if l.startswith('{'):
        try: ev.append(json.loads(l))
        except Exception: pass
st = next((e for e in ev if e.get('event') == 'start'), {})
res = [e for e in ev if e.get('event') == 'result']
if not res: print(f"{name:16s} no result"); sys.exit()
r = res[-1]; p = r.get('parts_us', {})
roof = r.get('read_roofline_us', 0)
print(f"{name:16s} {st.get('expert_format')} {st.get('server')}/{st.get('capture_mode')} "
      f"p50 {r['verify_us_p50']:.0f} (p10 {r['verify_us_p10']:.0f} p90 {r['verify_us_p90']:.0f}) "
      f"base {r['baseline_us']:.0f} roof {roof:.0f} x{r['verify_us_p50']/roof if roof else 0:.3f} "
      f"read {r.get('read_bytes',0)/1e9:.2f}GB @{r.get('copy_gbps',0):.0f} "
      f"gemm {p.get('gemm',0):.0f} attn {p.get('attention',0):.0f} comm {p.get('comm',0):.0f} "
      f"norm {p.get('norm',0):.0f} ops {p.get('ops',0):.0f} draft {p.get('draft',0):.0f} "
      f"tok/s {r['tok_s']:.1f}/{r['baseline_tok_s']:.1f} check {r['check_wrong']} "
      f"replays {r.get('check_replays')}/{r.get('check_graph_replays')} gemm_chk {r.get('check_gemm_outputs')} "
      f"err {r.get('check_gemm_max_err')} to_result {r.get('to_result_s',0):.2f}s")
PY
done
exit $(( gpu_test == 0 ? 0 : 1 ))
