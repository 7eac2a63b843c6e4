#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, then the 4- and 1-token
# INT4 pass under the settings of the last comparison (the configs below; run9-variants-*.log
# has the MoE-stream / prefetch ones, run7-variants-*.log the INT4 kernel / softmax ones,
# run6-variants.log the attention / top-k ones, run5-variants.log the fusion ones), their
# --check runs and (with
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
# name, then the TPVERIFY_* settings of each configuration: the MLA attention on cuBLAS (the
# default) or fused (TPVERIFY_ATTENTION=fused), the fused one's query rows per split block
# (TPVERIFY_MLA_ROWS: 32 by default, 64 its first form, 16) and combine kernel
# (TPVERIFY_MLA_COMBINE=serial: the first one; unset: the wide one)
configs=(
  "default"
  "fused TPVERIFY_ATTENTION=fused"
  "fused_r64 TPVERIFY_ATTENTION=fused TPVERIFY_MLA_ROWS=64"
  "fused_first TPVERIFY_ATTENTION=fused TPVERIFY_MLA_ROWS=64 TPVERIFY_MLA_COMBINE=serial"
  "fused_r32_serial TPVERIFY_ATTENTION=fused TPVERIFY_MLA_COMBINE=serial"
)
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T4:-default fused fused_r64 fused_first fused_r32_serial} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_$name" env $settings $tpv "${K[@]}" --tokens 4
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T1:-default fused fused_r64 fused_first fused_r32_serial} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t1_$name" env $settings $tpv "${K[@]}" --tokens 1
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${CHECKS:-fused fused_r64} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_check_$name" env $settings $tpv "${K[@]}" --tokens 4 --check --iters 10
  # shellcheck disable=SC2086
  run "t1_check_$name" env $settings $tpv "${K[@]}" --tokens 1 --check --iters 10
done
run t4_default_again $tpv "${K[@]}" --tokens 4
run t1_default_again $tpv "${K[@]}" --tokens 1
for name in ${AGAIN:-fused}; do
  for c in "${configs[@]}"; do
    read -r n settings <<<"$c"
    [ "$n" = "$name" ] || continue
    # shellcheck disable=SC2086
    run "t4_${name}_again" env $settings $tpv "${K[@]}" --tokens 4
    # shellcheck disable=SC2086
    run "t1_${name}_again" env $settings $tpv "${K[@]}" --tokens 1
  done
done
${EXTRA_RUNS:-true}
if [ -n "${KERNEL_TABLE:-}" ]; then
  echo "== kernel table"
  timeout 200 $tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"
  echo "rc=$?"
fi
summarize
