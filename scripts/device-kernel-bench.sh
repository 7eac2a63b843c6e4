#!/usr/bin/env bash
# Runs on the GPU machine (device tool): the kernel microbenchmark engine/cuda/bench/kernel_bench.cu
# (W4A16 and bf16 GEMM variants at the Kimi-K2.5 pass's shapes against cuBLAS and the previous
# W4A16 kernel, each checked against a host reference; copy/read ceilings; a tiny kernel's cost in
# a graph). KB_BIN: a prebuilt binary to try first; otherwise (or when it does not run) it is
# built here. The table goes to $OUT/kernel-table.txt, the whole log to $OUT/kernel-bench.log.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-out}
mkdir -p "$out"
exec > >(tee -a "$out/kernel-bench.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
bin=${KB_BIN:-}
if [ -z "$bin" ] || ! ldd "$bin" | grep -q cublas || ldd "$bin" | grep -q "not found"; then
  bin=/tmp/kernel_bench
  t0=$(date +%s)
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. engine/cuda/bench/kernel_bench.cu \
    engine/cuda/stream_gemm.cu engine/cuda/skinny_gemm.cu -lcublas \
    -o "$bin" || exit 1
  echo "built in $(( $(date +%s) - t0 )) s"
fi
cuobjdump -sass "$bin" > "$out/kernel-sass.txt" 2>/dev/null || true
for f in 'w4a16_kernelILi1ELi4E' 'w4a16_kernelILi1ELi2E'; do
  echo "== SASS histogram of $f"
  awk -v f="$f" '/Function :/{on = index($0, f) > 0} on' "$out/kernel-sass.txt" |
    grep -oE '(HMMA|LDG|LDSM|LOP3|SHF|HADD2|HFMA2|FFMA|FMUL|STS|LDS|BAR|PRMT|IMAD|IADD3|ISETP|BRA)[.A-Z0-9_]*' |
    sort | uniq -c | sort -rn | head -20
done
timeout 500 "$bin" "$out/kernel-table.txt"
echo "kernel bench rc=$?"
