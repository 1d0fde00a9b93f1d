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
}
