#!/usr/bin/env bash
# Runs on a GPU machine with >= 2 GPUs (device tool, kind nvidia-h200-x2): engine-only build,
# then the GPU test at N = all GPUs, every N-GPU path of tpverify's CUDA backend, the N >= 2
# benchmarks of docs/benchmarks-gpu.md and, where the nccl-tests source (github.com/NVIDIA/nccl-tests;
# $NCCL_TESTS_SRC, default third_party/nccl-tests, a git-ignored copy) is present, nccl-tests -G at the pass's sizes. Logs and JSON go to $OUT.
# NVLink multicast stays off (machine rule). Exits 1 when any step that must pass failed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-out}
runs=${RUNS:-/tmp/tpverify-runs}  # per-run JSON/stderr (only the log comes back from the device)
mkdir -p "$out" "$runs"
exec > >(tee -a "$out/multi.log") 2>&1
export NCCL_NVLS_ENABLE=0
nvidia-smi -L
gpus=$(nvidia-smi -L | grep -c '^GPU ')
[ "$gpus" -ge 2 ] || { echo "needs >= 2 GPUs, found $gpus"; exit 1; }
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DNCCLSWEEP_ENGINE_ONLY=ON \
  -DNCCLSWEEP_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 | grep tpverify
ninja -C build-device tpverify >/dev/null || exit 1
tpv=build-device/engine/tpverify
K=(--backend cuda --json --model kimi-k2.5 --iters 30 --warmup 3 --timeout 60)
summary='
import json,sys
for l in sys.stdin:
    r=json.loads(l); keys=["verify_us_p50","collective_us","reduce_norm_us","check_wrong","fused","tok_s","baseline_tok_s","roofline_ratio"]
    print({k:r.get(k) for k in keys})'
failed=""
run() {  # run NAME ARGS...: must exit 0 (recorded in $failed otherwise)
  local name=$1; shift
  echo "== $name: $*"
  timeout 150 "$@" > "$runs/$name.jsonl" 2> "$runs/$name.err"; local rc=$?; echo "rc=$rc"
  [ $rc -eq 0 ] || failed="$failed $name"
  grep -v "NCCL INFO" "$runs/$name.err" | head -8
  grep -h '"event":"result"' "$runs/$name.jsonl" | python3 -c "$summary"
}
echo "== gpu test (N = $gpus)"
tests/engine/gpu_tpverify.sh $tpv || failed="$failed gpu_test"
# The server's pass at N = all GPUs, one process per rank (default) and threads.
run tpN_processes $tpv "${K[@]}" --tp $gpus --tokens 4 --check
run tpN_threads $tpv "${K[@]}" --tp $gpus --tokens 4 --check --process-model threads
run tpN_processes_fused $tpv "${K[@]}" --tp $gpus --tokens 4 --check --fusion on
run tpN_global_capture $tpv "${K[@]}" --tp $gpus --tokens 4 --capture-mode global --iters 10
# Correctness at N=2 (earlier rows of docs/benchmarks-gpu.md): graphs and eager, fused and NCCL + norm.
NCCL_DEBUG=WARN run tp2_check_unfused $tpv "${K[@]}" --tp 2 --tokens 4 --graph on --check
run tp2_check_fused $tpv "${K[@]}" --tp 2 --tokens 4 --graph on --fusion on --check
run tp2_check_unfused_eager $tpv "${K[@]}" --tp 2 --tokens 4 --graph off --check --layers 8
# One process per rank with the NCCL_COMM_ID rendezvous (rank 0 reports).
export NCCL_COMM_ID=127.0.0.1:29611
NCCL_DEBUG=WARN timeout 120 $tpv "${K[@]}" --rank 1 --nranks 2 --tokens 4 --check --layers 8 > "$runs/rank1.jsonl" 2> "$runs/rank1.err" &
r1=$!
NCCL_DEBUG=WARN run rank0_of_2 $tpv "${K[@]}" --rank 0 --nranks 2 --tokens 4 --check --layers 8
for i in $(seq 1 20); do kill -0 $r1 2>/dev/null || break; sleep 1; done
if kill -0 $r1 2>/dev/null; then
  echo "rank 1 still running 20 s after rank 0 ended: backtrace"
  cuda-gdb -p $r1 -batch -ex "thread apply all bt 12" 2>&1 | grep -E "^#|Thread" | head -60
  kill -9 $r1
fi
wait $r1; rc1=$?; echo "rank1 rc=$rc1"; [ $rc1 -eq 0 ] || failed="$failed rank1_of_2"; grep -v "NCCL INFO" "$runs/rank1.err" | head -5
unset NCCL_COMM_ID
# Fused one-shot vs NCCL + separate norm, 14-448 KB per all-reduce (1-32 tokens), short model.
for t in 1 4 8 32; do
  run tp2_t${t}_unfused $tpv "${K[@]}" --tp 2 --tokens $t --layers 8 --graph on
  run tp2_t${t}_fused $tpv "${K[@]}" --tp 2 --tokens $t --layers 8 --graph on --fusion on
done
# nccl-tests-style reference: all-reduces captured in a CUDA graph (torch.distributed + NCCL).
echo "== graph-timed NCCL all-reduce reference"
timeout 120 python3 bench/nccl_graph_allreduce.py 2 > "$runs/nccl_graph_ref.jsonl" 2> "$runs/nccl_graph_ref.err"; echo "rc=$?"
cat "$runs/nccl_graph_ref.jsonl"; grep -v Warning "$runs/nccl_graph_ref.err" | tail -3
# nccl-tests -G (graph-launched) at the pass's all-reduce sizes (tokens x 14336 B), next to
# tpverify's comm-only figure at the same sizes (collective_us of --tokens T, process per rank).
src=${NCCL_TESTS_SRC:-third_party/nccl-tests}
if [ -d "$src" ]; then
  echo "== nccl-tests (-G 1) from $src"
  rm -rf /tmp/nccl-tests && cp -r "$src" /tmp/nccl-tests
  if make -C /tmp/nccl-tests MPI=0 NCCL_HOME=/usr CUDA_HOME=/usr/local/cuda -j16 >/tmp/nccl-tests.log 2>&1; then
    for op in all_reduce all_gather; do
      timeout 120 /tmp/nccl-tests/build/${op}_perf -b 14336 -e 458752 -f 2 -g $gpus -d bfloat16 -G 1 -w 5 -n 50 \
        || failed="$failed nccl_tests_$op"
    done
    for t in 1 2 4 8 16 32; do run comm_t$t $tpv "${K[@]}" --tp $gpus --tokens $t --layers 8; done
  else
    tail -20 /tmp/nccl-tests.log; failed="$failed nccl_tests_build"
  fi
else
  echo "== nccl-tests source not found at $src: comparison not run"
fi
if [ -n "$failed" ]; then echo "FAILED:$failed"; exit 1; fi
echo "all steps passed"
