#!/usr/bin/env bash
# Installs draftgate's build and runtime dependencies from Debian 12 packages. Idempotent, non-interactive;
# run as root. Skips apt entirely when everything is already installed.
set -euo pipefail

packages=(
  cmake g++ make
  libtorch-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev  # tau import --vllm-metrics-url scrapes a live vLLM /metrics endpoint
  libopenblas0-pthread  # without it libtorch's float32 matmul falls back to the ~10x slower reference BLAS
  libxml2-utils  # tests only: xmllint validates the JUnit reports against tests/schema/junit.xsd
  python3-torch  # tests only (ctest -L python: a PyTorch trainer writes step records); never needed by draftgate
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
