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

CODEX_VERSION=0.169.0
export PATH="$PATH:/usr/local/go/bin"
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export BATTY_CODEX_CACHE="${BATTY_CODEX_CACHE:-$HOME/.cache/batty-codex}"
bin_dir="${BATTY_BIN_CACHE:-$HOME/.cache/batty/bin}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

if ! command -v go >/dev/null 2>&1; then
  echo "demo.sh: Go is not installed; get Go 1.26 or newer from https://go.dev/dl/ and run this again" >&2
  exit 1
fi

if ! command -v tmux >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "==> installing tmux (apt-get)"
    if ! { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; }; then
      echo "demo.sh: could not install tmux; the demo prints a plain feed instead of the cockpit" >&2
    fi
  else
    echo "demo.sh: tmux is not installed (install it with your package manager for the cockpit); the demo prints a plain feed" >&2
  fi
fi

codex_dir="$BATTY_CODEX_CACHE/$CODEX_VERSION"
if [ ! -x "$codex_dir/node_modules/.bin/codex" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "demo.sh: npm is not installed; it installs the Codex CLI. Get Node.js (with npm) from https://nodejs.org or your package manager (apt-get install nodejs npm) and run this again" >&2
    exit 1
  fi
  echo "==> installing @openai/codex@$CODEX_VERSION into $codex_dir"
  mkdir -p "$codex_dir"
  npm install --loglevel=error --no-audit --no-fund --prefix "$codex_dir" "@openai/codex@$CODEX_VERSION"
fi

echo "==> building batty into $bin_dir"
mkdir -p "$bin_dir"
go build -o "$bin_dir/batty" ./cmd/batty

exec "$bin_dir/batty" demo --codex-bin "$codex_dir/node_modules/.bin/codex" "$@"
