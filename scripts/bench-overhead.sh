#!/usr/bin/env bash
# Per-experiment overhead of ncclsweep (everything except the workload's own run time), locally
# and over ssh to a throwaway sshd on 127.0.0.1 (scripts/test-sshd.sh).
#
#   scripts/bench-overhead.sh [BUILD_DIR] [N_LOCAL] [N_SSH]     (defaults: build 1000 1000)
#   BENCH_KINDS="true" scripts/bench-overhead.sh ...            (only the /bin/true workload)
#
# For each target it runs a sweep of 1 and one of N experiments of the simulated tpverify (axis seed: 1..N)
# and a sweep of N experiments of the trivial command /bin/true, and prints
#   overhead = (wall(N) - wall(1) - (N-1) x the workload's own time) / (N-1)   (raw: (wall(N) - N x own) / N)
# where the workload's own time is measured by running the same tpverify (or /bin/true)
# directly. Over ssh every experiment opens an exec channel, so the remote user's shell starts
# once per experiment (bash sources ~/.bashrc for ssh commands); that cost is measured
# separately (bash -c true with and without SSH_CLIENT set) and the ssh figure is printed both
# raw and net of it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
n_local=${2:-1000}
n_ssh=${3:-1000}
kinds=${BENCH_KINDS:-sim true}  # workloads to measure: sim (tpverify --backend sim) and/or true (/bin/true)
ncclsweep=$build/cli/ncclsweep
tpverify=$build/engine/tpverify
[ -x "$ncclsweep" ] && [ -x "$tpverify" ] || { echo "bench-overhead: build ncclsweep and tpverify in $build first" >&2; exit 2; }

work=$(mktemp -d)
sshd_dir=$work/sshd
cleanup() { bash "$root/scripts/test-sshd.sh" stop "$sshd_dir" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
per() { awk -v t="$1" -v n="$2" 'BEGIN { printf "%.4f", t / n }'; }
overhead() { awk -v wall="$1" -v own="$2" -v n="$3" 'BEGIN { printf "%.4f", (wall - n * own) / n }'; }

engine_args=(--json --backend sim --topology pcie-gen5 --tp 8 --iters 5 --warmup 1)

# The workload's own time: K direct runs.
own_time() {
  local k=20 start end
  start=$(now)
  for i in $(seq $k); do "$@" >/dev/null 2>&1 || true; done
  end=$(now)
  per "$(seconds "$start" "$end")" $k
}

spec() {  # spec NAME N TARGET_BLOCK KIND
  local name=$1 n=$2 target=$3 kind=$4
  echo "sweep: $name"
  printf '%s\n' "$target"
  if [ "$kind" = sim ]; then
    printf 'workload:\n  engine: tpverify\n  args: {backend: sim, topology: pcie-gen5, tp: 8, iters: 5, warmup: 1}\n'
    printf 'axes:\n  seed: [%s]\n' "$(seq -s, 1 "$n")"
  else
    printf 'workload:\n  command: [/bin/true, "{i}"]\n'
    printf 'axes:\n  i: [%s]\n' "$(seq -s, 1 "$n")"
  fi
}

sweep_wall() {  # sweep_wall LABEL SPECFILE ARGS... -> prints the wall time of `ncclsweep run`
  local label=$1 file=$2 start end
  shift 2
  start=$(now)
  "$ncclsweep" run "$file" --db "$work/$label.db" "$@" >/dev/null 2>"$work/$label.err" || {
    echo "bench-overhead: $label failed:" >&2; tail -5 "$work/$label.err" >&2; exit 1; }
  end=$(now)
  seconds "$start" "$end"
}

# run_sweep LABEL KIND N OWN TARGET ARGS...: a 1-experiment sweep gives the fixed cost (start,
# preflight, connection); the N-experiment sweep minus it, minus the workload's own time, over
# N-1 experiments, is the per-experiment overhead.
run_sweep() {
  local label=$1 kind=$2 n=$3 own=$4 target=$5 wall1 walln ok
  shift 5
  spec "$label" 1 "$target" "$kind" >"$work/$label-1.yaml"
  spec "$label" "$n" "$target" "$kind" >"$work/$label.yaml"
  wall1=$(sweep_wall "$label-1" "$work/$label-1.yaml" "$@")
  walln=$(sweep_wall "$label" "$work/$label.yaml" "$@")
  ok=$(sqlite3 "$work/$label.db" "SELECT count(*) FROM experiments WHERE status = 'ok'" 2>/dev/null || echo '?')
  LAST_OVERHEAD=$(awk -v a="$wall1" -v b="$walln" -v own="$own" -v n="$n" 'BEGIN { printf "%.4f", (b - a - (n - 1) * own) / (n - 1) }')
  printf '%-10s N=%-5s ok=%-5s wall %8.2f s (1 experiment: %6.2f s)  workload own %.4f s  overhead %s s/experiment (raw %s)\n' \
    "$label" "$n" "$ok" "$walln" "$wall1" "$own" "$LAST_OVERHEAD" "$(overhead "$walln" "$own" "$n")"
}

echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); build $build"
own_sim=$(own_time "$tpverify" "${engine_args[@]}")
own_true=$(own_time /bin/true)
echo "workload own time: tpverify sim $own_sim s, /bin/true $own_true s (mean of 20 direct runs)"

if [ "$n_local" -gt 0 ]; then
  for kind in $kinds; do
    own=$own_sim
    [ $kind = true ] && own=$own_true
    run_sweep local-$kind $kind "$n_local" "$own" "target: local" --engine "$tpverify"
  done
fi

if [ "$n_ssh" -gt 0 ]; then
  port=$(bash "$root/scripts/test-sshd.sh" start "$sshd_dir")
  user=$(id -un)
  target=$(printf 'target:\n  url: ssh://%s@127.0.0.1:%s\n  workdir: %s' "$user" "$port" "$work/remote")
  flags=(--known-hosts "$sshd_dir/known_hosts" --identity "$sshd_dir/user_key" --engine "$tpverify")
  # The remote shell's start-up, paid once per exec channel: bash as sshd starts it (SSH_CLIENT
  # set, so it sources ~/.bashrc) versus a bare bash.
  shell_rc=$(own_time env -u SHLVL SSH_CLIENT="127.0.0.1 1 2" bash -c true)
  shell_bare=$(own_time env -u SHLVL bash -c true)
  login_cost=$(awk -v a="$shell_rc" -v b="$shell_bare" 'BEGIN { printf "%.4f", a - b }')
  start=$(now)
  for i in 1 2 3; do ssh -q -o BatchMode=yes -o UserKnownHostsFile="$sshd_dir/known_hosts" -i "$sshd_dir/user_key" \
      -p "$port" "$user@127.0.0.1" true; done
  ssh_true=$(per "$(seconds "$start" "$(now)")" 3)
  echo "remote shell start: with ~/.bashrc $shell_rc s, bare $shell_bare s -> ~/.bashrc costs $login_cost s per exec channel;"
  echo "  a whole 'ssh host true' (new connection + shell) takes $ssh_true s"
  for kind in $kinds; do
    own=$own_sim
    [ $kind = true ] && own=$own_true
    run_sweep ssh-$kind $kind "$n_ssh" "$own" "$target" "${flags[@]}"
    echo "               net of the remote ~/.bashrc: $(awk -v o="$LAST_OVERHEAD" -v c="$login_cost" 'BEGIN { printf "%.4f", o - c }') s per experiment"
  done
fi
