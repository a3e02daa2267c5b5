#!/usr/bin/env bash
# Builds draftgate against the libtorch of the machine's PyTorch (a CUDA build) with the
# dependencies ci/gpu/stage-deps.sh staged, into build-cuda/. No package registry needed: libcurl's
# runtime library is taken from the system, GoogleTest is built from the staged sources, and the
# Google Benchmark programs are left out.
#
#   bash ci/gpu/build-cuda.sh DEPS_DIR [PYTHON]     (PYTHON: the one whose torch to use; python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=$(cd "$1" && pwd)
python=${2:-python3}
curl_lib=$(ldconfig -p | awk '/libcurl\.so\.4 .*x86-64/ {print $NF; exit}')
if [ -z "$curl_lib" ]; then
  echo "build-cuda.sh: no libcurl.so.4 on this machine (ldconfig -p)" >&2
  exit 2
fi
cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release \
  -DDRAFTGATE_TORCH_FROM_PYTHON=ON -DDRAFTGATE_PYTHON="$python" \
  -DCMAKE_PREFIX_PATH="$deps" -DCURL_INCLUDE_DIR="$deps/include" -DCURL_LIBRARY="$curl_lib" \
  -DDRAFTGATE_GTEST_SOURCE="$deps/src/googletest" -DDRAFTGATE_BUILD_BENCH=OFF
cmake --build build-cuda -j "$(nproc)"
