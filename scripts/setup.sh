#!/usr/bin/env bash
# Set up everything rtvbench needs on a fresh Debian/Ubuntu machine, idempotently:
# system packages (compilers, cross compilers, peer tools used by tests), the
# Python environment in .venv, and the probe. Re-running is cheap. Every step
# that takes more than a moment says what it does.
set -euo pipefail
cd "$(dirname "$0")/.."

# Peer tools (rt-tests, stress-ng, sysbench) are measured against; qemu-user
# runs the cross-built probes; qemu-system boots the guests of qemu environments
# and the bare-metal images (qemu-system-misc for riscv64);
# openssh-client is the ssh target (the tests start their own sshd, and run the
# remote wrapper under busybox sh as on a board; the labgrid tests start labgrid's
# coordinator and exporter, which the test extra installs); chromium
# renders reports in the tests and prints `report --format pdf`; poppler-utils'
# pdftotext and pdfinfo read those PDFs back in the tests; postgresql is the
# server the tests start a throwaway cluster of, to store into (the packaged
# cluster is not used); jq picks run ids out of `rtvbench list --json` in the
# CI example of docs/ci.md, which a test runs; groff-base and man-db render the
# manual page the wheel installs, in its tests.
PACKAGES=(
  build-essential python3 python3-venv time
  rt-tests stress-ng sysbench util-linux procps iproute2 openssl hyperfine iperf3
  qemu-user-static gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-riscv64-linux-gnu
  libc6-dev-arm64-cross libc6-dev-armhf-cross libc6-dev-riscv64-cross
  qemu-system-x86 qemu-system-arm qemu-system-misc openssh-client openssh-server busybox
  chromium poppler-utils postgresql jq groff-base man-db
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating the Python environment in .venv"
  python3 -m venv .venv
fi
# Reinstall only when the package metadata changed since the last setup.
if [ ! -f .venv/.rtvbench-installed ] || [ pyproject.toml -nt .venv/.rtvbench-installed ]; then
  echo "setup: installing rtvbench and its dependencies into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e ".[test]"
  # Apache Otava's change points (the `changes` extra) without its declared requirements: see
  # pyproject.toml; its analysis imports only numpy and scipy, which rtvbench already has.
  .venv/bin/pip install -q --no-deps "apache-otava==0.8.0"
  touch .venv/.rtvbench-installed
fi

# Only this machine's probe: `make test` and `make probe-cross` build the other architectures' (a
# minute of compiling that evaluating this machine does not need).
if ! make -q probe 2>/dev/null; then
  echo "setup: building the probe (build/probe/rtvb-probe)"
  make -s probe
fi
echo "setup: ready (probe at build/probe/rtvb-probe, CLI at .venv/bin/rtvbench)"
