#!/usr/bin/env bash
# Installs the Debian packages ncclsweep needs to build and test. Idempotent: does nothing
# when everything is already installed.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config git python3
  libcli11-dev libyaml-cpp-dev libfmt-dev libsqlite3-dev libssh-dev catch2
  nlohmann-json3-dev libre2-dev ccache openssh-server openssh-client sqlite3 clang-format
  chromium slurmctld slurmd slurm-client munge
  fish tcsh  # login shells of the test users of tests/e2e/test_run_ssh_login.cpp
)
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
