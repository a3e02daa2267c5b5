#!/usr/bin/env bash
# Installs, builds, and runs the whole test suite through ctest. Extra arguments go to ctest
# (e.g. -L unit, -LE slow).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
# The tokenizer oracle test fails, not skips, when its npm packages are missing.
export DRAFTGATE_REQUIRE_TOKENIZER_ORACLE=1
bash ci/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
