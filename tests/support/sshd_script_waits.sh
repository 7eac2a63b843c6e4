#!/usr/bin/env bash
# CTest test "support: the test sshd is waited for, not timed": scripts/test-sshd.sh start with
# stand-ins for sshd and pgrep (written here by hand). The daemon the stand-in sshd leaves behind
# writes no pid file itself; the stand-in pgrep (first on PATH, so the script's own poll calls it)
# writes it on its 60th call, past the 50 polls (2.5 s) the script once allowed before giving up
# (ASan tests on a loaded 2-core machine took longer, and the flake failed a CI run): the script
# must wait for it and start (exit 0, the port printed). A stand-in that leaves no daemon must
# fail at once with a message naming the log (exit 1, no hang); a missing sshd is a skip (77).
# Nothing here sleeps or reads a clock. Usage: sshd_script_waits.sh SOURCE_DIR
set -uo pipefail
source=${1:?usage: sshd_script_waits.sh SOURCE_DIR}
real_pgrep=$(command -v pgrep) || { echo "FAIL: pgrep not found (procps)"; exit 1; }
work=$(mktemp -d)
cleanup() {  # the stand-in daemon's group (it leads one), whether or not its pid file was written
  [ -s "$work/daemon.pid" ] && kill -- "-$(cat "$work/daemon.pid")" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# sshd -f CONF -E LOG as the real one is called: returns 0 at once, leaving a "daemon" (a shell
# whose command line carries -f CONF, as the real daemon's does) blocked on a FIFO nobody writes.
mkfifo "$work/never"
cat >"$work/slow-sshd" <<STUB
#!/usr/bin/env bash
setsid bash -c 'read -r _ <"\$0"; :' "$work/never" -f "\$2" </dev/null >/dev/null 2>&1 &
echo \$! >"$work/daemon.pid"
exit 0
STUB
mkdir "$work/bin"
cat >"$work/bin/pgrep" <<STUB
#!/usr/bin/env bash
n=\$(( \$(cat "$work/pgrep.calls" 2>/dev/null || echo 0) + 1 ))
echo "\$n" >"$work/pgrep.calls"
[ "\$n" -lt 60 ] || cp "$work/daemon.pid" "$work/slow/sshd.pid"
exec "$real_pgrep" "\$@"
STUB
chmod +x "$work/slow-sshd" "$work/bin/pgrep"

rc=0
out=$(PATH="$work/bin:$PATH" SSHD="$work/slow-sshd" "$source/scripts/test-sshd.sh" start "$work/slow" 2>&1) || rc=$?
[ "$rc" = 0 ] || fail "a daemon whose pid file comes on the 60th poll: test-sshd.sh exited $rc: $out"
[ "$out" = "$(cat "$work/slow/port")" ] || fail "a daemon whose pid file comes on the 60th poll: printed '$out', not its port"
[ "$(cat "$work/pgrep.calls")" = 60 ] || fail "the script polled $(cat "$work/pgrep.calls") times, not until the pid file came (60)"

rc=0
out=$(SSHD=/bin/true "$source/scripts/test-sshd.sh" start "$work/none" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "no daemon: test-sshd.sh exited $rc, not 1: $out"
grep -q "ended without a pid file; see $work/none/sshd.log" <<<"$out" || fail "no daemon: the message does not say so: $out"

rc=0
SSHD=/nonexistent "$source/scripts/test-sshd.sh" start "$work/missing" >/dev/null 2>&1 || rc=$?
[ "$rc" = 77 ] || fail "no sshd installed: test-sshd.sh exited $rc, not 77 (a skip)"
echo "sshd_script_waits: ok"
