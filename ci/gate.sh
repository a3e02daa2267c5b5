#!/usr/bin/env bash
# Gate a training run in your CI: runs draftgate's checks on a checkpoint (and, optionally, a step
# record of its first steps and the golden of your reference drafter), writes JSON, JUnit and HTML
# reports (and the table as draftgate.txt), and exits with draftgate's code: 0 no check failed (the
# summary counts the skipped ones), 1 a check failed (with --fail-on-skip, a skip too), 2 bad input
# or no check could run.
#
#   ci/gate.sh --target DIR --drafter DIR [--step-record FILE] [--golden FILE] [--out DIR]
#              [any other `draftgate check` flag, e.g. --suite FILE, --only a,b, --fail-on-skip]
#
# DRAFTGATE (default: build/draftgate next to this script) names the binary.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
draftgate=${DRAFTGATE:-$root/build/draftgate}
out=gate-reports
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ ! -x "$draftgate" ]; then
  echo "gate.sh: $draftgate not found; build it first (bash ci/build.sh) or set DRAFTGATE" >&2
  exit 2
fi
mkdir -p "$out"
# draftgate's last "summary:" line says what passed, failed and skipped (and why); the verdict
# below repeats it, so this script never calls a run with skipped checks "all passed".
"$draftgate" check "${args[@]}" --report "$out/draftgate.json" --junit "$out/draftgate.xml" \
  --html "$out/draftgate.html" | tee "$out/draftgate.txt"
code=${PIPESTATUS[0]}
summary=$(grep '^summary: ' "$out/draftgate.txt" | tail -n 1)
summary=${summary#summary: }
case $code in
  0) echo "gate.sh: PASSED: $summary (reports in $out/)" ;;
  1) echo "gate.sh: FAILED: $summary (reports in $out/)" >&2 ;;
  *) echo "gate.sh: bad input or usage (exit $code): see the error above; no verdict" >&2 ;;
esac
exit $code
