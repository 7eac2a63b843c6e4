#!/usr/bin/env bash
# CTest test "support: the format check catches drift": scripts/check-format.sh passes a
# formatted copy of two of the repository's files and fails, naming the file, once one of them
# drifts; --fix mends it.
set -euo pipefail
source=${1:?source dir}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp "$source/.clang-format" "$work/"
mkdir -p "$work/core"
cp "$source/core/text.cpp" "$source/core/text.hpp" "$work/core/"
bash "$source/scripts/check-format.sh" "$work" >"$work/out" 2>&1 || { echo "FAIL: the repository's own files drift"; cat "$work/out"; exit 1; }
sed -i 's/^\(std::string shell_quote(const std::string& word) {\)$/\1    /; s/^    std::string out = "'"'"'";$/  std::string out   =   "'"'"'";/' "$work/core/text.cpp"
if bash "$source/scripts/check-format.sh" "$work" >"$work/out" 2>&1; then
  echo "FAIL: a drifted file passed the check"; cat "$work/out"; exit 1
fi
grep -qx "core/text.cpp" "$work/out" || { echo "FAIL: the drifted file is not named"; cat "$work/out"; exit 1; }
grep -q "core/text.hpp" "$work/out" && { echo "FAIL: a clean file was named"; cat "$work/out"; exit 1; }
bash "$source/scripts/check-format.sh" --fix "$work" >/dev/null
bash "$source/scripts/check-format.sh" "$work" >"$work/out" 2>&1 || { echo "FAIL: --fix left drift"; cat "$work/out"; exit 1; }
echo "ok: drift is caught and named, --fix mends it"
