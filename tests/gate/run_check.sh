#!/bin/sh
# One `gate`-label ctest test: runs one draftgate check on the user's artifacts. Artifacts come from the
# environment (DRAFTGATE_TARGET, DRAFTGATE_DRAFTER, DRAFTGATE_STEP_RECORD, DRAFTGATE_GOLDEN) or, failing that, from the CMake cache
# variables of the same names; with none that the check needs, it exits 77 and ctest shows it as skipped.
# usage: run_check.sh DRAFTGATE_BINARY CHECK
set -u
binary=$1
check=$2
target=${DRAFTGATE_TARGET:-${DRAFTGATE_CACHED_TARGET:-}}
drafter=${DRAFTGATE_DRAFTER:-${DRAFTGATE_CACHED_DRAFTER:-}}
record=${DRAFTGATE_STEP_RECORD:-${DRAFTGATE_CACHED_STEP_RECORD:-}}
golden=${DRAFTGATE_GOLDEN:-${DRAFTGATE_CACHED_GOLDEN:-}}
set -- check --only "$check" --skip-exit-code 77
[ -n "$target" ] && set -- "$@" --target "$target"
[ -n "$drafter" ] && set -- "$@" --drafter "$drafter"
[ -n "$record" ] && set -- "$@" --step-record "$record"
[ -n "$golden" ] && set -- "$@" --golden "$golden"
exec "$binary" "$@"
