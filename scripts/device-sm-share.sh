#!/usr/bin/env bash
# Runs on the GPU machine (device tool): the 1-token INT4 pass with the GPU's SMs limited by an
# MPS share (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), so that an H100 (3.0 TB/s over 132 SMs) runs
# with an H200's bandwidth per SM (4.26 TB/s over 132 SMs: 71 % of the H100's SMs). Each
# configuration in CONFIGS (';'-separated: a name, then VAR=VALUE words) runs at every share in
# SHARES (percent; default "100 71"). The question it asks: does a kernel that keeps more bytes
# in flight a warp (u8) win once each SM must move an H200's share of the bandwidth, as the
# H200's INT4 launches at 68-83 % of copy bandwidth suggest (docs/benchmarks-gpu.md)? A proxy
# only: the L2 and the DRAM stay the H100's, so an H200 run decides. Written 2026-12-08 and not
# yet run: whether the MPS daemon starts on the device machine is untested (without it every
# configuration runs once, on the whole GPU). TOKENS (default 1) picks the pass.
# Output (scripts/device-engine-common.sh's): $OUT/sm-share.log with the summary table last, and
# runs.tar.gz (every run's JSON and stderr); run t1_s71_u8 is configuration u8 at share 71 %.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source scripts/device-engine-common.sh
device_setup sm-share.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
bash scripts/device-build-engine.sh || exit 1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
shares=${SHARES:-100 71}
sms_seen() {  # the SM count a CUDA client sees at share $1 (empty if it cannot start)
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$1 /opt/torch/.venv/bin/python3 -c \
    'import torch; print(torch.cuda.get_device_properties(0).multi_processor_count)' 2>/dev/null | tail -1
}
if nvidia-cuda-mps-control -d; then
  trap 'echo quit | nvidia-cuda-mps-control' EXIT
  if [ -z "$(sms_seen 100)" ]; then  # the daemon runs, but its clients cannot connect
    echo "mps: a client cannot start under the daemon; the whole GPU only, without MPS"
    echo quit | nvidia-cuda-mps-control
    trap - EXIT
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    shares=100
  fi
else
  echo "mps: cannot start the daemon; the whole GPU only"
  shares=100
fi
IFS=';' read -r -a configs <<< "${CONFIGS:-default;late TPVERIFY_MOE_STREAMS=2l;u8_down TPVERIFY_INT4=7168x2048=u8;u8_gu TPVERIFY_INT4=4096x7168=u8;u8 TPVERIFY_INT4=u8;sk_down TPVERIFY_INT4=7168x2048=sk;default_again}"
tokens=${TOKENS:-1}
for share in $shares; do
  echo "== share $share %: SMs seen $(sms_seen "$share")"
  for c in "${configs[@]}"; do
    read -r -a words <<< "$c"
    run "t${tokens}_s${share}_${words[0]}" env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$share" "${words[@]:1}" \
      build-device/engine/tpverify --backend cuda --json --model kimi-k2.5 --iters 30 --warmup 5 \
      --tokens "$tokens"
  done
done
summarize
