#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, then the 4- and 1-token
# INT4 pass under each kernel configuration tpverify can be switched to by environment
# (TPVERIFY_FUSE, TPVERIFY_PDL_OPS, TPVERIFY_SKINNY_EXCLUDE; docs/engine-cuda.md), the --check
# runs and (with KERNEL_TABLE=1) the INT4 kernel table. The default is run twice (first and last) for the spread.
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
old=(TPVERIFY_FUSE=none TPVERIFY_PDL_OPS=0)  # the kernels of the previous default
run() {  # run NAME [ENV=VALUE...] -- ARGS...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $name: ${envs[*]} $*"
  timeout 200 env "${envs[@]}" $tpv "${K[@]}" "$@" > "$runs/$name.jsonl" 2> "$runs/$name.err"
  echo "rc=$?"; grep -v '^tpverify: measure' "$runs/$name.err" | head -c 600
}
run t4_default -- --tokens 4
run t4_old "${old[@]}" -- --tokens 4
run t4_pdl_ops TPVERIFY_FUSE=none -- --tokens 4
run t4_mla_silu TPVERIFY_FUSE=mla,silu -- --tokens 4
run t4_mla_moe TPVERIFY_FUSE=mla,moe -- --tokens 4
run t4_all TPVERIFY_FUSE=all -- --tokens 4
run t4_mla_g16 TPVERIFY_SKINNY_GROUP_WARPS_PER_SM=16 -- --tokens 4
run t4_mla_moe_g16 TPVERIFY_FUSE=mla,moe TPVERIFY_SKINNY_GROUP_WARPS_PER_SM=16 -- --tokens 4
run t4_w16 TPVERIFY_SKINNY_WARPS_PER_SM=16 -- --tokens 4
run t4_fuse_nopdlops TPVERIFY_PDL_OPS=0 -- --tokens 4
run t4_cublas_down TPVERIFY_SKINNY_EXCLUDE=7168x2048 -- --tokens 4
run t1_default -- --tokens 1
run t1_old "${old[@]}" -- --tokens 1
run t1_all TPVERIFY_FUSE=all -- --tokens 1
run t4_check_all TPVERIFY_FUSE=all -- --tokens 4 --fusion on --check --iters 10
run t4_check -- --tokens 4 --fusion on --check
run t1_check -- --tokens 1 --check --iters 10
run t4_stale -- --tokens 4 --check --inject stale --iters 10
run t4_old_again "${old[@]}" -- --tokens 4
run t4_default_again -- --tokens 4
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
