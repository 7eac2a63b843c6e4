#!/usr/bin/env bash
# CTest test "support: folder dependency rules": the tree follows docs/architecture.md's rules,
# and the checker does catch a violation (a core/ file including results/; a lower core/ subject
# including a higher one; a core/ folder that is not a subject; a namespace that is not its folder's;
# engine/ and results/ subjects out of their layers; a third-party header of a library the folder
# does not link).
set -euo pipefail
source=${1:?source dir}
python3 "$source/scripts/check-includes.py" "$source"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/core" "$work/results"
echo '#include "results/store/store.hpp"' >"$work/core/bad.cpp"
if python3 "$source/scripts/check-includes.py" "$work" >"$work/out" 2>&1; then
  echo "FAIL: the checker accepted core/ including results/"; cat "$work/out"; exit 1
fi
grep -q "core/bad.cpp:1: core/ includes results/" "$work/out" || { echo "FAIL: no file:line"; cat "$work/out"; exit 1; }
rm "$work/core/bad.cpp"
mkdir -p "$work/core/nccl" "$work/core/sweep" "$work/core/misc" "$work/core/search"
echo '#include "core/sweep/sweep.hpp"' >"$work/core/nccl/bad.cpp"
echo '#include "core/sweep/sweep.hpp"' >"$work/core/search/loop.cpp"
echo '#include "core/search/search.hpp"' >"$work/core/sweep/asks.cpp"
echo '#include "core/nccl/nccl.hpp"' >"$work/core/sweep/fine.cpp"
echo '#include "core/result.hpp"' >"$work/core/misc/x.hpp"
printf 'namespace ncclsweep::inline sweep {\n}\n' >"$work/core/sweep/fine.hpp"
printf 'namespace ncclsweep::inline watch {\n}\n' >"$work/core/sweep/wrong_namespace.hpp"
if python3 "$source/scripts/check-includes.py" "$work" >"$work/out" 2>&1; then
  echo "FAIL: the checker accepted core/nccl/ including core/sweep/"; cat "$work/out"; exit 1
fi
grep -q "core/nccl/bad.cpp:1: core/nccl/ includes core/sweep/" "$work/out" || { echo "FAIL: no subject violation"; cat "$work/out"; exit 1; }
grep -q "core/search/loop.cpp:1: core/search/ includes core/sweep/" "$work/out" || { echo "FAIL: search including the loop not caught"; cat "$work/out"; exit 1; }
if grep -q "core/sweep/asks.cpp" "$work/out"; then echo "FAIL: the loop may include the search"; cat "$work/out"; exit 1; fi
grep -q "core/misc/x.hpp: core/misc/ is not a subject" "$work/out" || { echo "FAIL: unknown subject not caught"; cat "$work/out"; exit 1; }
grep -q "core/sweep/wrong_namespace.hpp:1: a file of core/sweep/ declares namespace ncclsweep::inline watch" "$work/out" ||
  { echo "FAIL: a namespace that is not the folder's was not caught"; cat "$work/out"; exit 1; }
if grep -q "core/sweep/fine" "$work/out"; then echo "FAIL: an allowed include was flagged"; cat "$work/out"; exit 1; fi

# Angle-bracket includes of libraries a folder does not link, and the engine's and results' layers.
rm -rf "$work"/*; mkdir -p "$work/core/spec" "$work/engine/sim" "$work/engine/cuda" "$work/results/store" "$work/results/report" "$work/tuner"
printf '#include <vector>\n#include <sqlite3.h>\n' >"$work/core/spec/db.cpp"
echo '#include <libssh/libssh.h>' >"$work/core/ssh.hpp"
echo '#include <nccl.h>' >"$work/engine/sim/nccl_here.cpp"
printf '#include <nccl.h>\n#include <cuda_runtime.h>\n#include "engine/sim/calibration.hpp"\n' >"$work/engine/cuda/fine.cu"
echo '#include "engine/cuda/gemm.cuh"' >"$work/engine/sim/up.cpp"
echo '#include "engine/options.hpp"' >"$work/engine/sim/root_ok.cpp"
echo '#include "results/export/export.hpp"' >"$work/results/store/up.cpp"
echo '#include "results/store/store.hpp"' >"$work/results/report/down_ok.cpp"
echo '#include <fmt/format.h>' >"$work/tuner/fmt.c"
if python3 "$source/scripts/check-includes.py" "$work" >"$work/out" 2>&1; then
  echo "FAIL: the checker accepted third-party headers and layer violations"; cat "$work/out"; exit 1
fi
for want in "core/spec/db.cpp:2: core/ includes <sqlite3.h> (SQLite)" "core/ssh.hpp:1: core/ includes <libssh/libssh.h> (libssh)" \
            "engine/sim/nccl_here.cpp:1: engine/ includes <nccl.h> (NCCL)" "tuner/fmt.c:1: tuner/ includes <fmt/format.h> (fmt)" \
            "engine/sim/up.cpp:1: engine/sim/ includes engine/cuda/" "results/store/up.cpp:1: results/store/ includes results/export/"; do
  grep -qF "$want" "$work/out" || { echo "FAIL: not caught: $want"; cat "$work/out"; exit 1; }
done
if grep -qE "engine/cuda/fine|root_ok|down_ok|<vector>" "$work/out"; then echo "FAIL: an allowed include was flagged"; cat "$work/out"; exit 1; fi
echo "ok: the rules hold and a violation is caught"
