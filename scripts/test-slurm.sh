#!/usr/bin/env bash
# A throwaway one-node Slurm cluster on this machine, for tests (like scripts/test-sshd.sh).
#
#   scripts/test-slurm.sh start DIR   munge key + slurm.conf in DIR, start munged, slurmctld and
#                                     slurmd, wait until partition `debug` has an idle node,
#                                     print the path of slurm.conf (export it as SLURM_CONF)
#   scripts/test-slurm.sh start DIR --private PATH
#                                     the same, but slurmd (and so every task) runs in a mount
#                                     namespace of its own where PATH is an empty tmpfs: a compute
#                                     node that does not share PATH with this "login node" (root
#                                     only; exit 78 where mount namespaces are not allowed)
#   scripts/test-slurm.sh stop DIR    kill those daemons (SIGKILL) and every job step below them
#
# Everything lives in DIR: munge.key, munge.socket, slurm.conf, state/, spool/, *.log, *.pid.
# Ports are picked free at random; nothing in /etc is read or written, so it runs next to a real
# Slurm and next to other instances of itself. Root runs the daemons as root (SlurmUser=root);
# an ordinary user runs them as that user (slurmd then runs only that user's jobs). No
# accounting daemon: `sacct` has nothing, state comes from squeue and `scontrol show job`.
#
# Exit 77 when Slurm or munge is not installed, or when a daemon does not start for an ordinary
# user (slurmd may refuse one), so callers can skip with requirement "slurm"
# (scripts/install-deps.sh --test installs slurmctld slurmd slurm-client munge); exit 78 when --private
# cannot have its mount namespace (not root, or namespaces not allowed here: requirement
# "mount"). Anything else is a failure (exit 1): as root, a daemon that does not start, and for
# anyone, a node that does not become idle within TEST_SLURM_IDLE_WAIT seconds (default 60),
# is a broken setup, not a missing one. The daemons are found on PATH, then in /usr/sbin.
set -euo pipefail

die() { echo "test-slurm: $*" >&2; exit 1; }
skip() { echo "test-slurm: $*" >&2; exit 77; }
skip_mount() { echo "test-slurm: $*" >&2; exit 78; }
# A daemon that did not start: for root a failure; for an ordinary user, whom slurmd may refuse, a skip.
not_started() { if [ "$(id -u)" = 0 ]; then die "$*"; else skip "$* (as an ordinary user)"; fi; }
# A daemon or tool: the first on PATH, else /usr/sbin's.
tool() { command -v "$1" 2>/dev/null || echo "/usr/sbin/$1"; }

# Two free ports for slurmctld and slurmd, both held while the kernel picks them, so they differ
# (two separate picks can return the same port).
free_ports() {
  python3 - <<'PY'
import socket
a = socket.socket(); a.bind(("127.0.0.1", 0))
b = socket.socket(); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1]); a.close(); b.close()
PY
}

start() {
  local dir=$1 private=${2:-}
  for name in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
    [ -x "$(tool "$name")" ] || skip "$name not found (install munge slurmctld slurmd slurm-client)"
  done
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  mkdir -p "$dir/state" "$dir/spool"
  local user node cpus memory ctl_port d_port
  user=$(id -un)
  node=$(hostname -s)
  cpus=$(nproc)
  memory=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
  read -r ctl_port d_port <<<"$(free_ports)"
  [ -f "$dir/munge.key" ] || head -c 1024 /dev/urandom >"$dir/munge.key"
  chmod 600 "$dir/munge.key"
  "$(tool munged)" --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" ||
    not_started "munged did not start; see $dir/munged.log"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=ncclsweep-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
MinJobAge=600
KillWait=2
InactiveLimit=0
OverTimeLimit=0
SlurmdTimeout=30
MessageTimeout=10
PrologFlags=NoHold
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
  export SLURM_CONF=$dir/slurm.conf
  "$(tool slurmctld)" -i -f "$dir/slurm.conf" >"$dir/slurmctld.out" 2>&1 ||
    not_started "slurmctld did not start; see $dir/slurmctld.log"
  if [ -n "$private" ]; then
    [ "$(id -u)" = 0 ] || skip_mount "--private needs root (a mount namespace with a tmpfs)"
    unshare --mount --propagation private true 2>/dev/null ||
      skip_mount "--private needs a mount namespace, which this machine does not allow"
    mkdir -p "$private"
    # slurmd daemonizes inside the namespace; its tasks inherit it.
    unshare --mount --propagation private /bin/sh -c 'mount -t tmpfs ncclsweep-private "$1" && shift && exec "$@"' \
      sh "$private" "$(tool slurmd)" -f "$dir/slurm.conf" -N "$node" >"$dir/slurmd.out" 2>&1 ||
      not_started "slurmd did not start in a mount namespace with $private private; see $dir/slurmd.out"
  else
    "$(tool slurmd)" -f "$dir/slurm.conf" -N "$node" >"$dir/slurmd.out" 2>&1 ||
      not_started "slurmd did not start; see $dir/slurmd.log"
  fi
  # Polls the node's state (a loaded machine only makes this take longer); a node that never
  # becomes idle is a failure, not a skip.
  local wait=${TEST_SLURM_IDLE_WAIT:-60}
  for _ in $(seq $((wait * 10))); do
    if [ "$(sinfo -h -p debug -o %t 2>/dev/null | head -1)" = idle ]; then
      echo "$dir/slurm.conf"
      return 0
    fi
    sleep 0.1
  done
  sinfo >&2 || true
  stop "$dir"
  die "the node of partition debug did not become idle within $wait s; see $dir/slurmctld.log and $dir/slurmd.log"
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  # slurmstepd processes of running jobs go first, so no job outlives its cluster.
  if [ -f "$dir/slurm.conf" ]; then
    SLURM_CONF=$dir/slurm.conf scancel --quiet --full --signal=KILL --user="$(id -un)" 2>/dev/null || true
  fi
  for name in slurmd slurmctld munged; do
    if [ -s "$dir/$name.pid" ]; then
      local pid
      pid=$(cat "$dir/$name.pid")
      # Only a process whose command line names this DIR (a stale pid may have been reused).
      if grep -q -- "$dir" "/proc/$pid/cmdline" 2>/dev/null; then
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$dir/$name.pid"
    fi
  done
}

case "${1:-}" in
  start)
    if [ $# -eq 4 ] && [ "$3" = --private ]; then start "$2" "$4"
    else [ $# -eq 2 ] || die "usage: $0 start DIR [--private PATH]"; start "$2"; fi ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 start DIR [--private PATH] | stop DIR" ;;
esac
