#!/usr/bin/env bash
# Runs the whole CTest suite RUNS times in a row with a CPU hog beside it, to show that no test
# depends on wall-clock timing (docs/reliability.md "The whole suite under a CPU hog"). The hog
# is one busy loop per core at the suite's own priority, so the tests get about half the CPU the
# machine has. Every run's result goes to one line of soak.log in the build folder; a failed
# run keeps its output (soak-run-N.log) and the loop goes on, so one flake does not hide
# another. Exits 1 if any run failed.
#
#   scripts/soak.sh [RUNS] [BUILD_DIR] [CTEST_JOBS] [CTEST_ARGS...]  (defaults: 20 build 3)
#   scripts/soak.sh 5 build 3 -R 'ssh faults'          # only some tests
#   HOGS=0 scripts/soak.sh 5                            # without the hog
set -uo pipefail
runs=${1:-20}
build_dir=${2:-build}
jobs=${3:-3}
shift $(($# < 3 ? $# : 3))
hogs=${HOGS:-$(nproc)}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
[[ -f "$build_dir/CTestTestfile.cmake" ]] ||
  { echo "soak.sh: $build_dir has no test suite; build it first (scripts/build.sh)" >&2; exit 2; }
cd "$build_dir" || exit 2
hog_pids=()
stop_hogs() { [[ ${#hog_pids[@]} -gt 0 ]] && kill "${hog_pids[@]}" 2>/dev/null; hog_pids=(); }
trap stop_hogs EXIT
for ((h = 0; h < hogs; h++)); do
  (while :; do :; done) &
  hog_pids+=($!)
done
log=soak.log
echo "soak: $(date -u +%FT%TZ) commit $(git -C .. rev-parse --short HEAD 2>/dev/null || echo '?')," \
  "$runs runs, ctest -j$jobs, $hogs busy loops, $(nproc) cores" | tee -a "$log"
failed=0
for ((i = 1; i <= runs; i++)); do
  start=$(date +%s)
  ctest -j "$jobs" --timeout 900 "$@" >"soak-run-$i.log" 2>&1
  rc=$?
  summary=$(grep -E '^[0-9]+% tests passed' "soak-run-$i.log" || echo 'no summary')
  skipped=$(grep -c '\*\*\*Skipped\| Not Run' "soak-run-$i.log")
  line="run $i: rc=$rc, $summary, $skipped skipped, $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [[ $rc -ne 0 ]]; then
    failed=$((failed + 1))
    line+=", failed: $(grep -E '^\s+[0-9]+ - ' "soak-run-$i.log" | sed -E 's/^\s+[0-9]+ - //' | paste -sd ';' -)"
  else
    rm -f "soak-run-$i.log"
  fi
  echo "$line" | tee -a "$log"
done
echo "soak: $failed of $runs runs failed" | tee -a "$log"
[[ $failed -eq 0 ]]
