#!/usr/bin/env bash
# Runs on the GPU machine (device tool): engine-only build of tpverify, then the 4- and 1-token
# INT4 pass under the settings of the last comparison (the configs below; run11-h100-mla-variants.log
# has the fused MLA attention ones, run9-variants-*.log the MoE-stream / in-kernel prefetch ones,
# run7-variants-*.log the INT4 kernel / softmax ones,
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
# name, then the TPVERIFY_* settings of each configuration: L2 prefetch on a stream of its own
# (engine/cuda/prefetch.cuh) of o_proj's first N MiB while an MLA attention runs
# (TPVERIFY_PREFETCH_ATTN_MB) and of the next layer's q_a, kv_a, q_b, kv_b while a MoE layer's
# expert sum, all-reduce and norm run (TPVERIFY_PREFETCH_LAYER_MB); both off, both explicit;
# with the INT4 load ring in two register sets (TPVERIFY_INT4=u4r).
configs=(
  "default"
  "off TPVERIFY_PREFETCH_ATTN_MB=0 TPVERIFY_PREFETCH_LAYER_MB=0"
  "attn8 TPVERIFY_PREFETCH_ATTN_MB=8 TPVERIFY_PREFETCH_LAYER_MB=0"
  "attn16 TPVERIFY_PREFETCH_ATTN_MB=16 TPVERIFY_PREFETCH_LAYER_MB=0"
  "attn24 TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_LAYER_MB=0"
  "attn32 TPVERIFY_PREFETCH_ATTN_MB=32 TPVERIFY_PREFETCH_LAYER_MB=0"
  "layer16 TPVERIFY_PREFETCH_ATTN_MB=0 TPVERIFY_PREFETCH_LAYER_MB=16"
  "layer32 TPVERIFY_PREFETCH_ATTN_MB=0 TPVERIFY_PREFETCH_LAYER_MB=32"
  "layer48 TPVERIFY_PREFETCH_ATTN_MB=0 TPVERIFY_PREFETCH_LAYER_MB=48"
  "both24_16 TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_LAYER_MB=16"
  "both24_32 TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_LAYER_MB=32"
  "both24_32_u4r TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_LAYER_MB=32 TPVERIFY_INT4=u4r"
)
all_configs="default off attn8 attn16 attn24 attn32 layer16 layer32 layer48 both24_16 both24_32 both24_32_u4r"
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T4:-$all_configs} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_$name" env $settings $tpv "${K[@]}" --tokens 4
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T1:-$all_configs} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t1_$name" env $settings $tpv "${K[@]}" --tokens 1
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${CHECKS:-both24_32} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_check_$name" env $settings $tpv "${K[@]}" --tokens 4 --check --iters 10
  # shellcheck disable=SC2086
  run "t1_check_$name" env $settings $tpv "${K[@]}" --tokens 1 --check --iters 10
done
run t4_default_again $tpv "${K[@]}" --tokens 4
run t1_default_again $tpv "${K[@]}" --tokens 1
for name in ${AGAIN:-both24_32}; do
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
