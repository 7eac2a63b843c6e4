# Sourced by scripts/device-engine.sh, device-engine-variants.sh and device-sm-share.sh (GPU machine, device
# tool): the output folder, the log, one tpverify run, and the summary table of every run.
#   device_setup LOG     $out (OUT, default ./device-out), $runs (a temporary folder), stdout
#                        and stderr copied to $out/LOG
#   run NAME CMD...      runs CMD (200 s at most), JSON to $runs/NAME.jsonl, stderr to
#                        NAME.err; prints rc, the wall time and the head of stderr
#   summarize            one line per run: p50 (p10, p90) against the read roofline, the parts,
#                        the start event's format/server/capture and --check's findings
# shellcheck shell=bash
device_setup() {
  out=${OUT:-device-out}
  mkdir -p "$out"
  runs=$(mktemp -d)
  exec > >(tee -a "$out/$1") 2>&1
}

run() {
  local name=$1
  shift
  echo "== $name: $*"
  local start
  start=$(date +%s%N)
  timeout 200 "$@" >"$runs/$name.jsonl" 2>"$runs/$name.err"
  local rc=$?
  echo "rc=$rc wall_ms=$((($(date +%s%N) - start) / 1000000))"
  grep -v '^tpverify: measure' "$runs/$name.err" | head -c 1500
}

summarize() {
  tar czf "$out/runs.tar.gz" -C "$runs" .
  echo "== summary"
  local f
  for f in "$runs"/*.jsonl; do
    python3 - "$f" <<'PY'
import json, sys
name = sys.argv[1].rsplit('/', 1)[-1][:-6]
ev = []
for line in open(sys.argv[1]):
    if line.startswith('{'):
        try:
            ev.append(json.loads(line))
        except ValueError:
            pass
st = next((e for e in ev if e.get('event') == 'start'), {})
res = [e for e in ev if e.get('event') == 'result']
if not res:
    print(f"{name:18s} no result")
    sys.exit()
r = res[-1]
p = r.get('parts_us', {})
roof = r.get('read_roofline_us', 0)
print(f"{name:18s} {st.get('expert_format')} {st.get('server')}/{st.get('capture_mode')} "
      f"moe_streams {st.get('moe_streams')} moe_chk {r.get('check_moe_stream_outputs')} "
      f"p50 {r['verify_us_p50']:.0f} (p10 {r['verify_us_p10']:.0f} p90 {r['verify_us_p90']:.0f}) "
      f"base {r['baseline_us']:.0f} roof {roof:.0f} x{r['verify_us_p50'] / roof if roof else 0:.3f} "
      f"read {r.get('read_bytes', 0) / 1e9:.2f}GB @{r.get('copy_gbps', 0):.0f} "
      f"gemm {p.get('gemm', 0):.0f} attn {p.get('attention', 0):.0f} comm {p.get('comm', 0):.0f} "
      f"norm {p.get('norm', 0):.0f} ops {p.get('ops', 0):.0f} draft {p.get('draft', 0):.0f} "
      f"tok/s {r.get('tok_s', 0):.1f}/{r.get('baseline_tok_s', 0):.1f} check {r.get('check_wrong')} "
      f"replays {r.get('check_replays')}/{r.get('check_graph_replays')} gemm_chk {r.get('check_gemm_outputs')} "
      f"err {r.get('check_gemm_max_err')} to_result {r.get('to_result_s', 0):.2f}s")
PY
  done
}
