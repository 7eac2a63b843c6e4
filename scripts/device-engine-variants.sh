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
# expert sum, all-reduce and norm run (TPVERIFY_PREFETCH_LAYER_MB), asked for in the ways of
# TPVERIFY_PREFETCH_MODE (bulk, line, touch; empty: the fork and launch alone), on a stream of
# its own or chained on the pass's (TPVERIFY_PREFETCH_STREAM=main). The first
# comparison (bulk requests, 8-48 MiB, both windows; the u4r INT4 kernel): run17-h100-prefetch.log.
configs=(
  "default"
  "attn8 TPVERIFY_PREFETCH_ATTN_MB=8"
  "attn8_line TPVERIFY_PREFETCH_ATTN_MB=8 TPVERIFY_PREFETCH_MODE=line"
  "attn8_touch TPVERIFY_PREFETCH_ATTN_MB=8 TPVERIFY_PREFETCH_MODE=touch"
  "attn8_empty TPVERIFY_PREFETCH_ATTN_MB=8 TPVERIFY_PREFETCH_MODE=empty"
  "attn24_line TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_MODE=line"
  "attn24_touch TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_MODE=touch"
  "layer16_line TPVERIFY_PREFETCH_LAYER_MB=16 TPVERIFY_PREFETCH_MODE=line"
  "layer16_touch TPVERIFY_PREFETCH_LAYER_MB=16 TPVERIFY_PREFETCH_MODE=touch"
  "layer16_empty TPVERIFY_PREFETCH_LAYER_MB=16 TPVERIFY_PREFETCH_MODE=empty"
  "attn8_main TPVERIFY_PREFETCH_ATTN_MB=8 TPVERIFY_PREFETCH_STREAM=main"
  "attn24_main TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_STREAM=main"
  "attn24_line_main TPVERIFY_PREFETCH_ATTN_MB=24 TPVERIFY_PREFETCH_STREAM=main TPVERIFY_PREFETCH_MODE=line"
  "layer16_main TPVERIFY_PREFETCH_LAYER_MB=16 TPVERIFY_PREFETCH_STREAM=main"
  "layer16_line_main TPVERIFY_PREFETCH_LAYER_MB=16 TPVERIFY_PREFETCH_STREAM=main TPVERIFY_PREFETCH_MODE=line"
)
all_configs="default attn8 attn8_line attn8_touch attn8_empty attn24_line attn24_touch layer16_line layer16_touch layer16_empty attn8_main attn24_main attn24_line_main layer16_main layer16_line_main"
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
  case " ${CHECKS:-attn24_touch layer16_line_main} " in *" $name "*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  run "t4_check_$name" env $settings $tpv "${K[@]}" --tokens 4 --check --iters 10
  # shellcheck disable=SC2086
  run "t1_check_$name" env $settings $tpv "${K[@]}" --tokens 1 --check --iters 10
done
run t4_default_again $tpv "${K[@]}" --tokens 4
run t1_default_again $tpv "${K[@]}" --tokens 1
for name in ${AGAIN:-attn8}; do
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
