#!/usr/bin/env bash
# CTest test "support: the test sshd is waited for, not timed": scripts/test-sshd.sh start with
# stand-ins for sshd (written here by hand): one whose daemon writes its pid file 3 s after sshd
# returned (past the 2.5 s the script once allowed: ASan tests on a loaded 2-core machine took
# longer, and the flake failed a CI run) must start (exit 0, the port printed); one that leaves
# no daemon must fail at once with a message naming the log (exit 1, no hang); a missing sshd is a
# skip (77). Usage: sshd_script_waits.sh SOURCE_DIR
set -uo pipefail
source=${1:?usage: sshd_script_waits.sh SOURCE_DIR}
work=$(mktemp -d)
cleanup() {  # the stand-in daemon's group (it leads one), whether or not it wrote its pid file yet
  local pid
  for pid in $(pgrep -f -- "-f $work/slow/sshd_config"); do kill -- "-$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# sshd -f CONF -E LOG as the real one is called: returns 0 at once; its "daemon" (a shell whose
# command line carries -f CONF, as the real daemon's does) writes the pid file DELAY s later.
cat >"$work/slow-sshd" <<'STUB'
#!/usr/bin/env bash
conf=$2
pidfile=$(sed -n 's/^PidFile //p' "$conf")
setsid bash -c 'sleep 3; echo $$ >"$0"; sleep 60; :' "$pidfile" -f "$conf" </dev/null >/dev/null 2>&1 &
exit 0
STUB
chmod +x "$work/slow-sshd"

rc=0
out=$(SSHD="$work/slow-sshd" "$source/scripts/test-sshd.sh" start "$work/slow" 2>&1) || rc=$?
[ "$rc" = 0 ] || fail "a daemon that writes its pid file after 3 s: test-sshd.sh exited $rc: $out"
[ "$out" = "$(cat "$work/slow/port")" ] || fail "a daemon that writes its pid file after 3 s: printed '$out', not its port"

rc=0
out=$(SSHD=/bin/true "$source/scripts/test-sshd.sh" start "$work/none" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "no daemon: test-sshd.sh exited $rc, not 1: $out"
grep -q "ended without a pid file; see $work/none/sshd.log" <<<"$out" || fail "no daemon: the message does not say so: $out"

rc=0
SSHD=/nonexistent "$source/scripts/test-sshd.sh" start "$work/missing" >/dev/null 2>&1 || rc=$?
[ "$rc" = 77 ] || fail "no sshd installed: test-sshd.sh exited $rc, not 77 (a skip)"
echo "sshd_script_waits: ok"
