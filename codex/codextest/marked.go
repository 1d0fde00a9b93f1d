package codextest

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/reap"
)

// MarkEnv is the environment variable a test sets, to a value of its own,
// on the processes it starts: everything they start inherits it, so
// Marked finds every descendant, including ones that left the process tree.
const MarkEnv = "BATTY_TEST_MARK"

// Marked returns the live (not zombie) processes of this user other than
// this one whose environment holds MarkEnv=mark (see reap.Marked).
func Marked(mark string) []int { return reap.Marked(MarkEnv, mark) }

// Alive reports whether pid is a process that has not exited (neither
// gone nor a zombie).
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// Cmdline returns a process's command line with spaces between arguments.
func Cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(bytes.TrimSpace(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// ExitGrace is how long AssertNoMarked lets a marked process finish dying:
// a process SIGKILLed by its parent-death signal, or reparented while it
// exits, is still in /proc for a moment after the process that owned it
// has gone.
const ExitGrace = 10 * time.Second

// AssertNoMarked fails t for every process carrying mark that is still
// alive ExitGrace after the call, naming it. It returns as soon as every
// marked process has exited (it waits on each one's pidfd, no polling).
func AssertNoMarked(t testing.TB, mark string) {
	t.Helper()
	deadline := time.Now().Add(ExitGrace)
	for _, pid := range Marked(mark) {
		if WaitExit(pid, time.Until(deadline)) {
			continue
		}
		t.Errorf("process left running: %d %s", pid, Cmdline(pid))
	}
}

// WaitExit reports whether process pid exits (or is gone) within timeout.
// It waits on a pidfd: no polling.
func WaitExit(pid int, timeout time.Duration) bool {
	p, err := reap.OpenPidfd(pid)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		// No pidfds here (Linux < 5.3): judge by what /proc shows now.
		return !Alive(pid)
	}
	defer p.Close()
	return p.WaitExit(time.Now().Add(timeout))
}

// WaitPidFile waits up to within for another process (the fake codex's
// detached child, say) to write its pid and a newline to path, and returns
// the pid; it fails the test when none comes.
func WaitPidFile(t testing.TB, path string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			if pid, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond) // another process writes it; nothing to wait on
	}
	t.Fatalf("no pid in %s", path)
	return 0
}
