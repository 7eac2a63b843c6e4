#!/usr/bin/env bash
# Installs the Debian packages ncclsweep needs. Idempotent: does nothing when everything is
# already installed.
#
#   scripts/install-deps.sh          what building and running ncclsweep and tpverify need
#                                    (scripts/quickstart.sh)
#   scripts/install-deps.sh --test   that, and what the tests need: Catch2, a real sshd, a
#                                    one-node Slurm with munge, headless Chromium for the
#                                    report, clang-format for the format check, ccache, and
#                                    the fish and tcsh login shells of the ssh tests
#                                    (scripts/test.sh)
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config python3
  libcli11-dev libyaml-cpp-dev libfmt-dev libsqlite3-dev libssh-dev nlohmann-json3-dev libre2-dev
)
if [ "${1:-}" = "--test" ]; then
  packages+=(
    git catch2 ccache sqlite3 clang-format
    openssh-server openssh-client
    chromium slurmctld slurmd slurm-client munge
    fish tcsh
  )
elif [ -n "${1:-}" ]; then
  echo "install-deps: unknown argument '$1' (use --test for the test packages)" >&2
  exit 2
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
