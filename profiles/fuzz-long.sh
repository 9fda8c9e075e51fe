#!/usr/bin/env bash
# Long libFuzzer runs (scripts/fuzz) one target after another, and a JSON summary of each:
# seconds, executions, corpus growth, peak RSS and whether it ended clean (no crash, no
# sanitizer report, no leak). A reproducer, if any, stays in LOGDIR.
# Usage: profiles/fuzz-long.sh SECONDS LOGDIR TARGET... (scripts/fuzz list names the targets)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:?usage: profiles/fuzz-long.sh SECONDS LOGDIR TARGET...}
logdir=${2:?usage: profiles/fuzz-long.sh SECONDS LOGDIR TARGET...}
shift 2
mkdir -p "$logdir"
# Built once, only these targets: the sources may change while they run.
"$root/scripts/sanitize-build" "${SAFHIRE_SANITIZE_BUILD_DIR:-$root/build-sanitize}" "${@/#/fuzz_}" \
  >&2 || exit 1
export SAFHIRE_FUZZ_SKIP_BUILD=1
for target in "$@"; do
  log="$logdir/$target.log"
  start=$(date +%s)
  (cd "$logdir" && "$root/scripts/fuzz" "$target" "$seconds") >"$log" 2>&1
  status=$?
  stat() { sed -n "s/^stat::$1: *\([0-9]*\)/\1/p" "$log" | tail -1; }
  printf '{"target": "%s", "started": "%s", "seconds": %d, "executions": %s, "new_units": %s, "peak_rss_mb": %s, "exit_status": %d, "clean": %s}\n' \
    "$target" "$(date -u -d "@$start" +%FT%TZ)" $(($(date +%s) - start)) \
    "$(stat number_of_executed_units)" "$(stat new_units_added)" "$(stat peak_rss_mb)" \
    "$status" "$([ $status -eq 0 ] && echo true || echo false)" >>"$logdir/summary.jsonl"
done
