#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, then the 4- and 1-token
# INT4 pass under the settings of the last comparison (the configs below; run7-variants-*.log
# has the INT4 kernel / softmax ones, run6-variants.log the attention / top-k ones,
# run5-variants.log the fusion ones), their --check runs and (with
# NCU=1) scripts/device-ncu.sh's profile of the default and of the plain INT4 kernel.
# Logs go to $OUT (default ./device-out): variants.log (with a summary table last) and
# runs.tar.gz (every run's JSON and stderr).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-engine-common.sh
device_setup variants.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
bash scripts/device-build-engine.sh || exit 1
tpv=build-device/engine/tpverify
K=(--backend cuda --json --model kimi-k2.5 --iters ${ITERS:-30} --warmup 5)
if [ -n "${NCU:-}" ]; then
  OUT=$out/ncu-default bash scripts/device-ncu.sh
  TPVERIFY_INT4=u4 OUT=$out/ncu-plain bash scripts/device-ncu.sh
fi
# name, then the TPVERIFY_* settings of each configuration: KiB of weights each GEMM warp asks
# the L2 for before it waits for the previous kernel (TPVERIFY_PREFETCH_KB), the MoE block's
# layout (TPVERIFY_MOE_STREAMS: 2 the default, the shared expert on the second stream; 2r the
# routed path there; 1 one stream, the layout before 2026-12-05) and the streams' priorities
# (TPVERIFY_MOE_PRIORITY=1)
configs=(
  "default"
  "pf4 TPVERIFY_PREFETCH_KB=4"
  "pf8 TPVERIFY_PREFETCH_KB=8"
  "pf16 TPVERIFY_PREFETCH_KB=16"
  "pf32 TPVERIFY_PREFETCH_KB=32"
  "one TPVERIFY_MOE_STREAMS=1"
  "routed_alt TPVERIFY_MOE_STREAMS=2r"
  "prio TPVERIFY_MOE_PRIORITY=1"
)
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T4:-default pf4 pf8 pf16 one} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_$name" env $settings $tpv "${K[@]}" --tokens 4
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T1:-default pf4 pf8 pf16 pf32 one} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t1_$name" env $settings $tpv "${K[@]}" --tokens 1
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${CHECKS:-pf8} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_check_$name" env $settings $tpv "${K[@]}" --tokens 4 --check --iters 10
  # shellcheck disable=SC2086
  run "t1_check_$name" env $settings $tpv "${K[@]}" --tokens 1 --check --iters 10
done
run t4_stale $tpv "${K[@]}" --tokens 4 --check --inject stale --iters 10
run t4_default_again $tpv "${K[@]}" --tokens 4
run t1_default_again $tpv "${K[@]}" --tokens 1
for kb in ${AGAIN_KB:-8 16}; do
  run "t4_pf${kb}_again" env TPVERIFY_PREFETCH_KB="$kb" $tpv "${K[@]}" --tokens 4
  run "t1_pf${kb}_again" env TPVERIFY_PREFETCH_KB="$kb" $tpv "${K[@]}" --tokens 1
done
${EXTRA_RUNS:-true}
if [ -n "${KERNEL_TABLE:-}" ]; then
  echo "== kernel table"
  timeout 200 $tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"
  echo "rc=$?"
fi
summarize
