#!/usr/bin/env bash
# The test command: installs what the tests need (tmux, git, OpenSSH for the
# hosts tests and chromium for the console's browser test when root, every Codex CLI version batty is tested with),
# then runs gofmt, go vet, staticcheck (installed with go install when
# missing, at the pinned version) and the whole suite with the race
# detector against the pinned Codex CLI, then — for the whole suite only —
# the runtime conformance suite (shim's TestConformance) once more against
# each other tested version (BATTY_CODEX_VERSION selects it). A user who
# cannot install tmux (not root, no sudo) is told what to install.
#
#   scripts/test.sh            # everything
#   scripts/test.sh ./shim/... # only these packages (vet and test)
#
# Environment: BATTY_CODEX_CACHE (default ~/.cache/batty-codex) holds the
# Codex CLI install; BATTY_TELEMETRY_CACHE (default ~/.cache/batty-telemetry)
# the Prometheus and Jaeger the telemetry tests scrape and export to, built
# from their Go modules once; CI=true makes the end-to-end tests fail
# instead of skip when the Codex CLI or those are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0
# The versions batty is tested with, oldest first, the pin last (codex.TestedVersions).
CODEX_TESTED="0.169.0 0.171.0"
STATICCHECK_VERSION=v0.8.2 # staticcheck 2026.2.2, which knows Go 1.26
# The Prometheus and Jaeger (v2) of the telemetry tests, as Go modules
# (telemetry/telemetrytest finds them).
PROMETHEUS_MODULE=github.com/prometheus/prometheus/cmd/prometheus@v0.316.0
JAEGER_MODULE=github.com/jaegertracing/jaeger/cmd/jaeger@v1.76.0
JAEGER_REPLACE=github.com/Shopify/sarama=github.com/Shopify/sarama@v1.33.0 # as its go.mod
export PATH="/usr/local/go/bin:$PATH"
export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
export BATTY_CODEX_CACHE="${BATTY_CODEX_CACHE:-$HOME/.cache/batty-codex}"
export BATTY_TELEMETRY_CACHE="${BATTY_TELEMETRY_CACHE:-$HOME/.cache/batty-telemetry}"

. scripts/lib.sh

# What the tests need, each missing one named with how to get it; tmux and git are
# installed when this user can (root or sudo).
codex_dir="$BATTY_CODEX_CACHE/$CODEX_VERSION"
missing=0
need_cmd scripts/test.sh go "get Go 1.26 or newer from https://go.dev/dl/" || missing=1
for v in $CODEX_TESTED; do
  if [ ! -x "$BATTY_CODEX_CACHE/$v/node_modules/.bin/codex" ]; then
    need_cmd scripts/test.sh npm "it installs the Codex CLI; get Node.js with npm ($(install_hint npm))" || missing=1
    break
  fi
done
need_tmux scripts/test.sh || missing=1
need_pkg scripts/test.sh git || missing=1
if [ "$missing" != 0 ]; then
  echo "scripts/test.sh: nothing was run; install what is named above" >&2
  exit 1
fi

# The sshd of the tests of agents on other hosts (hosts/hoststest), which
# lets in a user the tests create: only root can run it; they skip, saying
# why, without it.
if [ "$(id -u)" = 0 ]; then
  { need_pkg scripts/test.sh openssh-server /usr/sbin/sshd && need_pkg scripts/test.sh openssh-client ssh &&
    need_pkg scripts/test.sh passwd useradd && need_pkg scripts/test.sh procps pgrep; } ||
    echo "scripts/test.sh: the tests of agents on other hosts will skip" >&2
fi

# The console's browser test (cmd/batty TestE2EConsoleInABrowser) drives
# Debian's chromium headless; without it the test skips (fails under CI=true).
if [ "$(id -u)" = 0 ]; then
  need_pkg scripts/test.sh chromium || echo "scripts/test.sh: the console's browser test will skip" >&2
fi

for v in $CODEX_TESTED; do
  d="$BATTY_CODEX_CACHE/$v"
  if [ ! -x "$d/node_modules/.bin/codex" ]; then
    echo "==> installing @openai/codex@$v into $d"
    mkdir -p "$d"
    npm install --loglevel=error --no-audit --no-fund --prefix "$d" "@openai/codex@$v"
  fi
  "$d/node_modules/.bin/codex" --version
done

# The telemetry tests' Prometheus and Jaeger: built once (minutes on two
# cores), each into a directory named after its version. Jaeger's module
# replaces a dependency, which `go install mod@version` refuses: it is
# built as a tool of a module made for it, with the same replacement.
build_tool() { # build_tool module@version build-tags [replace...]
  local mod="$1" tags="$2"; shift 2
  local name="${mod%@*}" version="${mod#*@}"
  name="${name##*/}"
  local d="$BATTY_TELEMETRY_CACHE/$name-$version"
  [ ! -x "$d/$name" ] || return 0
  echo "==> building $mod into $d (once)"
  mkdir -p "$d"
  local start=$SECONDS
  if [ $# -eq 0 ]; then
    GOBIN="$d" go install -trimpath -tags "$tags" "$mod"
  else
    local m="$d/module"
    rm -rf "$m" && mkdir -p "$m"
    (cd "$m" && go mod init batty-telemetry-tool >/dev/null 2>&1 &&
      for r in "$@"; do go mod edit -replace "$r"; done &&
      go get -tool "$mod" && go build -trimpath -tags "$tags" -o "$d/$name" "${mod%@*}")
  fi
  echo "==> $name built in $((SECONDS - start)) s"
}
# Prometheus without its service discoveries (the tests list their
# target): far fewer packages to compile.
build_tool "$PROMETHEUS_MODULE" remove_all_sd
build_tool "$JAEGER_MODULE" "" "$JAEGER_REPLACE"

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

echo "==> $(go version); Go environment file: ${GOENV:-$(go env GOENV)}; GOFLAGS=$(go env GOFLAGS)"

echo "==> gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "not gofmt'ed:"; echo "$unformatted"; exit 1; fi

echo "==> go vet"
go vet "${pkgs[@]}"

echo "==> staticcheck"
gobin="$(go env GOBIN)"
staticcheck="${gobin:-$(go env GOPATH)/bin}/staticcheck"
if ! "$staticcheck" -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; then
  echo "==> installing staticcheck $STATICCHECK_VERSION"
  go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
"$staticcheck" "${pkgs[@]}"

echo "==> go test -race"
# Race-built binaries sleep 1 s at exit by default; the tests re-execute
# themselves as shims and fake workers thousands of times.
export GORACE="${GORACE:-atexit_sleep_ms=0}"
go test -race -count=1 -timeout 20m "${pkgs[@]}"

# The other tested Codex CLIs: only the runtime conformance suite, which
# covers what batty relies on in each runtime (see docs/doctor.md).
if [ $# -eq 0 ]; then
  for v in $CODEX_TESTED; do
    [ "$v" != "$CODEX_VERSION" ] || continue
    echo "==> conformance suite against Codex CLI $v"
    start=$SECONDS
    BATTY_CODEX_VERSION="$v" go test -race -count=1 -timeout 10m -run '^TestConformance$' ./shim/
    echo "==> conformance suite against Codex CLI $v: $((SECONDS - start)) s"
  done
fi
