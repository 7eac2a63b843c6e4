#!/usr/bin/env bash
# GPU test of libnccl-tuner-ncclsweep.so inside real NCCL (CTest label "gpu"): tpverify's CUDA
# backend runs with NCCL_TUNER_PLUGIN pointing at the plugin, and NCCL's own log must show it
# loaded through the v5 ABI and initialised with the profile; a malformed profile must be a
# WARN while the run still succeeds. Exits 77 (skipped) without a GPU; fails when a GPU is
# listed but tpverify was built without CUDA (tests/support/gpu_without_cuda.sh checks it).
# Usage: gpu_tuner_plugin.sh /path/to/tpverify /path/to/libnccl-tuner-ncclsweep.so [LOG_DIR]
set -u
tpv=${1:?usage: gpu_tuner_plugin.sh TPVERIFY PLUGIN [LOG_DIR]}
plugin=${2:?usage: gpu_tuner_plugin.sh TPVERIFY PLUGIN [LOG_DIR]}
logs=${3:-$(mktemp -d)}
mkdir -p "$logs"
fail() { echo "gpu tuner plugin: $*" >&2; exit 1; }
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }

# One GPU means one rank: NCCL sizes the communicator 1, so the rule is written for nRanks 1.
# (At one rank NCCL may short-circuit collectives before asking a tuner; the log says.) Bare NCCL
# (--server none): at one rank the sglang preset calls no collective, as SGLang calls none.
good="$logs/profile.txt"
printf '%s\n' '# gpu test profile' 'ncclsweep-tuner-profile 1' \
  'allreduce 0 1000000000 1 1 ring ll 0' 'allgather 0 1000000000 1 1 ring simple 0' >"$good"
bad="$logs/bad_profile.txt"
printf '%s\n' 'ncclsweep-tuner-profile 1' 'allreduce 0 10 1 1 rnig ll 0' >"$bad"

run() {  # run PROFILE LOGNAME
  env NCCL_TUNER_PLUGIN="$plugin" NCCLSWEEP_TUNER_PROFILE="$1" NCCL_DEBUG=INFO \
    NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV "$tpv" --backend cuda --json --tp 1 --server none --layers 3 \
    --iters 5 --warmup 1 --graph off --timeout 120 >"$logs/$2" 2>&1
}

run "$good" tpverify_plugin.log; rc=$?
grep -q "built without CUDA" "$logs/tpverify_plugin.log" &&
  fail "nvidia-smi -L lists a GPU but $tpv was built without CUDA: build it where nvcc and NCCL are found"
[ $rc -eq 0 ] || fail "tpverify with the plugin exited $rc (log: $logs/tpverify_plugin.log)"
grep -q 'Using ncclsweep (v5)' "$logs/tpverify_plugin.log" || fail "NCCL did not load the plugin through v5"
grep -q 'ncclsweep tuner: profile .* loaded: 2 rules, 2 for nRanks 1 nNodes 1' "$logs/tpverify_plugin.log" ||
  fail "the plugin did not initialise with the profile"

run "$bad" tpverify_bad_profile.log; rc=$?
[ $rc -eq 0 ] || fail "a malformed profile made tpverify exit $rc"
grep -q "NCCL WARN ncclsweep tuner: profile .* rejected: line 2: unknown algorithm 'rnig'" \
  "$logs/tpverify_bad_profile.log" || fail "no WARN for the malformed profile"
echo "gpu tuner plugin: ok"
