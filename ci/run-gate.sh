#!/usr/bin/env bash
# The main command: installs, builds, and runs the full gate on every bundled fixture (the trained
# reference drafters, the three buggy drafters, a tap-indexing-bug record, a corrupted layout),
# printing each fixture's table and the verdict matrix. Exits 0 iff every verdict is the one the
# fixture's suite expects: the references pass, each bug is caught by its check.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/build.sh
./build/draftgate check --verify-expectations --suite fixtures/suites/*.json \
  --report build/gate-report.json --junit build/gate-report.xml "$@"
