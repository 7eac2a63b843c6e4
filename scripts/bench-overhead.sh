#!/usr/bin/env bash
# Per-experiment overhead of ncclsweep (everything except the workload's own run time), locally
# and over ssh to a throwaway sshd on 127.0.0.1 (scripts/test-sshd.sh).
#
#   scripts/bench-overhead.sh [BUILD_DIR] [N_LOCAL] [N_SSH] [N_SSH_RC] [N_SSH_SLOW]
#                                          (defaults: build 1000 1000 50 50)
#   BENCH_KINDS="true" scripts/bench-overhead.sh ...     only the /bin/true workload (default: "sim true")
#   BENCH_KEEP=1 scripts/bench-overhead.sh ...           keep the work folder (databases, specs, logs)
#
# For each target it runs a sweep of 1 and one of N experiments of the simulated tpverify (axis seed: 1..N)
# and a sweep of N experiments of the trivial command /bin/true, and prints
#   overhead = (wall(N) - wall(1) - (N-1) x the workload's own time) / (N-1)   (raw: (wall(N) - N x own) / N)
# where the workload's own time is measured by running the same tpverify (or /bin/true)
# directly. Every experiment of a sweep must end `ok`, or the figure is refused.
#
# Over ssh, sshd starts the remote user's login shell for every exec channel, and bash then
# sources ~/.bashrc (it does so for commands run by sshd). ncclsweep opens one such channel per
# connection, for its agent (docs/targets.md "The agent"), so a slow login is paid once per
# sweep, not per experiment. The script logs in as three users to show it: as root, a lean
# account, ncclsweep-bench (shell /bin/sh, created here if missing), for the N_SSH-experiment
# figure; the current user (with its own start-up files) for an N_SSH_RC-experiment figure; and
# ncclsweep-bench-slow (bash, whose ~/.bashrc sleeps 1 s and appends the line sshd gave the
# shell to ~/logins), for an N_SSH_SLOW-experiment figure with the logins each sweep made.
# Not root: only the current user.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
n_local=${2:-1000}
n_ssh=${3:-1000}
n_ssh_rc=${4:-50}
n_ssh_slow=${5:-50}
kinds=${BENCH_KINDS:-sim true}  # workloads to measure: sim (tpverify --backend sim) and/or true (/bin/true)
ncclsweep=$build/cli/ncclsweep
tpverify=$build/engine/tpverify
[ -x "$ncclsweep" ] && [ -x "$tpverify" ] || { echo "bench-overhead: build ncclsweep and tpverify in $build first" >&2; exit 2; }

work=$(mktemp -d)
sshd_dir=$work/sshd
cleanup() {
  bash "$root/scripts/test-sshd.sh" stop "$sshd_dir" >/dev/null 2>&1 || true
  if [ -n "${BENCH_KEEP:-}" ]; then echo "bench-overhead: kept $work" >&2; else rm -rf "$work"; fi
}
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
  ok=$(sqlite3 "$work/$label.db" "SELECT count(*) FROM experiments WHERE status = 'ok'")
  if [ "$ok" != "$n" ]; then
    echo "bench-overhead: $label: only $ok of $n experiments ended ok; not a measurement. Statuses:" >&2
    sqlite3 "$work/$label.db" "SELECT status, count(*), min(diagnosis) FROM experiments GROUP BY status" >&2
    exit 1
  fi
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

# ssh_sweeps LABEL USER N: the sweeps over ssh as USER, remote work folder REMOTE_WORK.
ssh_sweeps() {
  local label=$1 user=$2 n=$3 target kind own
  target=$(printf 'target:\n  url: ssh://%s@127.0.0.1:%s\n  workdir: %s' "$user" "$port" "$REMOTE_WORK/$label")
  for kind in $kinds; do
    own=$own_sim
    [ $kind = true ] && own=$own_true
    run_sweep $label-$kind $kind "$n" "$own" "$target" \
      --known-hosts "$sshd_dir/known_hosts" --identity "$sshd_dir/user_key" --engine "$tpverify"
  done
}

# shell_start USER: mean seconds for sshd's way of starting USER's shell for a command
# (`SHELL -c true` with SSH_CLIENT set and no SHLVL, so bash sources ~/.bashrc as under sshd).
shell_start() {
  local user=$1 shell home
  shell=$(getent passwd "$user" | cut -d: -f7)
  home=$(getent passwd "$user" | cut -d: -f6)
  if [ "$user" = "$(id -un)" ]; then
    own_time env -u SHLVL HOME="$home" SSH_CLIENT="127.0.0.1 1 2" "$shell" -c true
  else
    own_time runuser -u "$user" -- env -u SHLVL HOME="$home" SSH_CLIENT="127.0.0.1 1 2" "$shell" -c true
  fi
}

# logins USER: how many times USER's login shell started so far (its ~/.bashrc counts them).
logins() { local home; home=$(getent passwd "$1" | cut -d: -f6); cat "$home/logins" 2>/dev/null | wc -l; }

# bench_user NAME SHELL: creates NAME (as root) with SHELL, no password but not locked.
bench_user() {
  local name=$1 shell=$2
  getent passwd "$name" >/dev/null || useradd --system --shell "$shell" --home-dir "/var/lib/$name" --create-home "$name"
  usermod --shell "$shell" -p '*' "$name"  # no password, but not locked ('!'): sshd refuses locked accounts
  runuser -u "$name" -- test -x "$tpverify" || {
    echo "bench-overhead: $name cannot run $tpverify (a folder above it is not world-searchable)" >&2; exit 1; }
}

if [ "$n_ssh" -gt 0 ] || [ "$n_ssh_rc" -gt 0 ] || [ "$n_ssh_slow" -gt 0 ]; then
  port=$(bash "$root/scripts/test-sshd.sh" start "$sshd_dir")
  me=$(id -un)
  lean=$me
  REMOTE_WORK=$work/remote
  if [ "$(id -u)" -eq 0 ]; then
    lean=ncclsweep-bench
    # sshd reads the key list as the user logging in; the engine must be reachable as that user.
    chmod 755 "$work" "$sshd_dir"
    chmod 644 "$sshd_dir/authorized_keys"
    bench_user "$lean" /bin/sh
    REMOTE_WORK=/var/lib/$lean/bench-$$
    runuser -u "$lean" -- mkdir -p "$REMOTE_WORK"
    mkdir -p "$work/remote"
  fi
  start=$(now)
  for i in 1 2 3; do ssh -q -o BatchMode=yes -o UserKnownHostsFile="$sshd_dir/known_hosts" -i "$sshd_dir/user_key" \
      -p "$port" "$lean@127.0.0.1" true; done
  echo "a whole 'ssh $lean@127.0.0.1 true' (new connection + login shell) takes $(per "$(seconds "$start" "$(now)")" 3) s"
  if [ "$n_ssh" -gt 0 ]; then
    echo "ssh as $lean: its shell ($(getent passwd "$lean" | cut -d: -f7)) starts a command in $(shell_start "$lean") s"
    ssh_sweeps ssh "$lean" "$n_ssh"
  fi
  if [ "$n_ssh_rc" -gt 0 ] && [ "$lean" != "$me" ]; then
    rc_cost=$(shell_start "$me")
    echo "ssh as $me: its shell starts a command in $rc_cost s (start-up files included), paid once per connection"
    REMOTE_WORK=$work/remote ssh_sweeps ssh-$me "$me" "$n_ssh_rc"
  fi
  if [ "$n_ssh_slow" -gt 0 ] && [ "$lean" != "$me" ]; then
    slow=ncclsweep-bench-slow
    bench_user "$slow" /bin/bash
    printf '%s\n' 'printf "%s\n" "$BASH_EXECUTION_STRING" >> "$HOME/logins"' 'sleep 1' >"/var/lib/$slow/.bashrc"
    chown "$slow:" "/var/lib/$slow/.bashrc"
    runuser -u "$slow" -- mkdir -p "/var/lib/$slow/bench-$$"
    echo "ssh as $slow: its ~/.bashrc sleeps 1 s; its shell starts a command in $(shell_start "$slow") s"
    rm -f "/var/lib/$slow/logins"
    REMOTE_WORK=/var/lib/$slow/bench-$$ ssh_sweeps ssh-slow "$slow" "$n_ssh_slow"
    echo "ssh as $slow: $(logins "$slow") logins in $(( 2 * $(echo $kinds | wc -w) )) sweeps; the lines its shell was given:" \
      "$(sort "/var/lib/$slow/logins" | uniq -c | tr -s ' ' | tr '\n' ';')"
    rm -rf "/var/lib/$slow/bench-$$"
  fi
  [ "$lean" = ncclsweep-bench ] && rm -rf "/var/lib/$lean/bench-$$"
fi
