#!/usr/bin/env bash
# The main job on the bundled default: installs, builds, and probes the bundled Qwen3.6-27B layout
# (metadata-only: config.json + index) to show where its decoder layers live.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/build.sh
./build/draftgate probe fixtures/real-layouts/qwen36-27b-awq-fantasylord
