#!/usr/bin/env bash
# The vitest suite in two lanes at once: each lane is a vitest process with its own Temporal dev server, running
# its files one at a time (test/support/test-lanes.ts says which file runs in which lane). On 2 cores one file at a
# time leaves a core idle about half the time (tests wait on processes, timers and containers); two lanes fill it.
# Each line is prefixed with its lane; each lane ends with its own summary. With arguments (files, filters), runs
# plain `vitest run` with them.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -gt 0 ]; then
  exec npx vitest run "$@"
fi
pids=()
for lane in 1 2; do
  (
    set -o pipefail
    # TEST_LANE: each lane picks its test ports from slices of its own (test/support/free-port.ts).
    TEST_LANE="$lane" npx vitest run --shard="$lane/2" 2>&1 | sed -u "s/^/[lane $lane] /"
  ) &
  pids+=("$!")
done
failed=0
for lane in 1 2; do
  if ! wait "${pids[$((lane - 1))]}"; then
    echo "lane $lane failed" >&2
    failed=1
  fi
done
exit "$failed"
