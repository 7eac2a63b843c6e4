#!/usr/bin/env bash
# Checks that every C/C++/CUDA file of the repository is formatted as .clang-format says.
#
#   scripts/check-format.sh [SOURCE_DIR]     exit 0: clean; 1: files differ (listed); 2: no clang-format
#   scripts/check-format.sh --fix            formats them in place instead
#
# The files are the ones git tracks (or, outside a git checkout, every *.c/.h/.cpp/.hpp/.cu/.cuh
# under SOURCE_DIR). scripts/test.sh runs it before building. The tree is formatted with
# clang-format 14 (Debian 12's); another major version may format some lines differently, so
# the check says which version it ran.
set -euo pipefail
fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
source=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$source"
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2
  exit 2
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | grep -v '^tests/fuzz/corpus/')
else
  mapfile -t files < <(find . \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) \
    -not -path './build*' -not -path './tests/fuzz/corpus/*' | sed 's|^\./||' | sort)
fi
if [ "$fix" = 1 ]; then
  clang-format -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
drift=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || drift+=("$f")
done
version=$(clang-format --version | sed 's/.*version \([0-9.]*\).*/\1/')
if [ ${#drift[@]} -gt 0 ]; then
  printf '%s\n' "${drift[@]}"
  echo "check-format: ${#drift[@]} of ${#files[@]} files differ from .clang-format (clang-format $version);" \
       "run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files match .clang-format (clang-format $version)"
