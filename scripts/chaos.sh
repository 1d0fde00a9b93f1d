#!/usr/bin/env bash
# The chaos run at full size (docs/benchmarks.md records its figures): an
# 8-agent team on the fake worker, 1,000 messages (half to role queues, half
# to instances, a fifth queued before the daemon starts), a random shim
# SIGKILLed every 100–200 ms and the daemon SIGKILLed and restarted 3 times,
# once while it routes. The suite runs the same test at 150 messages and 1
# daemon kill.
#
#   scripts/chaos.sh                      # full size
#   scripts/chaos.sh -chaos.messages=300  # other sizes: -chaos.daemonkills=N, -chaos.seed=N
#   RACE=1 scripts/chaos.sh               # under the race detector
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

race=()
[ "${RACE:-}" = 1 ] && race=(-race)
go test "${race[@]}" -count=1 -timeout 20m -run '^TestChaos$' -v ./orchestrator/ \
  -args -chaos.messages=1000 -chaos.daemonkills=3 "$@" | grep -E 'chaos|^(Benchmark|---|ok|FAIL|PASS)'
