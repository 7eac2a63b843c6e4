#!/usr/bin/env bash
# Measures the nightly gate's false-alarm rate (docs/ci.md "False alarms, measured"): runs
# experiments/nightly.yaml NIGHTS+1 times on the simulated engine with the same settings and a
# different seed each night, then `diff NIGHT-1 NIGHT --fail-on-regression` for each of the NIGHTS
# consecutive pairs, as a CI job would. Every failing pair is a false alarm: nothing changed.
#
#   scripts/nightly-false-alarms.sh [NOISE] [NIGHTS] [BUILD_DIR] [REPEATS]
#   (defaults: 0.03 100 build, and the spec's repeats)
set -euo pipefail
noise="${1:-0.03}"
nights="${2:-100}"
build="${3:-build}"
repeats=()
[[ -n "${4:-}" ]] && repeats=(--set "repeats=$4")
root="$(cd "$(dirname "$0")/.." && pwd)"
ncclsweep="$build/cli/ncclsweep"
[[ -x "$ncclsweep" ]] || { echo "error: $ncclsweep not found; build it first (ninja -C $build ncclsweep tpverify)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
db="$work/nightly.db"
for ((night = 0; night <= nights; night++)); do
    "$ncclsweep" run "$root/experiments/nightly.yaml" --db "$db" --tag nightly -q \
        --set "noise=$noise" --set "seed=$((1000 + night))" "${repeats[@]}" >/dev/null 2>"$work/run.err" ||
        { echo "error: night $night did not run:" >&2; cat "$work/run.err" >&2; exit 1; }
done
alarms=0
hint=""
for ((night = 1; night <= nights; night++)); do
    set +e
    "$ncclsweep" diff "$night" "$((night + 1))" --db "$db" --fail-on-regression >"$work/diff.txt" 2>&1
    rc=$?
    set -e
    case "$rc" in
        0) ;;
        1) alarms=$((alarms + 1)) ;;
        *) echo "error: diff of sweeps $night and $((night + 1)) exited $rc:" >&2; cat "$work/diff.txt" >&2; exit 1 ;;
    esac
    hint="$(grep '^to catch a 5% slowdown' "$work/diff.txt" || true)"
done
echo "noise=$noise repeats=${4:-spec}: $alarms false alarms in $nights identical nightly pairs"
echo "last diff: $hint"
