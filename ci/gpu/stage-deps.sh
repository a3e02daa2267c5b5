#!/usr/bin/env bash
# Stages what a machine without a package registry (a GPU box with only PyTorch) lacks to build
# draftgate: nlohmann/json and CLI11 headers with their CMake packages, libcurl's headers, and the
# GoogleTest sources (built there with the tests), copied from this Debian machine's packages
# (ci/install-deps.sh installs them). About 6 MB; carry the directory along with the tree.
#
#   bash ci/gpu/stage-deps.sh [DIR]     (default: build-deps, ignored by git)
#
# Then, on the GPU machine: bash ci/gpu/build-cuda.sh DIR
set -euo pipefail
out=${1:-build-deps}
rm -rf "$out"
mkdir -p "$out/include" "$out/share/cmake" "$out/src"
cp -r /usr/include/nlohmann /usr/include/CLI "$out/include/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$out/share/cmake/"
cp -r /usr/include/x86_64-linux-gnu/curl "$out/include/"
cp -r /usr/src/googletest "$out/src/"
du -sh "$out"
