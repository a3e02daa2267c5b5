#!/bin/sh
# The `package` test: `cmake --install` into a fresh prefix, the installed front end finds its
# engine (probe runs torch-free, check --list loads the engine from lib/), and the example project
# ci/examples/custom-check builds against the installed package (find_package(draftgate)) and
# runs its own check beside the bundled ones, passing and failing as its parameter says.
# Usage: install_and_extend.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
set -eu
build=$1 src=$2 cxx=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >/dev/null
dg=$work/prefix/bin/draftgate
[ -x "$dg" ] || fail "no bin/draftgate in the prefix"
"$dg" --version >/dev/null || fail "installed draftgate --version"
"$dg" probe "$src/fixtures/trained/qwen3-target" >/dev/null || fail "installed probe"
"$dg" check --list | grep -q "^min_tau" || fail "installed check --list (engine not found?)"
# Moved as a whole, the prefix still works: the engine is found relative to bin/.
mv "$work/prefix" "$work/moved"
"$work/moved/bin/draftgate" check --list >/dev/null || fail "moved prefix: engine not found"

cmake -S "$src/ci/examples/custom-check" -B "$work/example" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/moved" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "configuring the example against the installed package"; }
cmake --build "$work/example" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "building the example"; }
gate=$work/example/team-gate
"$gate" check --list | grep -q "^served_block_size" || fail "the team check is not listed"
"$gate" check --list | grep -q "^min_tau" || fail "the bundled checks are missing"
drafter=$src/fixtures/trained/qwen3-drafter-reference  # block_size 8
"$gate" check --drafter "$drafter" --only served_block_size --param 'served_block_size.allowed=[8,16]' \
  >/dev/null || fail "the team check should pass a served block size"
set +e
"$gate" check --drafter "$drafter" --only served_block_size >"$work/fail.txt" 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat "$work/fail.txt"; fail "expected exit 1 for an unserved block size, got $status"; }
grep -q "block_size is 8" "$work/fail.txt" || fail "the failure does not say what was measured"
echo "installed, moved, extended: ok"
