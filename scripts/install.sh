#!/usr/bin/env bash
# Installs batty from this checkout into ~/.local/bin (or $BATTY_INSTALL_DIR)
# and says how to put that directory on PATH when it is not. Needs Go 1.26.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:/usr/local/go/bin"
dest="${BATTY_INSTALL_DIR:-$HOME/.local/bin}"

if ! command -v go >/dev/null 2>&1; then
  echo "install.sh: Go is not installed; get Go 1.26 or newer from https://go.dev/dl/ and run this again" >&2
  exit 1
fi
mkdir -p "$dest"
go build -o "$dest/batty" ./cmd/batty
echo "installed $dest/batty"

case ":$PATH:" in
  *":$dest:"*) ;;
  *)
    echo
    echo "$dest is not on your PATH. Add it, for this shell and the next ones:"
    echo "  export PATH=\"$dest:\$PATH\""
    echo "  echo 'export PATH=\"$dest:\$PATH\"' >> ~/.bashrc    # or ~/.zshrc, ~/.profile"
    ;;
esac
if ! command -v codex >/dev/null 2>&1; then
  echo
  echo "batty runs the Codex CLI, which is not on your PATH:"
  echo "  npm install -g @openai/codex@0.171.0"
  echo "  codex login"
fi
