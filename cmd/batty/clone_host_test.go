package main

import (
	"testing"

	"github.com/battyhq/batty/project"
)

// `batty clone-host` works on the state directory it is given, the
// project being its working directory; without one, or with a relative
// one, it refuses rather than fall back on the project directory.
func TestCloneHostLayout(t *testing.T) {
	l, err := cloneHostLayout("/home/u/.local/state/batty/projects/p-1/", "/home/u/p")
	if err != nil || l != (project.Layout{Dir: "/home/u/.local/state/batty/projects/p-1", Project: "/home/u/p"}) {
		t.Fatalf("cloneHostLayout = %+v, %v", l, err)
	}
	if l.CloneRepo() != "/home/u/.local/state/batty/projects/p-1/repo" || l.LegacyWorktreesDir() != "/home/u/p/.batty/worktrees" {
		t.Fatalf("clone repository %s, old clones %s", l.CloneRepo(), l.LegacyWorktreesDir())
	}
	for _, bad := range []string{"", "state", "~/.local/state"} {
		if _, err := cloneHostLayout(bad, "/home/u/p"); err == nil {
			t.Errorf("cloneHostLayout(%q) accepted", bad)
		}
	}
}
