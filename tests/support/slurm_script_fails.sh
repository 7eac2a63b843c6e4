#!/usr/bin/env bash
# CTest test "support: a Slurm cluster that does not come up fails": scripts/test-slurm.sh run
# against stand-in daemons and client commands (written here by hand, first on PATH) must exit 1
# — a failure — when, as root, a daemon does not start, and for anyone when the node does not
# become idle; 77 (a skip) only where an ordinary user's daemon does not start; 0 with a node
# that becomes idle. Usage: slurm_script_fails.sh SOURCE_DIR
set -uo pipefail
source=${1:?usage: slurm_script_fails.sh SOURCE_DIR}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

stubs() {  # stubs DIR SLURMCTLD_STATUS NODE_STATE UID
  local dir=$1
  mkdir -p "$dir"
  for name in munged slurmd sbatch squeue scontrol scancel; do printf '#!/bin/sh\nexit 0\n' >"$dir/$name"; done
  printf '#!/bin/sh\nexit %s\n' "$2" >"$dir/slurmctld"
  printf '#!/bin/sh\necho %s\n' "$3" >"$dir/sinfo"
  printf '#!/bin/sh\ncase "$1" in -u) echo %s ;; -un) echo tester ;; *) exec /usr/bin/id "$@" ;; esac\n' "$4" >"$dir/id"
  chmod +x "$dir"/*
}
run() {  # run EXPECTED_STATUS NAME STUB_DIR
  local rc=0
  PATH="$3:$PATH" TEST_SLURM_IDLE_WAIT=1 "$source/scripts/test-slurm.sh" start "$work/cluster-$2" \
    >"$work/out" 2>&1 || rc=$?
  [ "$rc" = "$1" ] || { cat "$work/out"; fail "$2: test-slurm.sh exited $rc, not $1"; }
}
stubs "$work/up" 0 idle 0
run 0 "a node that becomes idle" "$work/up"
stubs "$work/down" 0 down 0
run 1 "a node that never becomes idle" "$work/down"
grep -q "did not become idle within 1 s" "$work/out" || { cat "$work/out"; fail "no reason given"; }
stubs "$work/root" 1 idle 0
run 1 "slurmctld failing as root" "$work/root"
grep -q "slurmctld did not start" "$work/out" || { cat "$work/out"; fail "no reason given"; }
stubs "$work/user" 1 idle 1000
run 77 "slurmctld failing as an ordinary user" "$work/user"
stubs "$work/user-down" 0 down 1000
run 1 "a node that never becomes idle for an ordinary user" "$work/user-down"
echo "ok: daemons that do not start (as root) or a node that never becomes idle fail; only an ordinary user's start skips"
