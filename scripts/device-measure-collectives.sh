#!/usr/bin/env bash
# Runs on the GPU machine (device tool): measures NCCL all-reduce / all-gather with tpverify's own
# `--backend cuda --measure-collectives` under a few NCCL settings, and with nccl-tests 2.19.6 at
# the same sizes for comparison. Writes everything to $OUT (default ./device-out):
#   measure.log                      what ran, versions, and the comparison table (last)
#   measure.tar.gz                   tpverify-<setting>.txt (calibration files, one per setting),
#                                    nccl-tests/<coll>_<setting>.log (sweep 1K..1M),
#                                    nccl-tests-pass/<coll>_<bytes>.log (the pass's sizes)
# Needs nccl-tests' source in .device/nccl-tests (nccl-tests 2.19.6 from github.com/NVIDIA/nccl-tests;
# .device/ is ignored, so name it in the device call's `carry`). TP=N picks the rank count
# (default: every visible GPU, at most 8). Never sets NCCL_* itself except NCCL_NVLS_ENABLE=0
# where the machine requires it (several GPUs) and the settings it measures.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-device-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
mkdir -p "$work/nccl-tests" "$work/nccl-tests-pass"
exec > >(tee -a "$out/measure.log") 2>&1
echo "== machine ($(date -u '+%Y-%m-%d %H:%M UTC'))"
nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
nvcc --version | tail -1
ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null | head -3
gpus=$(nvidia-smi -L | grep -c '^GPU ')
n=${TP:-$gpus}
[ "$n" -gt 8 ] && n=8
[ "$gpus" -ge 2 ] && export NCCL_NVLS_ENABLE=0  # the machine's rule: NVLink multicast stays off
echo "ranks: $n"

bash scripts/device-build-engine.sh || exit 1
tpv=$root/build-device/engine/tpverify

echo "== build nccl-tests (all_reduce_perf, all_gather_perf)"
t0=$(date +%s)
nt=$root/.device/nccl-tests
[ -f "$nt/src/common.cu" ] || { echo "no nccl-tests source in .device/nccl-tests (copy it and carry it)"; exit 1; }
make -C "$nt/src" build MPI=0 NCCL_HOME=/usr CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} BUILDDIR="$nt/build" \
  BIN_FILES_LIST="all_reduce all_gather" NVCC_GENCODE="-gencode=arch=compute_${CUDA_ARCH:-90},code=sm_${CUDA_ARCH:-90}" \
  -j"$(nproc)" >"$work/nccl-tests-build.log" 2>&1 || { tail -30 "$work/nccl-tests-build.log"; exit 1; }
echo "build seconds: $(( $(date +%s) - t0 ))"

# settings measured: NAME and the NCCL_* words ("" = NCCL's defaults)
settings=("default|" "proto_LL|NCCL_PROTO=LL" "proto_Simple|NCCL_PROTO=Simple")

echo "== tpverify --measure-collectives"
for s in "${settings[@]}"; do
  name=${s%%|*}; vars=${s#*|}
  cmd=(env $vars "$tpv" --backend cuda --measure-collectives --tp "$n")
  echo "\$ ${vars:+$vars }tpverify --backend cuda --measure-collectives --tp $n"
  t0=$(date +%s%N)
  "${cmd[@]}" >"$work/tpverify-$name.txt" 2>"$work/tpverify-$name.err"; rc=$?
  echo "rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))"
  [ $rc -eq 0 ] || cat "$work/tpverify-$name.err"
done
# Both collectives again, default setting, eager launches (--graph off): what -G saves.
"$tpv" --backend cuda --measure-collectives --tp "$n" --graph off >"$work/tpverify-default-eager.txt" \
  2>"$work/tpverify-default-eager.err" || cat "$work/tpverify-default-eager.err"

echo "== nccl-tests at the same sizes (-d bfloat16 -o sum, -G 10 -n 50 -w 5: 50 calls per graph, as tpverify)"
nt_flags=(-g "$n" -d bfloat16 -o sum -G 10 -n 50 -w 5)
for s in "${settings[@]}"; do
  name=${s%%|*}; vars=${s#*|}
  for coll in all_reduce all_gather; do
    # all_gather_perf's sizes are the gathered total: n x one rank's input
    [ "$coll" = all_gather ] && lo=$((1024 * n)) hi=$((1048576 * n))
    [ "$coll" = all_reduce ] && lo=1024 hi=1048576
    log=$work/nccl-tests/${coll}_$name.log
    echo "\$ ${vars:+$vars }./build/${coll}_perf ${nt_flags[*]} -b $lo -e $hi -f 2" | tee "$log"
    env $vars "$nt/build/${coll}_perf" "${nt_flags[@]}" -b $lo -e $hi -f 2 >>"$log" 2>&1 || tail -5 "$log"
  done
done
# The pass's own sizes (not powers of two), default setting: one run per size.
for coll in all_reduce all_gather; do
  for bytes in $(awk -v c="$coll" '$1=="table"{t=$2} t==c && $1 ~ /^[0-9]+$/ {print $1}' "$work/tpverify-default.txt"); do
    pow=$(( bytes & (bytes - 1) ))
    [ "$pow" -eq 0 ] && [ "$bytes" -le 1048576 ] && continue
    total=$bytes; [ "$coll" = all_gather ] && total=$((bytes * n))
    log=$work/nccl-tests-pass/${coll}_$bytes.log
    echo "\$ ./build/${coll}_perf ${nt_flags[*]} -b $total -e $total" >"$log"
    "$nt/build/${coll}_perf" "${nt_flags[@]}" -b $total -e $total >>"$log" 2>&1 || tail -5 "$log"
  done
done

echo "== comparison (µs per collective; tpverify median of 5 trials, nccl-tests one run)"
python3 - "$work" "$n" <<'PY'
import glob, os, re, sys
work, n = sys.argv[1], int(sys.argv[2])
def tpv(path):
    t, rows = None, {}
    for line in open(path):
        m = re.match(r'table (\w+) ', line)
        if m: t = m.group(1); continue
        m = re.match(r'(\d+) ([\d.]+)\s+# in-place ([\d.]+)', line)
        if m and t: rows[(t, int(m.group(1)))] = (float(m.group(2)), float(m.group(3)))
    return rows
def nct(path, coll):
    rows = {}
    for line in open(path):
        w = line.split()
        if len(w) >= 13 and w[0].isdigit() and w[1].isdigit():
            size = int(w[0]) // (n if coll == 'all_gather' else 1)
            rows[(coll, size)] = (float(w[5]), float(w[9]))
    return rows
for name in ('default', 'proto_LL', 'proto_Simple'):
    path = f'{work}/tpverify-{name}.txt'
    if not os.path.exists(path): continue
    t = tpv(path)
    eager = tpv(f'{work}/tpverify-default-eager.txt') if name == 'default' else {}
    ref = {}
    for coll in ('all_reduce', 'all_gather'):
        f = f'{work}/nccl-tests/{coll}_{name}.log'
        if os.path.exists(f): ref.update(nct(f, coll))
        if name == 'default':
            for f in glob.glob(f'{work}/nccl-tests-pass/{coll}_*.log'): ref.update(nct(f, coll))
    print(f'-- {name}: collective bytes | tpverify out / in | nccl-tests out / in | out ratio' +
          (' | tpverify eager out' if eager else ''))
    for key in sorted(t):
        a, b = t[key]
        r = ref.get(key)
        rs = f'{r[0]:7.2f} / {r[1]:7.2f} | {a / r[0]:5.2f}' if r else '      - /       - |     -'
        e = f' | {eager[key][0]:7.2f}' if key in eager else ''
        print(f'{key[0]:10s} {key[1]:8d} | {a:7.2f} / {b:7.2f} | {rs}{e}')
PY
tar -C "$work" -czf "$out/measure.tar.gz" .
echo "== files"; tar -tzf "$out/measure.tar.gz" | sort | head -40
