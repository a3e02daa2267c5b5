#!/bin/sh
# One `gate`-label ctest test: runs one draftgate check on the user's artifacts. Artifacts come from the
# environment (DRAFTGATE_TARGET, DRAFTGATE_DRAFTER, DRAFTGATE_STEP_RECORD, DRAFTGATE_GOLDEN) or, failing that, from the CMake cache
# variables of the same names; with none that the check needs, it exits 77 and ctest shows it as skipped.
# A relative path is relative to the repository root (ctest runs this in build/tests, where it would not resolve).
# usage: run_check.sh DRAFTGATE_BINARY CHECK REPOSITORY_ROOT
set -u
binary=$1
check=$2
root=$3
from_root() {
  case "$1" in
    "" | /*) printf '%s' "$1" ;;
    *) printf '%s/%s' "$root" "$1" ;;
  esac
}
target=$(from_root "${DRAFTGATE_TARGET:-${DRAFTGATE_CACHED_TARGET:-}}")
drafter=$(from_root "${DRAFTGATE_DRAFTER:-${DRAFTGATE_CACHED_DRAFTER:-}}")
record=$(from_root "${DRAFTGATE_STEP_RECORD:-${DRAFTGATE_CACHED_STEP_RECORD:-}}")
golden=$(from_root "${DRAFTGATE_GOLDEN:-${DRAFTGATE_CACHED_GOLDEN:-}}")
set -- check --only "$check" --skip-exit-code 77
[ -n "$target" ] && set -- "$@" --target "$target"
[ -n "$drafter" ] && set -- "$@" --drafter "$drafter"
[ -n "$record" ] && set -- "$@" --step-record "$record"
[ -n "$golden" ] && set -- "$@" --golden "$golden"
exec "$binary" "$@"
