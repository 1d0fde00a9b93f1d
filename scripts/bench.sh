#!/usr/bin/env bash
# Runs the benchmarks recorded in docs/benchmarks.md. Timing figures move
# with machine load; run it on a quiet machine.
#
#   scripts/bench.sh            # all
#   scripts/bench.sh protocol   # one group: protocol | codex | shim | orchestrator | ptylog | logtail | cockpit
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

group="${1:-all}"
run() { echo "==> go test -run '^\$' $*"; go test -run '^$' "$@" | grep -E '^(Benchmark|ok|FAIL|---)'; }

if [ "$group" = all ] || [ "$group" = protocol ]; then
  run -bench . -benchmem -benchtime 2s -count 3 ./protocol/
fi
if [ "$group" = all ] || [ "$group" = codex ]; then
  run -bench 'Reader' -benchmem -count 3 ./codex/
fi
if [ "$group" = all ] || [ "$group" = ptylog ]; then
  run -bench . -benchmem -count 3 ./ptylog/
fi
if [ "$group" = all ] || [ "$group" = logtail ]; then
  run -bench . -benchmem -count 3 ./logtail/
fi
if [ "$group" = all ] || [ "$group" = shim ]; then
  run -bench 'TurnViaShim|WorkerDirect' -benchtime 200x -count 3 ./shim/
fi
if [ "$group" = all ] || [ "$group" = cockpit ]; then
  run -bench 'TitleBatch' -benchtime 100x -count 3 ./cockpit/
fi
if [ "$group" = all ] || [ "$group" = orchestrator ]; then
  run -bench 'SendToWorkerStart' -benchtime 300x -count 3 ./orchestrator/
  run -bench 'IdleTeam100' -benchtime 1x -timeout 10m ./orchestrator/
fi
