#!/usr/bin/env bash
# Installs, builds, and runs the whole test suite through ctest. Extra arguments go to ctest
# (e.g. -L unit, -LE slow).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
# The tokenizer and chat-template oracle tests fail, not skip, when their packages are missing.
export DRAFTGATE_REQUIRE_TOKENIZER_ORACLE=1
export DRAFTGATE_REQUIRE_JINJA_ORACLE=1
bash ci/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
