#!/usr/bin/env bash
# Runs the benchmarks and rewrites docs/benchmarks.md from their results.
# Each group's latest run (results, machine, date, command) is kept in
# docs/benchmarks.json, so running some groups keeps the others' rows; the
# markdown is rendered from all of them by scripts/benchdoc (its prose is
# scripts/benchdoc/template.md). Timing figures move with machine load.
#
#   scripts/bench.sh                # every group (a few minutes)
#   scripts/bench.sh shim chaos     # only these groups
#   scripts/bench.sh render         # no benchmark: the page from the recorded results
#
# Groups: orchestrator drain slots shim protocol idle console telemetry fanout codexcli appshare chaos codex
# ptylog logtail cockpit workspaces hosts memory blame. `memory` (search over
# 10,000 and 1,000,000 synthetic turns, and a turn's indexing) writes about
# 2 GB in a temporary directory and takes minutes. `hosts` (a message to an agent
# over ssh against a local one, and 50 agents on one host) needs root, to
# run an sshd for a user of its own; elsewhere it is recorded as skipped.
# `codexcli` (a message bare and through
# batty on `runtime: exec` and `app-server`, and an idle app-server agent's
# RSS and CPU, in one run) and `appshare` (100 app-server agents on one
# shared process against 40 with a process each: memory, and 20 answering
# at once) need the pinned Codex CLI in
# $BATTY_CODEX_CACHE (default ~/.cache/batty-codex; scripts/test.sh installs
# it): without it the group is recorded as skipped, with the reason (a group
# that has figures keeps them). A group that fails keeps its previous rows, except a chaos
# run, whose figures say what failed; the script then exits 1 after
# rendering.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export BATTY_CODEX_CACHE="${BATTY_CODEX_CACHE:-$HOME/.cache/batty-codex}"
CODEX_VERSION=0.171.0

all=(orchestrator drain slots shim protocol idle console telemetry fanout codexcli appshare chaos codex ptylog logtail cockpit workspaces hosts memory blame)
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=("${all[@]}")
[ "${groups[*]}" != render ] || groups=()
for g in "${groups[@]+"${groups[@]}"}"; do
  case " ${all[*]} " in
    *" $g "*) ;;
    *) echo "scripts/bench.sh: unknown group $g (the groups: ${all[*]})" >&2; exit 2 ;;
  esac
done

data=docs/benchmarks.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/benchdoc" ./scripts/benchdoc
goversion=$(go env GOVERSION)
failed=()

# quote prints its arguments as a shell command line, quoting only those
# that need it.
quote() {
  local out=() a
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/\'\\\'\'}'"); fi
  done
  echo "${out[*]}"
}

# bench GROUP ARGS...: runs `go test ARGS...`, shows its benchmark lines
# and records them as GROUP's run.
bench() {
  local group=$1; shift
  local cmd
  cmd="go test $(quote "$@")"
  echo "==> $group: $cmd"
  if go test "$@" >"$tmp/$group.out" 2>&1; then
    grep -E '^Benchmark' "$tmp/$group.out" || true
    "$tmp/benchdoc" record -data "$data" -group "$group" -command "$cmd" -go "$goversion" <"$tmp/$group.out" || failed+=("$group")
  elif [ "$group" = chaos ] && grep -q '^BenchmarkChaos' "$tmp/$group.out"; then
    # A chaos run that failed (a message lost, a process left) still
    # printed its figures: they are the result, so they are recorded.
    grep -E '^Benchmark|_test\.go:[0-9]+:' "$tmp/$group.out" | tail -n 40
    "$tmp/benchdoc" record -data "$data" -group "$group" -command "$cmd" -go "$goversion" <"$tmp/$group.out" || true
    echo "==> $group failed; its figures are recorded"
    failed+=("$group")
  else
    tail -n 40 "$tmp/$group.out"
    echo "==> $group failed; its rows stay as they were"
    failed+=("$group")
  fi
}

# skip GROUP REASON ARGS...: records GROUP as skipped for REASON (the
# command it would have run is ARGS).
skip() {
  local group=$1 reason=$2; shift 2
  echo "==> $group skipped: $reason"
  "$tmp/benchdoc" record -data "$data" -group "$group" -command "go test $(quote "$@")" -go "$goversion" -skip "$reason" || failed+=("$group")
}

for g in "${groups[@]+"${groups[@]}"}"; do
  case $g in
    orchestrator) bench "$g" -run '^$' -bench '^BenchmarkSendToWorkerStart$' -benchtime 300x -count 3 ./orchestrator/ ;;
    drain) bench "$g" -run '^$' -bench '^BenchmarkDrain$' -benchtime 2x -count 3 -timeout 20m ./orchestrator/ ;;
    slots) bench "$g" -run '^$' -bench '^BenchmarkConcurrentTurns$' -benchtime 1x -count 3 -timeout 20m ./orchestrator/ ;;
    shim) bench "$g" -run '^$' -bench '^Benchmark(TurnViaShim|WorkerDirect)$' -benchtime 200x -count 3 ./shim/ ;;
    protocol) bench "$g" -run '^$' -bench . -benchmem -benchtime 2s -count 3 ./protocol/ ;;
    idle) bench "$g" -run '^$' -bench '^BenchmarkIdleTeam100$' -benchtime 1x -timeout 10m ./cmd/batty/ ;;
    console) bench "$g" -run '^$' -bench '^BenchmarkConsole100$' -benchtime 1x -count 3 -timeout 15m ./cmd/batty/ ;;
    telemetry) bench "$g" -run '^$' -bench '^BenchmarkTelemetry100$' -benchtime 1x -count 3 -timeout 20m ./cmd/batty/ ;;
    fanout)
      # The real-Codex fan-out (BenchmarkFanoutCodex: exec against the shared
      # app-server, 200 rows at concurrency 8 and 64) needs the pinned Codex
      # CLI; without it only the fake-worker job runs.
      if [ -x "$BATTY_CODEX_CACHE/$CODEX_VERSION/node_modules/.bin/codex" ]; then
        BATTY_CODEX_BIN='' bench "$g" -run '^$' -bench '^Benchmark(Fanout100Rows64|FanoutCodex)$' -benchtime 1x -count 3 -timeout 30m ./fanout/ ./cmd/batty/
      else
        bench "$g" -run '^$' -bench '^BenchmarkFanout100Rows64$' -benchtime 1x -count 3 ./fanout/
      fi ;;
    codexcli)
      args=(-run '^$' -bench '^BenchmarkCodexMessage$' -benchtime 20x -timeout 10m ./cmd/batty/)
      if [ -x "$BATTY_CODEX_CACHE/$CODEX_VERSION/node_modules/.bin/codex" ]; then
        BATTY_CODEX_BIN='' bench "$g" "${args[@]}"
      else
        skip "$g" "the Codex CLI $CODEX_VERSION is not installed in $BATTY_CODEX_CACHE (scripts/test.sh installs it)" "${args[@]}"
      fi ;;
    appshare)
      args=(-run '^$' -bench '^BenchmarkAppServerCrew$' -benchtime 1x -timeout 30m ./cmd/batty/)
      if [ -x "$BATTY_CODEX_CACHE/$CODEX_VERSION/node_modules/.bin/codex" ]; then
        BATTY_CODEX_BIN='' bench "$g" "${args[@]}"
      else
        skip "$g" "the Codex CLI $CODEX_VERSION is not installed in $BATTY_CODEX_CACHE (scripts/test.sh installs it)" "${args[@]}"
      fi ;;
    chaos) bench "$g" -count=1 -timeout 20m -run '^TestChaos$' -v ./orchestrator/ -args -chaos.messages=1000 -chaos.daemonkills=3 ;;
    codex) bench "$g" -run '^$' -bench '^BenchmarkReader' -benchmem -count 3 ./codex/ ;;
    ptylog) bench "$g" -run '^$' -bench . -benchmem -count 3 ./ptylog/ ;;
    logtail) bench "$g" -run '^$' -bench . -benchmem -count 3 ./logtail/ ;;
    cockpit) bench "$g" -run '^$' -bench '^BenchmarkTitleBatch$' -benchtime 100x -count 3 ./cockpit/ ;;
    workspaces) bench "$g" -run '^$' -bench '^BenchmarkCommitPerTurn$' -benchtime 20x -count 3 ./workspaces/ ;;
    memory) bench "$g" -run '^$' -bench '^Benchmark(Search|IndexTurn)$' -benchtime 1x -timeout 60m ./searchindex/ ;;
    blame) bench "$g" -run '^$' -bench '^BenchmarkBlame$' -benchtime 20x -count 3 ./blame/ ;;
    hosts)
      args=(-run '^$' -bench '^BenchmarkHost(Message|CommitPerTurn|FiftyAgents)$' -benchtime 20x -timeout 20m ./orchestrator/)
      if [ "$(id -u)" = 0 ] && [ -x /usr/sbin/sshd ]; then
        bench "$g" "${args[@]}"
      else
        skip "$g" "needs root and openssh-server (an sshd for a user of its own; scripts/test.sh installs it)" "${args[@]}"
      fi ;;
  esac
done

"$tmp/benchdoc" render -data "$data" -out docs/benchmarks.md
echo "==> wrote docs/benchmarks.md"
if [ ${#failed[@]} -gt 0 ]; then
  echo "==> failed: ${failed[*]}" >&2
  exit 1
fi
