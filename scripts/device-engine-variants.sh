#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, then the 4- and 1-token
# INT4 pass under the kernel configurations of the last comparison (TPVERIFY_ATTENTION,
# TPVERIFY_TOPK; docs/engine-cuda.md; run5-variants.log has the TPVERIFY_FUSE / PDL ones), the
# --check runs and (with KERNEL_TABLE=1) the INT4 kernel table. Two configurations run twice for the spread.
# Logs go to $OUT (default ./device-out): variants.log (with a summary table last), the kernel
# table kernels-int4.txt and runs.tar.gz (every run's JSON and stderr).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-out}
mkdir -p "$out"
runs=$(mktemp -d)
exec > >(tee -a "$out/variants.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
bash scripts/device-build-engine.sh || exit 1
tpv=build-device/engine/tpverify
K=(--backend cuda --json --model kimi-k2.5 --iters ${ITERS:-30} --warmup 5)
run() {  # run NAME [ENV=VALUE...] -- ARGS...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $name: ${envs[*]} $*"
  timeout 200 env "${envs[@]}" $tpv "${K[@]}" "$@" > "$runs/$name.jsonl" 2> "$runs/$name.err"
  echo "rc=$?"; grep -v '^tpverify: measure' "$runs/$name.err" | head -c 600
}
# Attention (TPVERIFY_ATTENTION: cuBLAS's two GEMMs and a softmax, or the fused MLA kernels) and
# the router's top-k (TPVERIFY_TOPK: redux, or shfl: the earlier kernel).
run t4_default -- --tokens 4
run t4_old TPVERIFY_ATTENTION=cublas TPVERIFY_TOPK=shfl -- --tokens 4
run t4_attn_fused TPVERIFY_ATTENTION=fused -- --tokens 4
run t4_attn_cublas TPVERIFY_ATTENTION=cublas -- --tokens 4
run t4_fused_shfl TPVERIFY_ATTENTION=fused TPVERIFY_TOPK=shfl -- --tokens 4
run t1_attn_fused TPVERIFY_ATTENTION=fused -- --tokens 1
run t1_attn_cublas TPVERIFY_ATTENTION=cublas -- --tokens 1
run t1_old TPVERIFY_ATTENTION=cublas TPVERIFY_TOPK=shfl -- --tokens 1
run t4_check_fused TPVERIFY_ATTENTION=fused -- --tokens 4 --fusion on --check --iters 10
run t1_check_fused TPVERIFY_ATTENTION=fused -- --tokens 1 --check --iters 10
run t4_stale TPVERIFY_ATTENTION=fused -- --tokens 4 --check --inject stale --iters 10
run t4_attn_fused_again TPVERIFY_ATTENTION=fused -- --tokens 4
run t4_old_again TPVERIFY_ATTENTION=cublas TPVERIFY_TOPK=shfl -- --tokens 4
[ -n "${KERNEL_TABLE:-}" ] || { tar czf "$out/runs.tar.gz" -C "$runs" .; SKIP_TABLE=1; }
if [ -z "${SKIP_TABLE:-}" ]; then
  echo "== kernel table"
  timeout 200 $tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"
  echo "rc=$?"
fi
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
res = [e for e in ev if e.get('event') == 'result']
if not res: print(f"{name:18s} no result"); sys.exit()
r = res[-1]; p = r.get('parts_us', {}); roof = r.get('read_roofline_us', 0) or 1
print(f"{name:18s} p50 {r['verify_us_p50']:.0f} (p10 {r['verify_us_p10']:.0f} p90 {r['verify_us_p90']:.0f}) "
      f"x{r['verify_us_p50']/roof:.3f} base {r['baseline_us']:.0f} "
      f"gemm {p.get('gemm',0):.0f} attn {p.get('attention',0):.0f} comm {p.get('comm',0):.0f} "
      f"norm {p.get('norm',0):.0f} ops {p.get('ops',0):.0f} draft {p.get('draft',0):.0f} "
      f"check {r.get('check_wrong')} gemm_chk {r.get('check_gemm_outputs')} err {r.get('check_gemm_max_err')}")
PY
done
