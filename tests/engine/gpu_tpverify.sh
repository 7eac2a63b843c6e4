#!/usr/bin/env bash
# GPU test of tpverify's CUDA backend (CTest label "gpu"). Exits 77 (skipped) without a GPU;
# fails when `nvidia-smi -L` lists a GPU but tpverify was built without CUDA (a CUDA build that
# failed on a GPU host is a failure, not a skip; tests/support/gpu_without_cuda.sh checks it). Covers one process per rank (the default) at N = the number of
# visible GPUs, thread mode at the same N, --check on sampled replays, and with N >= 2 a rank
# killed mid-pass and --capture-mode global. Usage: gpu_tpverify.sh /path/to/tpverify
set -uo pipefail
tpv=${1:?usage: gpu_tpverify.sh /path/to/tpverify}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "no GPU visible: skipped"; exit 77
fi
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  n=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
else
  n=$(nvidia-smi -L | grep -c '^GPU ')
fi
[ "$n" -gt 8 ] && n=8
small=(--backend cuda --json --layers 3 --iters 10 --warmup 1 --timeout 60 --tp "$n" --context 1024)
out=$("$tpv" "${small[@]}" --check --fusion on --graph on 2>&1); rc=$?
# (kimi-k2.5 runs its routed experts in INT4 by default: the W4A16 kernel is in this check)
fail() { echo "FAIL (N=$n): $1"; echo "$out"; exit 1; }
grep -q "built without CUDA" <<<"$out" &&
  fail "nvidia-smi -L lists a GPU but $tpv was built without CUDA: build it where nvcc and NCCL are found"
[ $rc -eq 0 ] || fail "--check --fusion on --graph on exited $rc"
grep -q '"backend":"cuda"' <<<"$out" || fail "no cuda start event"
grep -q '"process_model":"process-per-rank"' <<<"$out" || fail "default is not one process per rank"
[ "$(grep -c '"event":"start"' <<<"$out")" -eq 1 ] || fail "not exactly one start event (one event stream, rank 0)"
grep -q '"check_wrong":0' <<<"$out" || fail "check_wrong is not 0"
grep -q '"check_replays":1' <<<"$out" || fail "no sampled replay was checked (10 replays, one check every 8)"
grep -q '"event":"ready"' <<<"$out" || fail "no ready event"
# The draft's GQA decode attention runs in one kernel by default (head_decode.cu; the default MLA
# path is cuBLAS's, which the check leaves alone, so these outputs are the draft's).
grep -q '"check_attention_outputs":[1-9]' <<<"$out" || fail "the draft's GQA decode attention was not checked"
grep -q '"parts_us":{"gemm":[0-9]' <<<"$out" || fail "no parts_us"
grep -q '"expert_format":"int4-g32"' <<<"$out" || fail "kimi-k2.5 does not run INT4 experts by default"
grep -q '"server":"sglang"' <<<"$out" || fail "the default server preset is not sglang"
grep -q '"capture_mode":"global"' <<<"$out" || fail "sglang does not capture in global mode"
# SGLang calls no collective at one rank (its GroupCoordinator returns the input): nor does the
# sglang preset, so the comm-only pass has nothing to time; with more ranks it calls them all.
if [ "$n" -eq 1 ]; then
  grep -q '"collectives_skipped":true' <<<"$out" || fail "one rank under sglang still calls its collectives"
  grep -q '"comm_pass_us":0[,}]' <<<"$out" || fail "one rank under sglang: the comm-only pass is not empty"
else
  grep -q '"collectives_skipped":false' <<<"$out" || fail "$n ranks under sglang skip their collectives"
fi
grep -q '"nccl_env":{"NCCL_CUMEM_ENABLE":"0","NCCL_NVLS_ENABLE":"0"' <<<"$out" || fail "nccl_env lacks SGLang's NCCL variables"
grep -q '"libnccl":"/' <<<"$out" || fail "no libnccl path in the start event"
grep -q '"check_graph_replays":2' <<<"$out" || fail "the check's graph was not replayed twice (initial check + one sampled replay)"
grep -q '"check_gemm_outputs":[1-9]' <<<"$out" || fail "the streaming GEMMs were not checked"
grep -q '"moe_streams":"2"' <<<"$out" || fail "the MoE blocks do not run on two streams by default"
grep -q '"check_moe_stream_outputs":[1-9]' <<<"$out" || fail "the two-stream MoE block was not checked"
# A two-stream MoE block without its fork or its join: --check must catch both (exit 1; eager,
# where the dropped dependency leaves a plain race the check's delays expose).
for fault in fork join; do
  out=$(TPVERIFY_MOE_FAULT=$fault "$tpv" "${small[@]}" --check --graph off 2>&1); rc=$?
  [ $rc -eq 1 ] || fail "TPVERIFY_MOE_FAULT=$fault --check exited $rc, not 1"
  grep -q "on two streams: [1-9]" <<<"$out" || fail "TPVERIFY_MOE_FAULT=$fault: the check did not report the MoE block"
done
# The shared expert's SiLU-and-mul and down held back until the routed SiLU-and-mul
# (TPVERIFY_MOE_STREAMS=2l, to compare): the block against one stream bit for bit, in a graph at
# 1 and 4 tokens, and without its join (eager) caught.
for tokens in 1 4; do
  out=$(TPVERIFY_MOE_STREAMS=2l "$tpv" "${small[@]}" --tokens $tokens --check 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "TPVERIFY_MOE_STREAMS=2l --tokens $tokens --check exited $rc"
  grep -q '"moe_streams":"2l"' <<<"$out" || fail "TPVERIFY_MOE_STREAMS=2l: the start event does not say 2l"
  grep -q '"check_moe_stream_outputs":[1-9]' <<<"$out" || fail "TPVERIFY_MOE_STREAMS=2l ($tokens tokens): the block was not checked"
done
out=$(TPVERIFY_MOE_STREAMS=2l TPVERIFY_MOE_FAULT=join "$tpv" "${small[@]}" --check --graph off 2>&1); rc=$?
[ $rc -eq 1 ] || fail "TPVERIFY_MOE_STREAMS=2l TPVERIFY_MOE_FAULT=join --check exited $rc, not 1"
# The fused MLA attention in each of its forms: 32 query rows a split block and the wide combine
# (the default), 64 and 16 rows, the first (serial) combine.
for form in "" TPVERIFY_MLA_ROWS=64 TPVERIFY_MLA_ROWS=16 TPVERIFY_MLA_COMBINE=serial; do
  # shellcheck disable=SC2086
  out=$(env TPVERIFY_ATTENTION=fused $form "$tpv" "${small[@]}" --check 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "TPVERIFY_ATTENTION=fused $form --check exited $rc"
  grep -q '"check_attention_outputs":[1-9]' <<<"$out" || fail "the fused MLA attention ($form) was not checked"
done
# The two-pass MLA attention (scores kernel, values kernel whose splits meet by atomic adds; the
# check runs it twice and checks the second output) at 1 and 4 tokens, and in the pass's graph.
for tokens in 1 4; do
  out=$(TPVERIFY_ATTENTION=two-pass "$tpv" "${small[@]}" --tokens $tokens --check 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "TPVERIFY_ATTENTION=two-pass --tokens $tokens --check exited $rc"
  grep -q '"check_attention_outputs":[1-9]' <<<"$out" || fail "the two-pass MLA attention ($tokens tokens) was not checked"
done
# The cluster MLA attention (a split's 8 blocks meeting their maxima and P in distributed shared
# memory; one round of P in the pass's shape, two in the check's unsplit case) at 1 and 4 tokens.
for tokens in 1 4; do
  out=$(TPVERIFY_ATTENTION=cluster "$tpv" "${small[@]}" --tokens $tokens --check 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "TPVERIFY_ATTENTION=cluster --tokens $tokens --check exited $rc"
  grep -q '"check_attention_outputs":[1-9]' <<<"$out" || fail "the cluster MLA attention ($tokens tokens) was not checked"
done
# The values MLA attention (cuBLAS scores, then one cluster kernel for softmax and values) and the
# probs one (the same kernel after the softmax) with 8 and 16 context parts, at 1 and 4 tokens (one
# and four row blocks; the check's 80 rows: a partial one).
for form in "values 1 8" "values 4 8" "values 1 16" "values 4 16" "probs 1 8" "probs 4 8" "probs 1 16" "probs 4 16"; do
  read -r attention tokens parts <<<"$form"
  out=$(TPVERIFY_ATTENTION=$attention TPVERIFY_VALUES_PARTS=$parts "$tpv" "${small[@]}" --tokens $tokens --check 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "TPVERIFY_ATTENTION=$attention (parts $parts) --tokens $tokens --check exited $rc"
  grep -q '"check_attention_outputs":[1-9]' <<<"$out" || fail "the $attention MLA attention ($tokens tokens, parts $parts) was not checked"
done
# The draft's GQA decode attention (its extend's shape and the check's own cases, each run twice)
# at 1 token in the pass's graph (4 tokens: the first run); and on the cuBLAS path
# (TPVERIFY_HEAD_ATTENTION=cublas), which the check leaves alone: no attention output checked
# shows that the switch took.
out=$("$tpv" "${small[@]}" --tokens 1 --check --graph on 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--tokens 1 --check --graph on exited $rc"
grep -q '"check_attention_outputs":[1-9]' <<<"$out" || fail "the draft's GQA decode attention (1 token) was not checked"
for tokens in 1 4; do
  out=$(TPVERIFY_HEAD_ATTENTION=cublas "$tpv" "${small[@]}" --tokens $tokens --check 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "TPVERIFY_HEAD_ATTENTION=cublas --tokens $tokens --check exited $rc"
  grep -q '"check_attention_outputs":0' <<<"$out" || fail "TPVERIFY_HEAD_ATTENTION=cublas ($tokens tokens) still ran head_decode"
done
# The INT4 kernels whose warps keep their chunks in shared-memory stages filled by bulk copies
# (TPVERIFY_INT4=bulk*): plain at 4 tokens with the slice rule's k slices, folded at 1 token, 16
# stages unsplit; the stream-K kernel (TPVERIFY_INT4=sk: engine/cuda/stream_k.cuh) at 1
# and 4 tokens; and 8 chunks in flight a warp (u8) on the expert down launches only (the per-shape
# form, n x k at this TP), the gate_up launches on the default kernel: the W4A16 GEMMs at the
# pass's shapes against the host reference.
for form in "4 TPVERIFY_INT4=bulk8" "1 TPVERIFY_INT4=bulk8f" "4 TPVERIFY_INT4=bulk16 TPVERIFY_INT4_SLICES=1" \
  "1 TPVERIFY_INT4=sk" "4 TPVERIFY_INT4=sk" "1 TPVERIFY_INT4=7168x$((2048 / n))=u8"; do
  read -r tokens settings <<<"$form"
  # shellcheck disable=SC2086
  out=$(env $settings "$tpv" "${small[@]}" --tokens $tokens --check 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "$settings --tokens $tokens --check exited $rc"
  grep -q '"check_gemm_outputs":[1-9]' <<<"$out" || fail "$settings --tokens $tokens: no GEMM output was checked"
done
# The routed experts' down launch with the SiLU-and-mul in its staging (fusion group expert_silu)
# and the layer's weighted sum in its last blocks (expert_sum): --check runs the down GEMM with
# the SiLU against the host reference, and the MoE block (fused, two streams) against one stream
# (unfused) bit for bit; on cuBLAS (bf16 experts) the silu_mul kernel runs first instead, the
# sum stays its own kernel and the block runs on one stream (only skinny GEMMs fork), so there
# the check's own verdict is asserted. Without the join the fused sum must be caught.
for case in 4:streaming:mla,moe,expert_silu,expert_sum 1:streaming:mla,moe,expert_silu,expert_sum \
  1:streaming:mla,moe,expert_sum 1:cublas:all; do
  IFS=: read -r tokens path fuse <<<"$case"
  settings=("TPVERIFY_FUSE=$fuse") flags=()
  [ "$path" = cublas ] && settings+=(TPVERIFY_GEMM=cublas) && flags=(--expert-format bf16)
  out=$(env "${settings[@]}" "$tpv" "${small[@]}" --tokens "$tokens" --check "${flags[@]}" 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "${settings[*]} ${flags[*]} --tokens $tokens --check exited $rc"
  grep -q "\"kernel_fusion\":\"${fuse/all/mla,moe,silu,expert_silu,expert_sum}\"" <<<"$out" ||
    fail "$fuse: the start event does not name the fusion groups"
  if [ "$path" = cublas ]; then
    grep -q '"check_wrong":0' <<<"$out" || fail "$fuse on cuBLAS: check_wrong is not 0"
  else
    grep -q '"check_moe_stream_outputs":[1-9]' <<<"$out" || fail "$fuse: the MoE block was not checked"
  fi
done
out=$(TPVERIFY_FUSE=all TPVERIFY_MOE_FAULT=join "$tpv" "${small[@]}" --tokens 1 --check --graph off 2>&1); rc=$?
[ $rc -eq 1 ] || fail "TPVERIFY_FUSE=all TPVERIFY_MOE_FAULT=join --check exited $rc, not 1"
grep -q "on two streams: [1-9]" <<<"$out" || fail "TPVERIFY_FUSE=all without the join: the check did not report the MoE block"
# Steps left out for measuring (TPVERIFY_OMIT): named in the start event and on stderr; an unknown
# name and --check are usage errors (exit 2), since the outputs are then not the model's.
out=$(TPVERIFY_OMIT=attention,expert_sum "$tpv" "${small[@]}" --tokens 1 2>&1); rc=$?
[ $rc -eq 0 ] || fail "TPVERIFY_OMIT=attention,expert_sum exited $rc"
grep -q '"omitted":"attention,expert_sum"' <<<"$out" || fail "the start event does not name the omitted steps"
grep -q 'leave these steps out' <<<"$out" || fail "TPVERIFY_OMIT: no note on stderr"
out=$(TPVERIFY_OMIT=attention,bogus "$tpv" "${small[@]}" --tokens 1 2>&1); rc=$?
[ $rc -eq 2 ] || fail "TPVERIFY_OMIT with an unknown step exited $rc, not 2"
grep -q "unknown step 'bogus'" <<<"$out" || fail "TPVERIFY_OMIT: the error does not name the unknown step"
out=$(TPVERIFY_OMIT=silu "$tpv" "${small[@]}" --tokens 1 --check 2>&1); rc=$?
[ $rc -eq 2 ] || fail "TPVERIFY_OMIT=silu --check exited $rc, not 2"
# A collective that hands back the previous call's data: --check must catch it (exit 1).
out=$("$tpv" "${small[@]}" --check --inject stale 2>&1); rc=$?
[ $rc -eq 1 ] || fail "--check --inject stale exited $rc, not 1"
grep -q "wrong elements" <<<"$out" || fail "--inject stale: the check did not report wrong elements"
out=$("$tpv" "${small[@]}" --server none 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--server none exited $rc"
grep -q '"capture_mode":"thread-local"' <<<"$out" || fail "--server none does not capture thread-local"
grep -q '"collectives_skipped":false' <<<"$out" || fail "--server none skips its collectives"
grep -q '"comm_pass_us":[1-9]' <<<"$out" || fail "--server none: the comm-only pass timed nothing"
out=$("$tpv" "${small[@]}" --check --expert-format bf16 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--expert-format bf16 --check exited $rc (streaming GEMMs vs host reference included)"
grep -q '"expert_format":"bf16"' <<<"$out" || fail "bf16 not reported in the start event"
grep -q '"check_wrong":0' <<<"$out" || fail "bf16 check_wrong is not 0"
out=$("$tpv" "${small[@]}" --check --fusion off --graph off 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--check eager exited $rc"
grep -q '"check_wrong":0' <<<"$out" || fail "eager check_wrong is not 0"
out=$("$tpv" "${small[@]}" --process-model threads --check 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--process-model threads exited $rc"
grep -q '"process_model":"threads"' <<<"$out" || fail "thread mode not reported"
# One process per rank started by someone else, without a rendezvous address: a usage error.
out=$(env -u NCCL_COMM_ID "$tpv" "${small[@]}" --tp 2 --rank 0 --nranks 2 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--rank without NCCL_COMM_ID exited $rc, not 2"
grep -q "NCCL_COMM_ID" <<<"$out" || fail "--rank error does not name NCCL_COMM_ID"
if [ "$n" -ge 2 ]; then
  out=$("$tpv" "${small[@]}" --capture-mode global 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "--capture-mode global in process-per-rank mode exited $rc"
  # A rank killed mid-pass ends the run with that rank's error within 2 s.
  log=$(mktemp)
  "$tpv" "${small[@]}" --iters 100000000 >"$log" 2>&1 &
  launcher=$!
  for _ in $(seq 1 600); do grep -q '"event":"ready"' "$log" && break; sleep 0.1; done
  victim=$(pgrep -P "$launcher" | sed -n 2p)
  [ -n "$victim" ] || { out=$(cat "$log"); kill "$launcher"; fail "no second rank process under the launcher"; }
  t0=$(date +%s%N)
  kill -9 "$victim"
  wait "$launcher"; rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  out=$(cat "$log"); rm -f "$log"
  [ $rc -ne 0 ] || fail "killing rank 1 did not fail the run"
  grep -q "rank 1 of $n ended with signal 9" <<<"$out" || fail "the error does not name the killed rank"
  [ "$ms" -le 2000 ] || fail "the run took $ms ms to end after rank 1 was killed (limit 2000)"
  echo "killed rank 1: run ended in $ms ms"
fi
# --measure-collectives: a calibration file the sim reads and prices every collective from.
cal=$(mktemp)
out=$("$tpv" --backend cuda --measure-collectives --tp "$n" --iters 5 --warmup 1 2>&1 >"$cal"); rc=$?
[ $rc -eq 0 ] || { rm -f "$cal"; fail "--measure-collectives exited $rc"; }
grep -q "^table all_reduce $n " "$cal" || { out=$(cat "$cal"); rm -f "$cal"; fail "no all_reduce table for $n ranks"; }
grep -q "^57344 " "$cal" || { out=$(cat "$cal"); rm -f "$cal"; fail "the pass's all-reduce size (57344 B) was not measured"; }
out=$("$tpv" --backend sim --json --tp "$n" --iters 3 --warmup 0 --calibration "$cal" 2>&1); rc=$?
rm -f "$cal"
[ $rc -eq 0 ] || fail "the sim refused the measured calibration (exit $rc)"
grep -q '"collective_times":"calibrated"' <<<"$out" || fail "the sim did not price every collective from the measurement"
grep -q '"relative_collectives":0,"modelled_collectives":0' <<<"$out" || fail "some collectives were not priced from the measurement"
echo "gpu tpverify: ok (N=$n)"
