#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, then the 4- and 1-token
# INT4 pass under the settings of the last comparison (TPVERIFY_SOFTMAX=three-pass: the previous
# attention softmax; TPVERIFY_INT4: chunks in flight per warp and the folded dequantisation;
# TPVERIFY_INT4_SLICES: k slices of the INT4 launches; engine/cuda/stream_gemm.cu; run6-variants.log
# has the attention / top-k ones, run5-variants.log the fusion ones), their --check runs and (with
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
# name, then the TPVERIFY_* settings (softmax, INT4 kernel, k slices) of each configuration
configs=(
  "default"
  "plain TPVERIFY_INT4=u4"
  "softmax3 TPVERIFY_SOFTMAX=three-pass"
  "u8 TPVERIFY_INT4=u8"
)
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  # shellcheck disable=SC2086
  run "t4_$name" env $settings $tpv "${K[@]}" --tokens 4
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T1:-default plain softmax3} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t1_$name" env $settings $tpv "${K[@]}" --tokens 1
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${CHECKS:-default plain} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_check_$name" env $settings $tpv "${K[@]}" --tokens 4 --check --iters 10
  # shellcheck disable=SC2086
  run "t1_check_$name" env $settings $tpv "${K[@]}" --tokens 1 --check --iters 10
done
run t4_stale $tpv "${K[@]}" --tokens 4 --check --inject stale --iters 10
run t4_default_again $tpv "${K[@]}" --tokens 4
run t4_plain_again env TPVERIFY_INT4=u4 $tpv "${K[@]}" --tokens 4
run t1_default_again $tpv "${K[@]}" --tokens 1
run t1_plain_again env TPVERIFY_INT4=u4 $tpv "${K[@]}" --tokens 1
if [ -n "${KERNEL_TABLE:-}" ]; then
  echo "== kernel table"
  timeout 200 $tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"
  echo "rc=$?"
fi
summarize
