#!/usr/bin/env bash
# Measures the nightly gate (docs/ci.md "False alarms, measured"): runs experiments/nightly.yaml
# night after night on the simulated engine with the same settings and a different seed each
# night, tagged `nightly` as the recipe does (so `repeats: auto` learns each night's repeats from
# the night before), and diffs each night with the one before it with the recipe's
# `diff --fail-on-regression --alpha ALPHA`, as a CI job would.
#
#   scripts/nightly-false-alarms.sh [NOISE] [PAIRS] [BUILD_DIR] [REPEATS]
#   (defaults: 0.03 100 build, and the spec's repeats; REPEATS may be a number or auto)
#
# Environment:
#   ALPHA=0.01     the gate's --alpha (the recipe's)
#   CHAINS=1       independent chains of nights (each its own database), run side by side; the
#                  pairs are shared out among them, so fewer pairs share a night
#   SLOWDOWN=0.05  measure detection instead of false alarms: every pair is a normal night, then a
#                  night on which experiment `tokens=16` (one point) is SLOWDOWN slower (tpverify
#                  through a wrapper that lowers its --accept-len by that fraction: tok/s is
#                  accept_len / cycle time). A pair counts as detected when the gate fails and names
#                  that experiment; any other experiment it names is a false alarm.
#   PROGRESS=FILE  append one line per diffed pair as it is done (a run stopped early still
#                  says how many pairs it measured)
# Every failing pair of identical nights is a false alarm: nothing changed.
set -euo pipefail
noise="${1:-0.03}"
pairs="${2:-100}"
build="${3:-build}"
repeats=()
[[ -n "${4:-}" ]] && repeats=(--set "repeats=$4")
alpha="${ALPHA:-0.01}"
chains="${CHAINS:-1}"
slowdown="${SLOWDOWN:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
ncclsweep="$(cd "$build" && pwd)/cli/ncclsweep"
tpverify="$(cd "$build" && pwd)/engine/tpverify"
[[ -x "$ncclsweep" && -x "$tpverify" ]] ||
    { echo "error: $build/cli/ncclsweep or $build/engine/tpverify not found; build them first (ninja -C $build ncclsweep tpverify)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

slow_engine=()
if [[ -n "$slowdown" ]]; then
    accept=$(awk -v s="$slowdown" 'BEGIN { printf "%.6f", 3.2 * (1 - s) }')  # tpverify's default 3.2
    cat >"$work/slow-tpverify" <<EOF
#!/usr/bin/env bash
# tpverify, $slowdown slower at the one point with --tokens 16 (its --accept-len lowered).
prev=""
for a in "\$@"; do
    case "\$a" in --describe|--validate|--help|--accept-len) exec "$tpverify" "\$@" ;; esac
    if [[ "\$prev" == --tokens && "\$a" == 16 ]]; then exec "$tpverify" "\$@" --accept-len $accept; fi
    prev="\$a"
done
exec "$tpverify" "\$@"
EOF
    chmod +x "$work/slow-tpverify"
    slow_engine=(--engine "$work/slow-tpverify")
fi

# One chain: each night, then its diff with the night before (as CI does); writes "pairs alarms
# detected others" to $dir/counts, and one line per pair to $PROGRESS when it is set.
run_chain() {
    local chain="$1" count="$2" dir="$work/chain$1"
    mkdir -p "$dir"
    local db="$dir/nightly.db" nights night engine
    if [[ -n "$slowdown" ]]; then nights=$((2 * count)); else nights=$((count + 1)); fi
    local alarms=0 detected=0 others=0 done_pairs=0 base new rc named ran=? before
    for ((night = 0; night < nights; night++)); do
        engine=(--engine "$tpverify")
        [[ -n "$slowdown" ]] && ((night % 2 == 1)) && engine=("${slow_engine[@]}")
        "$ncclsweep" run "$root/experiments/nightly.yaml" --db "$db" --tag nightly -q "${engine[@]}" \
            --set "noise=$noise" --set "seed=$((1000 + 1000 * chain + night))" "${repeats[@]}" \
            >/dev/null 2>"$dir/run.err" ||
            { echo "error: chain $chain night $night did not run:" >&2; cat "$dir/run.err" >&2; return 1; }
        before=$ran
        ran=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select repeats from sweeps order by id desc limit 1").fetchone()[0])' "$db" 2>/dev/null || echo "?")
        ((night == 0)) && continue
        base=$night new=$((night + 1))  # sweep ids
        [[ -n "$slowdown" ]] && ((night % 2 == 0)) && continue  # pairs (1,2), (3,4), ...: normal, then slow
        set +e
        "$ncclsweep" diff "$base" "$new" --db "$db" --fail-on-regression --alpha "$alpha" >"$dir/diff.txt" 2>&1
        rc=$?
        set -e
        named=0
        case "$rc" in
            0) ;;
            1)
                if [[ -n "$slowdown" ]]; then
                    grep -q '^  regressed: .*tokens=16' "$dir/diff.txt" && { detected=$((detected + 1)); named=1; }
                    others=$((others + $(grep '^  regressed: ' "$dir/diff.txt" | grep -vc 'tokens=16' || true)))
                else
                    alarms=$((alarms + 1))
                fi
                ;;
            *) echo "error: chain $chain: diff of sweeps $base and $new exited $rc:" >&2; cat "$dir/diff.txt" >&2; return 1 ;;
        esac
        done_pairs=$((done_pairs + 1))
        [[ -n "${PROGRESS:-}" ]] &&
            echo "chain $chain pair $done_pairs sweeps $base $new repeats $before $ran gate $rc slow-named $named" >>"$PROGRESS"
    done
    "$ncclsweep" results list --db "$db" --json >"$dir/list.json"
    grep '^to catch a 5% slowdown' "$dir/diff.txt" >"$dir/hint.txt" || true
    echo "$count $alarms $detected $others" >"$dir/counts"
}

pids=()
for ((chain = 0; chain < chains; chain++)); do
    count=$((pairs / chains + (chain < pairs % chains ? 1 : 0)))
    run_chain "$chain" "$count" &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
((failed == 0)) || exit 1

read -r total alarms detected others < <(cat "$work"/chain*/counts | awk '{p+=$1; a+=$2; d+=$3; o+=$4} END {print p, a, d, o}')
# The repeats each night ran with (the first night of a chain: repeats: auto's default).
ran=$(cat "$work"/chain*/list.json | python3 -c '
import json, sys, collections
text = sys.stdin.read()
counts = collections.Counter()
decoder = json.JSONDecoder()
i = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    doc, i = decoder.raw_decode(text, i)
    for s in doc["sweeps"]: counts[s["repeats"]] += 1
print(", ".join(f"{n} nights x {r}" for r, n in sorted(counts.items())))' 2>/dev/null || echo "?")
if [[ -n "$slowdown" ]]; then
    echo "noise=$noise slowdown=$slowdown alpha=$alpha repeats=${4:-spec}: detected $detected of $total pairs; $others other experiments named; chains $chains; repeats run: $ran"
else
    echo "noise=$noise alpha=$alpha repeats=${4:-spec}: $alarms false alarms in $total identical nightly pairs; chains $chains; repeats run: $ran"
fi
echo "last diff of chain 0: $(cat "$work/chain0/hint.txt")"
