#!/usr/bin/env bash
# Runs on the GPU machine (device tool), after scripts/device-build-engine.sh: Nsight Compute
# (ncu, hardware counters; --clock-control none leaves the clocks alone) over a short eager pass
# of kimi-k2.5's shapes (--layers 3: the dense layer and two MoE layers, 4 tokens, INT4 experts),
# so that each kernel's time, DRAM throughput and issue activity can be read one by one:
#   $OUT/ncu-pass.csv   every kernel of the pass: duration, DRAM bytes and throughput, issue
#                       slots busy, warps resident, registers, grid
#   $OUT/ncu-int4.txt   the INT4 expert kernels (gate_up and down) in detail: speed of light,
#                       warp stall reasons, scheduler and occupancy sections (NCU_KERNELS=REGEX
#                       and NCU_NAME=NAME: those kernels instead, in $OUT/ncu-NAME.txt)
# Extra tpverify flags (e.g. --tokens 1) go in TPV_FLAGS; TPVERIFY_* variables pass through;
# NCU_PASS=0 skips the every-kernel profile (the detailed one only).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-out}
mkdir -p "$out"
tpv=build-device/engine/tpverify
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "device-ncu.sh: no ncu on this machine"; exit 1; }
# shellcheck disable=SC2206
pass=(--backend cuda --model kimi-k2.5 --layers 3 --dense-layers 1 --graph off --warmup 0 --iters 1
      --draft-steps 0 --draft-us 0 --tokens 4 ${TPV_FLAGS:-})
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,launch__registers_per_thread,launch__grid_size,launch__block_size
if [ "${NCU_PASS:-1}" != 0 ]; then
  echo "== ncu: every kernel of the pass (${pass[*]})"
  timeout 240 "$ncu" --clock-control none --launch-count 400 --csv --page raw --metrics "$metrics" \
    "$tpv" "${pass[@]}" > "$out/ncu-pass.csv" 2> "$out/ncu-pass.err"
  echo "rc=$? kernels=$(grep -c '^"[0-9]' "$out/ncu-pass.csv")"
fi
echo "== ncu: ${NCU_KERNELS:-stream_gemm} kernels in detail"
timeout 180 "$ncu" --clock-control none -k "regex:${NCU_KERNELS:-stream_gemm}" --launch-skip 2 --launch-count 2 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
  --section MemoryWorkloadAnalysis --section LaunchStats "$tpv" "${pass[@]}" > "$out/ncu-${NCU_NAME:-int4}.txt" 2>&1
echo "rc=$?"
