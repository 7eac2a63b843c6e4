#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, the GPU test, and the
# H200 benchmarks of docs/benchmarks-gpu.md. Logs go to $OUT (default ./device-out).
# Never sets NCCL_* itself except NCCL_NVLS_ENABLE=0 where the machine requires it (multi-GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-out}
mkdir -p "$out"
log=$out/engine.log
exec > >(tee -a "$log") 2>&1
echo "== machine"; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
nvcc --version | tail -1
py_nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
echo "python nvidia.nccl: ${py_nccl:-none}"; ls "$py_nccl"/lib "$py_nccl"/include 2>/dev/null
ls -la /usr/include/nccl.h 2>/dev/null
gpus=$(nvidia-smi -L | grep -c '^GPU ')
echo "== build (engine only)"
t0=$(date +%s)
cfg=(-S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLSWEEP_ENGINE_ONLY=ON
     -DNCCLSWEEP_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90})
cmake "${cfg[@]}" | tee "$out/cmake.txt" || exit 1
if ! grep -q "CUDA backend enabled" "$out/cmake.txt"; then
  # Detection missed NCCL: name the first library and header found on the machine.
  lib=$(find / -xdev -name 'libnccl.so*' 2>/dev/null | head -1)
  inc=$(find / -xdev -name nccl.h 2>/dev/null | head -1)
  echo "fallback NCCL: lib=$lib header=$inc"
  cmake "${cfg[@]}" -DNCCL_LIBRARY="$lib" -DNCCL_INCLUDE_DIR="$(dirname "$inc")" | grep tpverify || exit 1
fi
ninja -C build-device tpverify || exit 1
echo "build seconds: $(( $(date +%s) - t0 ))"
tpv=build-device/engine/tpverify
ldd $tpv | grep -E "nccl|cublas|cudart"
run() {  # run NAME ARGS...: one tpverify run, JSON to $out/NAME.jsonl, wall time printed
  local name=$1; shift
  echo "== $name: tpverify $*"
  local s=$(date +%s%N)
  timeout 240 "$@" > "$out/$name.jsonl" 2> "$out/$name.err"; local rc=$?
  local e=$(date +%s%N)
  echo "rc=$rc wall_s=$(( (e - s) / 1000000 )) ms"
  cat "$out/$name.err" | head -20
  grep -h '"event":"start"\|"event":"result"' "$out/$name.jsonl" | cut -c1-1500
}
echo "== gpu test"; tests/engine/gpu_tpverify.sh $tpv; echo "gpu test rc=$?"
K=(--backend cuda --json --model kimi-k2.5 --tokens 4 --iters 50 --warmup 5)
run first_result $tpv "${K[@]}" --iters 10
run graph_on $tpv "${K[@]}" --graph on
run graph_off $tpv "${K[@]}" --graph off
run fusion_on $tpv "${K[@]}" --graph on --fusion on
run check $tpv "${K[@]}" --graph on --fusion on --check
TPVERIFY_GEMM=skinny run gemm_skinny $tpv "${K[@]}" --graph on
TPVERIFY_GEMM=cublas run gemm_cublas $tpv "${K[@]}" --graph on
TPVERIFY_GEMM=cublas run gemm_cublas_eager $tpv "${K[@]}" --graph off
run global_nowarm $tpv "${K[@]}" --graph on --capture-mode global --no-warmup-before-capture --iters 10
run rsd $tpv "${K[@]}" --graph on --target-rsd 0.005 --max-seconds 10
if [ "$gpus" -ge 2 ]; then
  export NCCL_NVLS_ENABLE=0  # the machine's rule: NVLink multicast stays off
  run tp2_unfused $tpv "${K[@]}" --tp 2 --graph on --check
  run tp2_fused $tpv "${K[@]}" --tp 2 --graph on --fusion on --check
  for t in 1 8 32; do run tp2_comm_t$t $tpv "${K[@]}" --tp 2 --tokens $t --layers 4; done
else
  echo "== N>=2 not run: $gpus GPU(s) on this machine"
fi
echo "== summary"
for f in "$out"/*.jsonl; do
  python3 - "$f" <<'PY'
import json, sys
name = sys.argv[1].rsplit('/', 1)[-1][:-6]
res = [json.loads(l) for l in open(sys.argv[1]) if '"result"' in l]
if not res: print(f"{name:16s} no result"); sys.exit()
r = res[-1]
print(f"{name:16s} p50 {r['verify_us_p50']:9.1f} us  p10 {r['verify_us_p10']:9.1f}  p90 {r['verify_us_p90']:9.1f}  "
      f"roof {r.get('roofline_ratio',0):.3f} ({r.get('roofline_us',0):.0f} us @ {r.get('copy_gbps',0):.0f} GB/s)  "
      f"coll {r['collective_us']:.2f} us  norm {r.get('reduce_norm_us',0):.2f} us  base {r['baseline_us']:.1f} us  "
      f"tok/s {r['tok_s']:.1f}/{r['baseline_tok_s']:.1f}  init {r['init_s']:.2f}s cap {r['capture_s']:.2f}s "
      f"first {r.get('to_result_s',0):.2f}s check {r['check_wrong']}")
PY
done
