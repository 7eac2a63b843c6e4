#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) into ./build-fuzz
# (or $BUILD_DIR), runs each for FUZZ_SECONDS (default 60) starting from tests/fuzz/corpus/<target>,
# and merges what is new into that corpus (minimised with -merge=1, so it stays small).
# A crash stops the script: the reproducer is left in build-fuzz/artifacts/<target>/.
#   scripts/fuzz.sh                       # all targets, 60 s each
#   FUZZ_SECONDS=300 scripts/fuzz.sh fuzz_watcher
# Targets: fuzz_spec fuzz_watcher fuzz_render fuzz_nccl. See docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build_dir=${BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
jobs=${JOBS:-$(nproc)}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_spec fuzz_watcher fuzz_render fuzz_nccl)
fi

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; installing clang (Debian: libFuzzer comes with it)" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd=sudo
  $sudo_cmd apt-get update
  $sudo_cmd apt-get install -y clang
fi

CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNCCLSWEEP_FUZZ=ON -DNCCLSWEEP_SANITIZE=ON -DNCCLSWEEP_CUDA=OFF >/dev/null
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
for target in "${targets[@]}"; do
  corpus="$root/tests/fuzz/corpus/$target"
  work="$root/$build_dir/corpus/$target"
  artifacts="$root/$build_dir/artifacts/$target/"
  mkdir -p "$corpus" "$work" "$artifacts"
  dict=()
  [ -f "$root/tests/fuzz/$target.dict" ] && dict=(-dict="$root/tests/fuzz/$target.dict")
  echo "== $target: ${seconds} s" >&2
  # New inputs go to the scratch corpus; the kept corpus is only read here.
  "$build_dir/tests/fuzz/$target" "$work" "$corpus" "${dict[@]}" -max_total_time="$seconds" \
    -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" \
    2>&1 | tee "$root/$build_dir/$target.log" | grep -E '^(#[0-9]+.*(DONE|pulse)|stat::|==|SUMMARY|INFO: Seed)' || true
  if grep -qE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error:|invariant broken' "$root/$build_dir/$target.log"; then
    echo "fuzz.sh: $target found a failure; see $build_dir/$target.log and the input in $artifacts" >&2
    exit 1
  fi
  # Keep only small inputs (KEEP_MAX_BYTES, default 4096) that add coverage to the kept corpus,
  # so the corpus in git stays well under 2 MB; the scratch corpus keeps everything.
  keep="$root/$build_dir/keep/$target"
  rm -rf "$keep" && mkdir -p "$keep"
  find "$work" -type f -size -"${KEEP_MAX_BYTES:-4096}"c -exec cp {} "$keep/" \;
  "$build_dir/tests/fuzz/$target" -merge=1 "$corpus" "$keep" "${dict[@]}" >/dev/null 2>&1
done
echo "kept corpus: $(du -s --apparent-size --block-size=1 "$root/tests/fuzz/corpus" | cut -f1) bytes" >&2
