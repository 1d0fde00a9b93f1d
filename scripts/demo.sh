#!/usr/bin/env bash
# One command on a fresh machine: builds batty, installs what the demo needs
# when it is missing — the pinned Codex CLI from npm into a cache, tmux from
# the system packages — and runs `batty demo`, passing the arguments on:
#
#   scripts/demo.sh                 # the cockpit in a terminal with tmux
#   scripts/demo.sh --no-tmux       # a plain feed
#   scripts/demo.sh --keep          # keep the scratch project afterwards
#
# The model is a scripted stand-in (a local server): no OpenAI account is
# needed and nothing leaves the machine. Needs Go 1.26 and npm (Node.js).
#
# Environment: BATTY_CODEX_CACHE (default ~/.cache/batty-codex) holds the
# Codex CLI install, BATTY_BIN_CACHE (default ~/.cache/batty/bin) the batty
# binary built here.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0
export PATH="$PATH:/usr/local/go/bin"
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export BATTY_CODEX_CACHE="${BATTY_CODEX_CACHE:-$HOME/.cache/batty-codex}"
bin_dir="${BATTY_BIN_CACHE:-$HOME/.cache/batty/bin}"

. scripts/lib.sh

need_cmd demo.sh go "get Go 1.26 or newer from https://go.dev/dl/" || exit 1
need_pkg demo.sh git || exit 1

if ! need_tmux demo.sh; then
  echo "demo.sh: going on without tmux: the demo prints a plain feed instead of the cockpit" >&2
fi

codex_dir="$BATTY_CODEX_CACHE/$CODEX_VERSION"
if [ ! -x "$codex_dir/node_modules/.bin/codex" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "demo.sh: npm is not installed; it installs the Codex CLI. Get Node.js (with npm) from https://nodejs.org or your package manager ($(install_hint npm)) and run this again" >&2
    exit 1
  fi
  echo "==> installing @openai/codex@$CODEX_VERSION into $codex_dir"
  mkdir -p "$codex_dir"
  npm install --loglevel=error --no-audit --no-fund --prefix "$codex_dir" "@openai/codex@$CODEX_VERSION"
fi

# A cold build downloads modules and compiles a few hundred packages (minutes):
# both show their progress.
with_progress "downloading Go modules (files fetched)" ': 200 OK' go mod download -x
echo "==> building batty into $bin_dir"
mkdir -p "$bin_dir"
with_progress "compiling batty (packages built)" '' go build -v -o "$bin_dir/batty" ./cmd/batty

exec "$bin_dir/batty" demo --codex-bin "$codex_dir/node_modules/.bin/codex" "$@"
