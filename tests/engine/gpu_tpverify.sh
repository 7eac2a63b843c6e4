#!/usr/bin/env bash
# GPU test of tpverify's CUDA backend (CTest label "gpu"). Exits 77 (skipped) without a GPU
# or without a CUDA build. Usage: gpu_tpverify.sh /path/to/tpverify
set -uo pipefail
tpv=${1:?usage: gpu_tpverify.sh /path/to/tpverify}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "no GPU visible: skipped"; exit 77
fi
small=(--backend cuda --json --layers 3 --iters 5 --warmup 1 --timeout 60)
out=$("$tpv" "${small[@]}" --check --fusion on --graph on 2>&1); rc=$?
if grep -q "built without CUDA" <<<"$out"; then echo "tpverify built without CUDA: skipped"; exit 77; fi
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
[ $rc -eq 0 ] || fail "--check --fusion on --graph on exited $rc"
grep -q '"backend":"cuda"' <<<"$out" || fail "no cuda start event"
grep -q '"check_wrong":0' <<<"$out" || fail "check_wrong is not 0"
grep -q '"event":"ready"' <<<"$out" || fail "no ready event"
out=$("$tpv" "${small[@]}" --check --fusion off --graph off 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--check eager exited $rc"
grep -q '"check_wrong":0' <<<"$out" || fail "eager check_wrong is not 0"
# One process per rank without a rendezvous address: a usage error naming NCCL_COMM_ID.
out=$(env -u NCCL_COMM_ID "$tpv" "${small[@]}" --rank 0 --nranks 2 2>&1); rc=$?
[ $rc -ne 0 ] || fail "--rank without NCCL_COMM_ID succeeded"
grep -q "NCCL_COMM_ID" <<<"$out" || fail "--rank error does not name NCCL_COMM_ID"
echo "gpu tpverify: ok"
