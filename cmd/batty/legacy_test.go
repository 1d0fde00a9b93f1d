package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A project whose .batty holds an earlier batty's state (inboxes, state)
// gets one warning at start naming it and the new state directory; its
// worktrees alone are no state, and nothing is said then.
func TestWarnLegacyState(t *testing.T) {
	dir := t.TempDir()
	l := layoutOf(t, dir)
	var b strings.Builder
	if err := os.MkdirAll(filepath.Join(dir, ".batty", "worktrees", "eng"), 0o700); err != nil {
		t.Fatal(err)
	}
	warnLegacyState(&b, l)
	if b.Len() != 0 {
		t.Fatalf("warned of worktrees: %s", b.String())
	}
	for _, n := range []string{"inboxes", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, ".batty", n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	warnLegacyState(&b, l)
	for _, want := range []string{"the state of an earlier batty (inboxes, state)", "it is not read", l.Dir, "rm -r " + filepath.Join(dir, ".batty", "inboxes")} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("warning lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "may still run") {
		t.Errorf("an earlier daemon named without its socket:\n%s", b.String())
	}
	// An earlier daemon's socket: stop that one first.
	if err := os.WriteFile(filepath.Join(dir, ".batty", "daemon.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	warnLegacyState(&b, l)
	if !strings.Contains(b.String(), "an earlier batty's daemon may still run this team") {
		t.Errorf("no word of the earlier daemon:\n%s", b.String())
	}
}
