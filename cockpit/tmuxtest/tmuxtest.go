// Package tmuxtest keeps tests that start tmux servers away from the
// user's: the tests of a package run with tmux pointed at a private
// directory, and a test that needs tmux skips without it (fails in CI).
package tmuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Isolated runs m with TMUX_TMPDIR set to a new private temporary
// directory (inherited by every process the tests start) and TMUX unset,
// so no test touches the user's tmux servers; afterwards it kills every
// server started there and removes the directory. It returns m.Run's exit
// code, for TestMain to pass to os.Exit.
func Isolated(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "bt")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	os.Setenv("TMUX_TMPDIR", tmp)
	os.Unsetenv("TMUX")
	defer killServers(tmp)
	return m.Run()
}

// killServers kills every tmux server whose socket is under dir.
func killServers(dir string) {
	bin, err := exec.LookPath("tmux")
	if err != nil {
		return
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "tmux-*", "*"))
	for _, s := range socks {
		exec.Command(bin, "-S", s, "kill-server").Run()
	}
}

// Need returns the tmux binary; without one the test skips, except in CI
// (CI=true), where it fails.
func Need(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (scripts/test.sh installs it)")
		}
		t.Skip("tmux is not installed")
	}
	return bin
}
