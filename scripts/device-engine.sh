#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, the GPU test, and the
# measurements of docs/benchmarks-gpu.md (TP = 1 on one H200). Logs go to $OUT (default
# ./device-out). A failing build or GPU test fails the script; the runs after it are logged.
# Never sets NCCL_* itself except NCCL_NVLS_ENABLE=0 where the machine requires it (multi-GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-out}
mkdir -p "$out"
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
[ $rc -eq 0 ] || exit 1
run() {  # run NAME ARGS...: one tpverify run, JSON to $out/NAME.jsonl, wall time printed
  local name=$1; shift
  echo "== $name: $*"
  local s=$(date +%s%N)
  timeout 200 "$@" > "$out/$name.jsonl" 2> "$out/$name.err"; local rc=$?
  echo "rc=$rc wall_ms=$(( ($(date +%s%N) - s) / 1000000 ))"
  head -c 3000 "$out/$name.err"
}
K=(--backend cuda --json --model kimi-k2.5 --iters 50 --warmup 5)
run first_result $tpv "${K[@]}" --tokens 4 --iters 10
run t4 $tpv "${K[@]}" --tokens 4
run t1 $tpv "${K[@]}" --tokens 1
run t4_check $tpv "${K[@]}" --tokens 4 --fusion on --check
run t4_threads $tpv "${K[@]}" --tokens 4 --process-model threads
run t4_eager $tpv "${K[@]}" --tokens 4 --graph off --iters 20
run t4_global_nowarm $tpv "${K[@]}" --tokens 4 --capture-mode global --no-warmup-before-capture --iters 10
run t4_warmup0 $tpv "${K[@]}" --tokens 4 --warmup 0 --iters 10
run t4_ctx32k $tpv "${K[@]}" --tokens 4 --context 32768 --iters 20
run t4_int4 $tpv "${K[@]}" --tokens 4 --expert-format int4
run t1_int4 $tpv "${K[@]}" --tokens 1 --expert-format int4
run t4_int4_check $tpv "${K[@]}" --tokens 4 --expert-format int4 --check
run default_t4 $tpv --backend cuda --json --tokens 4
echo "== summary"
for f in "$out"/*.jsonl; do
  python3 - "$f" <<'PY'
import json, sys
name = sys.argv[1].rsplit('/', 1)[-1][:-6]
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
st = next((e for e in ev if e.get('event') == 'start'), {})
res = [e for e in ev if e.get('event') == 'result']
if not res: print(f"{name:18s} no result"); sys.exit()
r = res[-1]; p = r.get('parts_us', {})
ratio = r['verify_us_p50'] / r['baseline_us'] if r['baseline_us'] else 0
roof = r.get('read_roofline_us', 0)
print(f"{name:18s} {st.get('process_model')} experts {st.get('routed_experts_touched_mean')} "
      f"p50 {r['verify_us_p50']:.1f} us (p10 {r['verify_us_p10']:.1f} p90 {r['verify_us_p90']:.1f}) "
      f"base {r['baseline_us']:.1f} us ratio {ratio:.2f}  read {r.get('read_bytes',0)/1e9:.2f} GB "
      f"roof {roof:.0f} us ({r['verify_us_p50']/roof if roof else 0:.3f}x) @ {r.get('copy_gbps',0):.0f} GB/s  "
      f"parts gemm {p.get('gemm',0):.0f} attn {p.get('attention',0):.0f} comm {p.get('comm',0):.0f} "
      f"norm {p.get('norm',0):.0f} draft {p.get('draft',0):.0f}  tok/s {r['tok_s']:.1f}/{r['baseline_tok_s']:.1f} "
      f"init {r['init_s']:.2f}s first {r.get('to_result_s',0):.2f}s check {r['check_wrong']} "
      f"replays {r.get('check_replays')} elements {r.get('check_elements')} format {st.get('expert_format')} "
      f"wall_to_result {r.get('to_result_s',0):.2f}s")
PY
done
