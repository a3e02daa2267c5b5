#!/bin/sh
# One `gate`-label ctest test: runs one draftgate check on the user's artifacts. Artifacts come from the
# environment (DRAFTGATE_TARGET, DRAFTGATE_DRAFTER, DRAFTGATE_STEP_RECORD, DRAFTGATE_GOLDEN) or, failing that, from the CMake cache
# variables of the same names; with none that the check needs, it exits 77 and ctest shows it as skipped.
# A relative path is refused by name: ctest runs this in build/tests and does not say where it was called
# from, so resolving it anywhere would be a guess (against the repository root, a name that also exists in
# its golden/ silently picked the repository's file). CMake makes relative cache paths (-D…=rel) absolute.
# usage: run_check.sh DRAFTGATE_BINARY CHECK
set -u
binary=$1
check=$2
absolute() {  # NAME VALUE
  case "$2" in
    "" | /*) printf '%s' "$2" ;;
    *)
      echo "draftgate: error: $1=$2 is a relative path: ctest runs the gate tests in build/tests, not where" \
        "you called it (hint: give it absolute, e.g. $1=\"\$PWD/$2\")" >&2
      exit 2
      ;;
  esac
}
target=$(absolute DRAFTGATE_TARGET "${DRAFTGATE_TARGET:-${DRAFTGATE_CACHED_TARGET:-}}") || exit 2
drafter=$(absolute DRAFTGATE_DRAFTER "${DRAFTGATE_DRAFTER:-${DRAFTGATE_CACHED_DRAFTER:-}}") || exit 2
record=$(absolute DRAFTGATE_STEP_RECORD "${DRAFTGATE_STEP_RECORD:-${DRAFTGATE_CACHED_STEP_RECORD:-}}") || exit 2
golden=$(absolute DRAFTGATE_GOLDEN "${DRAFTGATE_GOLDEN:-${DRAFTGATE_CACHED_GOLDEN:-}}") || exit 2
set -- check --only "$check" --skip-exit-code 77
[ -n "$target" ] && set -- "$@" --target "$target"
[ -n "$drafter" ] && set -- "$@" --drafter "$drafter"
[ -n "$record" ] && set -- "$@" --step-record "$record"
[ -n "$golden" ] && set -- "$@" --golden "$golden"
exec "$binary" "$@"
