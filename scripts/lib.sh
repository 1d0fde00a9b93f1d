# Shared by scripts/test.sh and scripts/demo.sh (source it; it only defines
# functions). The checks are functions so that a test can run them with a
# PATH of its own.

# can_root: whether this user can run commands as root (is root, or has sudo).
can_root() { [ "$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1; }

# as_root CMD...: runs CMD as root: directly when root, else through sudo.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# install_hint PKG: the command that installs the system package PKG with
# this machine's package manager, as root (prefixed with sudo when this
# user has it).
install_hint() {
  local pkg=$1 pre=""
  [ "$(id -u)" = 0 ] || pre="sudo "
  if command -v apt-get >/dev/null 2>&1; then echo "${pre}apt-get install $pkg"
  elif command -v dnf >/dev/null 2>&1; then echo "${pre}dnf install $pkg"
  elif command -v pacman >/dev/null 2>&1; then echo "${pre}pacman -S $pkg"
  elif command -v apk >/dev/null 2>&1; then echo "${pre}apk add $pkg"
  elif command -v zypper >/dev/null 2>&1; then echo "${pre}zypper install $pkg"
  elif command -v brew >/dev/null 2>&1; then echo "brew install $pkg"
  else echo "your system's package manager (the package is called $pkg)"
  fi
}

# need_pkg WHO PKG [CMD]: makes sure the command CMD (default PKG; a name on
# PATH or an absolute path) of the system package PKG is there. When it is
# missing it installs PKG with apt-get
# if this user can (root, or sudo); otherwise, or when that fails, it says
# on stderr (as WHO) what to install and returns 1. It never runs apt-get
# as a user who cannot install, whose only result would be apt's lock
# error.
need_pkg() {
  local who=$1 pkg=$2 cmd=${3:-$2}
  command -v "$cmd" >/dev/null 2>&1 && return 0
  if command -v apt-get >/dev/null 2>&1 && can_root; then
    echo "==> installing $pkg (apt-get)"
    if as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null; then
      return 0
    fi
    echo "$who: could not install $pkg with apt-get (see above); install it, then run this again: $(install_hint "$pkg")" >&2
    return 1
  fi
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
    echo "$who: $pkg is not installed, and this user can install no system package (not root, no sudo)." >&2
    echo "$who: ask an administrator to install $pkg ($(install_hint "$pkg") as root), then run this again." >&2
  else
    echo "$who: $pkg is not installed; install it, then run this again: $(install_hint "$pkg")" >&2
  fi
  return 1
}

# need_tmux WHO: need_pkg WHO tmux.
need_tmux() { need_pkg "$1" tmux; }

# need_cmd WHO CMD WHAT: returns 0 when CMD is on PATH, else says on stderr
# (as WHO) that it is missing and WHAT to do, and returns 1.
need_cmd() {
  command -v "$2" >/dev/null 2>&1 && return 0
  echo "$1: $2 is not installed; $3, then run this again" >&2
  return 1
}

# progress LABEL [MATCH]: reads lines (a command's output) and counts those
# matching the extended regular expression MATCH (every line without one):
# on a terminal one line, redrawn in place, gives the count and the last
# line read; elsewhere a line every 50. A final line gives the count.
progress() {
  local label=$1 match=${2:-} n=0 line cols=80 tty=false
  if [ -t 1 ]; then
    tty=true
    cols=$(tput cols 2>/dev/null || echo 80)
  fi
  while IFS= read -r line; do
    if [ -n "$match" ] && ! [[ $line =~ $match ]]; then
      continue
    fi
    n=$((n + 1))
    if $tty; then
      line="==> $label: $n · $line"
      printf '\r\033[K%s' "${line:0:cols-1}"
    elif [ $((n % 50)) = 0 ]; then
      echo "==> $label: $n so far"
    fi
  done
  if $tty; then printf '\r\033[K'; fi
  echo "==> $label: $n"
}

# with_progress LABEL MATCH CMD...: runs CMD with its output (stdout and
# stderr) shown by progress LABEL MATCH; when CMD fails, its whole output
# is printed on stderr and its status returned (under set -e too).
with_progress() {
  local label=$1 match=$2 log rc
  shift 2
  log=$(mktemp "${TMPDIR:-/tmp}/batty-progress.XXXXXX")
  { "$@" && echo 0 >"$log.rc" || echo "$?" >"$log.rc"; } 2>&1 | tee "$log" | progress "$label" "$match"
  rc=$(cat "$log.rc")
  if [ "$rc" != 0 ]; then
    echo "$label failed (exit $rc):" >&2
    cat "$log" >&2
  fi
  rm -f "$log" "$log.rc"
  return "$rc"
}
