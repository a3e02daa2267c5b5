#!/usr/bin/env bash
# Configures and builds draftgate (Release) into ./build. Idempotent: an existing build is reused.
# DRAFTGATE_WERROR=ON (as .ci/run sets it) turns warnings in draftgate's own code into errors.
# The configure output is kept in build/configure.log and printed.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDRAFTGATE_WERROR="${DRAFTGATE_WERROR:-OFF}" \
  2>&1 | tee build/configure.log
cmake --build build -j "$(nproc)"
