#!/usr/bin/env bash
# A throwaway OpenSSH server on 127.0.0.1 for tests (host key checking stays on).
#
#   scripts/test-sshd.sh start DIR [PORT]   generate keys + config in DIR, start sshd, print the port
#   scripts/test-sshd.sh stop DIR           kill that sshd and every sshd below it (SIGKILL:
#                                           connections die as if the server crashed)
#
# DIR gets: host_key(.pub), user_key(.pub) (the client's key), authorized_keys, sshd_config,
# sshd.pid, sshd.log, port, known_hosts (one line for [127.0.0.1]:PORT). Works as root (any
# user may log in with user_key) and as an ordinary user (only that user). Exit 77 when sshd
# is not installed, so callers can skip.
set -euo pipefail

sshd_bin=${SSHD:-/usr/sbin/sshd}

die() { echo "test-sshd: $*" >&2; exit 1; }
# $1 with the extended-regex metacharacters escaped (for pgrep -f).
regex_quote() { printf '%s' "$1" | sed 's/[][\\.*^$+?(){}|]/\\&/g'; }

start() {
  local dir=$1 port=${2:-}
  [ -x "$sshd_bin" ] || { echo "test-sshd: $sshd_bin not found (install openssh-server)" >&2; exit 77; }
  command -v ssh-keygen >/dev/null || { echo "test-sshd: ssh-keygen not found (install openssh-client)" >&2; exit 77; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # sshd_config takes a value up to whitespace, reads quotes as quoting and expands '%' tokens
  # in AuthorizedKeysFile: DIR goes in unquoted, so such a DIR is refused.
  case "$dir" in
    *[[:space:]\"\'%]*) die "DIR $dir holds whitespace, a quote or '%', which sshd_config cannot carry; use another directory (TMPDIR)" ;;
  esac
  [ -f "$dir/host_key" ] || ssh-keygen -q -t ed25519 -N '' -C test-host -f "$dir/host_key"
  [ -f "$dir/user_key" ] || ssh-keygen -q -t ed25519 -N '' -C test-user -f "$dir/user_key"
  cp "$dir/user_key.pub" "$dir/authorized_keys"
  chmod 600 "$dir/host_key" "$dir/user_key" "$dir/authorized_keys"
  if [ "$(id -u)" -eq 0 ]; then
    mkdir -p /run/sshd && chmod 755 /run/sshd
  fi
  local tries=0
  while :; do
    local try_port=${port:-$((20000 + RANDOM % 40000))}
    cat >"$dir/sshd_config" <<CONF
Port $try_port
ListenAddress 127.0.0.1
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
Subsystem sftp internal-sftp
LogLevel VERBOSE
MaxSessions 200
MaxStartups 100
CONF
    rm -f "$dir/sshd.pid"
    # Without -D, sshd binds before it detaches: a busy port makes it exit non-zero here.
    if "$sshd_bin" -f "$dir/sshd_config" -E "$dir/sshd.log"; then
      # The daemon sshd left behind writes the pid file: wait for the file or for the daemon's end,
      # with no deadline (2.5 s was once too short on a loaded 2-core machine under ASan tests).
      while [ ! -s "$dir/sshd.pid" ]; do
        if ! pgrep -f -- "-f $(regex_quote "$dir")/sshd_config" >/dev/null; then
          [ -s "$dir/sshd.pid" ] || die "sshd started, but its daemon ended without a pid file; see $dir/sshd.log"
        fi
        sleep 0.05
      done
      echo "$try_port" >"$dir/port"
      echo "[127.0.0.1]:$try_port $(cut -d' ' -f1,2 "$dir/host_key.pub")" >"$dir/known_hosts"
      echo "$try_port"
      return 0
    fi
    tries=$((tries + 1))
    if [ -n "$port" ] || [ $tries -ge 20 ]; then
      die "sshd did not start (port ${try_port}); see $dir/sshd.log"
    fi
  done
}

# Prints the pids of `root` and all its descendants whose command is sshd.
sshd_tree() {
  local root=$1
  ps -eo pid=,ppid=,comm= | awk -v root="$root" '
    { pid[NR]=$1; ppid[NR]=$2; comm[NR]=$3 }
    END {
      keep[root]=1; changed=1
      while (changed) { changed=0
        for (i in pid) if ((ppid[i] in keep) && !(pid[i] in keep)) { keep[pid[i]]=1; changed=1 } }
      for (i in pid) if ((pid[i] in keep) && comm[i] ~ /^sshd/) print pid[i]
    }'
}

stop() {
  local dir=$1
  [ -s "$dir/sshd.pid" ] || return 0
  local master
  master=$(cat "$dir/sshd.pid")
  # Freeze the listener first: a connection it accepted between the snapshot below and its kill
  # would fork a session sshd the snapshot does not list, which would outlive the "crash" (a
  # client that reconnects at once, on a loaded machine, did exactly that).
  kill -STOP "$master" 2>/dev/null || true
  local pids
  pids=$(sshd_tree "$master")
  # shellcheck disable=SC2086
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$master" 2>/dev/null || break; sleep 0.02; done
  rm -f "$dir/sshd.pid"
}

case "${1:-}" in
  start) [ $# -ge 2 ] || die "usage: $0 start DIR [PORT]"; start "$2" "${3:-}" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 start DIR [PORT] | stop DIR" ;;
esac
