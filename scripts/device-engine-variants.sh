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
# name, then the TPVERIFY_* settings of each configuration: the INT4 kernels whose warps keep
# their chunks in shared-memory stages that bulk copies fill (TPVERIFY_INT4=bulk4 / bulk8 /
# bulk16 stages a warp, bulk8f folded; u8 8 chunks in flight in registers; engine-cuda.md)
# against the default (u4 plain at one row of 8 experts, u4f folded elsewhere), with the slice
# rule's k slices or TPVERIFY_INT4_SLICES's; the routed experts' SiLU-and-mul in their down
# launch's staging of x (fusion group expert_silu) and the layer's expert sum in that launch
# (expert_sum); k slices per shape for the 1-token
# launches (down 7168x2048: 1 by the rule; gate_up 4096x7168: 4; blocks4 is the rule before
# it, 2 and 3 at 1 token); wps4 / wps16 the skinny bf16 GEMMs split over k for 4 / 16 warps an
# SM instead of 8 (to compare on the H200, where they took 1-3 us each over their bytes);
# u8_down / u8_gu / sk_down name one TP-1 shape (TPVERIFY_INT4's NxK=name form: the expert
# down launches 7168x2048, the gate_up ones 4096x7168), the other on the default kernel; sk
# the stream-K kernel (engine/cuda/stream_k.cuh: the
# launch's chunks cut evenly over exactly the warps the SMs hold; run29-h100-stream-k.log and
# run30-h100-refill.log have it and the refilling forms of the plain kernel, since taken out). The no_* configurations leave steps out of the pass (TPVERIFY_OMIT,
# measuring only): the pass without them, so what each costs inside it; `one` runs the MoE
# block on one stream, `late` with the shared SiLU and down after the routed SiLU; two_pass
# the two-pass MLA attention, cluster the cluster one, fused the split kernel with its combine,
# softmax_pdl the cuBLAS path's softmax on PDL, values (values16) the
# cuBLAS scores GEMM then one cluster kernel of 8 (16) context parts for softmax and values, probs
# (probs16) the same kernel after the cuBLAS path's softmax, for its values GEMM and reduce, head_cublas
# the draft's GQA attention on the cuBLAS path instead of its one kernel (head_decode.cu;
# engine-cuda.md; run27-h100-head-probs.log has the comparison).
# The L2 prefetch comparison: run17-h100-prefetch.log and run18-h100-prefetch-modes.log.
# (A configuration's VAR=VALUE words go to the environment, its --flag=value words to tpverify.)
# bare: NCCL's one-rank collectives called as bare NCCL calls them (--server none), with SGLang's
# variables and global capture, so that only the skipped collectives differ from the default.
configs=(
  "default"
  "bare NCCL_CUMEM_ENABLE=0 NCCL_NVLS_ENABLE=0 CUDA_DEVICE_MAX_CONNECTIONS=8 --server=none --capture-mode=global"
  "bulk4 TPVERIFY_INT4=bulk4"
  "bulk8 TPVERIFY_INT4=bulk8"
  "bulk16 TPVERIFY_INT4=bulk16"
  "bulk8f TPVERIFY_INT4=bulk8f"
  "bulk8_s1 TPVERIFY_INT4=bulk8 TPVERIFY_INT4_SLICES=1"
  "bulk8_s2 TPVERIFY_INT4=bulk8 TPVERIFY_INT4_SLICES=2"
  "bulk16_s1 TPVERIFY_INT4=bulk16 TPVERIFY_INT4_SLICES=1"
  "u4_s1 TPVERIFY_INT4=u4 TPVERIFY_INT4_SLICES=1"
  "u8 TPVERIFY_INT4=u8"
  "u8_down TPVERIFY_INT4=7168x2048=u8"
  "u8_gu TPVERIFY_INT4=4096x7168=u8"
  "sk TPVERIFY_INT4=sk"
  "sk_down TPVERIFY_INT4=7168x2048=sk"
  "esilu TPVERIFY_FUSE=mla,moe,expert_silu"
  "esum TPVERIFY_FUSE=mla,moe,expert_sum"
  "esilu_sum TPVERIFY_FUSE=mla,moe,expert_silu,expert_sum"
  "down1 TPVERIFY_INT4_SLICES=7168x2048=1"
  "down2 TPVERIFY_INT4_SLICES=7168x2048=2"
  "down4 TPVERIFY_INT4_SLICES=7168x2048=4"
  "gu2 TPVERIFY_INT4_SLICES=4096x7168=2"
  "gu3 TPVERIFY_INT4_SLICES=4096x7168=3"
  "gu4 TPVERIFY_INT4_SLICES=4096x7168=4"
  "d1g4 TPVERIFY_INT4_SLICES=7168x2048=1,4096x7168=4"
  "blocks4 TPVERIFY_INT4_SLICES=blocks4"
  "wps4 TPVERIFY_SKINNY_WARPS_PER_SM=4"
  "wps16 TPVERIFY_SKINNY_WARPS_PER_SM=16"
  "two_pass TPVERIFY_ATTENTION=two-pass"
  "cluster TPVERIFY_ATTENTION=cluster"
  "softmax_pdl TPVERIFY_SOFTMAX_PDL=1"
  "values TPVERIFY_ATTENTION=values"
  "values16 TPVERIFY_ATTENTION=values TPVERIFY_VALUES_PARTS=16"
  "probs TPVERIFY_ATTENTION=probs"
  "probs16 TPVERIFY_ATTENTION=probs TPVERIFY_VALUES_PARTS=16"
  "head_cublas TPVERIFY_HEAD_ATTENTION=cublas"
  "fused TPVERIFY_ATTENTION=fused"
  "no_attn TPVERIFY_OMIT=attention"
  "no_mla_ops TPVERIFY_OMIT=mla_ops"
  "no_silu TPVERIFY_OMIT=silu"
  "no_esum TPVERIFY_OMIT=expert_sum"
  "no_small TPVERIFY_OMIT=attention,mla_ops,silu,expert_sum"
  "one TPVERIFY_MOE_STREAMS=1"
  "late TPVERIFY_MOE_STREAMS=2l"
)
all_configs=$(for c in "${configs[@]}"; do printf '%s ' "${c%% *}"; done)
split_settings() {  # $1: VAR=VALUE words into envs, --flag=value words into flags
  envs=() flags=()
  local w
  for w in $1; do case "$w" in --*) flags+=("$w") ;; *) envs+=("$w") ;; esac; done
}
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T4:-$all_configs} " in *" $name "*) ;; *) continue ;; esac
  split_settings "$settings"
  run "t4_$name" env "${envs[@]}" $tpv "${K[@]}" --tokens 4 "${flags[@]}"
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${T1:-$all_configs} " in *" $name "*) ;; *) continue ;; esac
  split_settings "$settings"
  run "t1_$name" env "${envs[@]}" $tpv "${K[@]}" --tokens 1 "${flags[@]}"
done
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${CHECKS:-bulk8 bulk8f} " in *" $name "*) ;; *) continue ;; esac
  split_settings "$settings"
  run "t4_check_$name" env "${envs[@]}" $tpv "${K[@]}" --tokens 4 --check --iters 10 "${flags[@]}"
  run "t1_check_$name" env "${envs[@]}" $tpv "${K[@]}" --tokens 1 --check --iters 10 "${flags[@]}"
done
run t4_default_again $tpv "${K[@]}" --tokens 4
run t1_default_again $tpv "${K[@]}" --tokens 1
for name in ${AGAIN:-bulk8}; do
  for c in "${configs[@]}"; do
    read -r n settings <<<"$c"
    [ "$n" = "$name" ] || continue
    split_settings "$settings"
    run "t4_${name}_again" env "${envs[@]}" $tpv "${K[@]}" --tokens 4 "${flags[@]}"
    run "t1_${name}_again" env "${envs[@]}" $tpv "${K[@]}" --tokens 1 "${flags[@]}"
  done
done
${EXTRA_RUNS:-true}
# The INT4 expert launches and the attention steps of each configuration named in KERNELS, one
# kernel a graph, at one token (8 experts of one row; the 4-token table's rows follow).
for c in "${configs[@]}"; do
  read -r name settings <<<"$c"
  case " ${KERNELS:-default bulk8} " in *" $name "*) ;; *) continue ;; esac
  echo "== int4 kernels: $name"
  split_settings "$settings"
  env "${envs[@]}" timeout 200 $tpv --backend cuda --measure-kernels --tokens 4 "${flags[@]}" 2>/dev/null | grep '^gemm int4\|^attention'
done
if [ -n "${KERNEL_TABLE:-}" ]; then
  echo "== kernel table"
  timeout 200 $tpv --backend cuda --measure-kernels --tokens 4 > "$out/kernels-int4.txt" 2> "$runs/kernels-int4.err"
  echo "rc=$?"
fi
summarize
