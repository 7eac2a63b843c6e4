#!/usr/bin/env bash
# CTest test "support: the repository stands on its own": no source, script or doc refers to a
# document outside the repository (the team's private notes). docs/ holds what the code relies
# on, with upstream sources cited.
set -euo pipefail
source=${1:?source dir}
pattern='NCCL-FACTS|DESIGN\.md|\.\./shared/|/work/shared'
hits=$(grep -rnE "$pattern" "$source" --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.c' \
         --include='*.cu' --include='*.cuh' --include='*.md' --include='*.sh' --include='*.py' --include='*.yaml' \
         --include='*.txt' --include='CMakeLists.txt' \
         --exclude-dir='build*' --exclude-dir=.git --exclude-dir=.device --exclude-dir=third_party \
         | grep -v 'tests/support/stands_alone.sh' || true)
if [ -n "$hits" ]; then
  echo "FAIL: references to documents outside the repository (write the facts into docs/ instead):"
  echo "$hits"
  exit 1
fi
echo "ok: no reference to a document outside the repository"
