package project

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestStateKey(t *testing.T) {
	tests := []struct {
		dir, prefix string
	}{
		{"/src/app", "app-"},
		{"/src/my app!", "my_app-"},
		{"/src/" + strings.Repeat("x", 40), strings.Repeat("x", 24) + "-"},
		{"/", "project-"},
		{"/src/...", "project-"},
	}
	for _, tt := range tests {
		k := StateKey(tt.dir)
		if !strings.HasPrefix(k, tt.prefix) || len(k) != len(tt.prefix)+12 || strings.ContainsAny(k, "/ \x00") {
			t.Errorf("StateKey(%q) = %q, want %q and 12 hex digits", tt.dir, k, tt.prefix)
		}
	}
	if StateKey("/a/app") == StateKey("/b/app") {
		t.Error("two projects of one name share a state directory")
	}
	if StateKey("/a/app/") != StateKey("/a/app") {
		t.Error("a trailing slash changes the key")
	}
}

func TestStateHome(t *testing.T) {
	tests := []struct {
		batty, xdg, home string
		want, err        string
	}{
		{"/s", "/x", "/h", "/s", ""},
		{"", "/x", "/h", "/x/batty", ""},
		{"", "", "/h", "/h/.local/state/batty", ""},
		{"", "rel", "/h", "/h/.local/state/batty", ""}, // a relative XDG_STATE_HOME is ignored
		{"rel", "/x", "/h", "", "not an absolute path"},
		{"", "", "", "", "HOME is not set"},
	}
	for _, tt := range tests {
		t.Setenv(EnvStateHome, tt.batty)
		t.Setenv("XDG_STATE_HOME", tt.xdg)
		t.Setenv("HOME", tt.home)
		got, err := StateHome()
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%+v: StateHome = %q, %v; want an error with %q", tt, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%+v: StateHome = %q, %v; want %q", tt, got, err, tt.want)
		}
	}
}

func TestLayoutForIsOutsideTheProject(t *testing.T) {
	t.Setenv(EnvStateHome, "/state")
	for _, f := range []string{"/src/app/team.yaml", "/src/app/.batty/team.yaml"} {
		l, err := LayoutFor(f)
		if err != nil {
			t.Fatal(err)
		}
		if l.Project != "/src/app" || l.Root() != "/src/app" || l.Dir != filepath.Join("/state/projects", StateKey("/src/app")) ||
			l.StateRoot() != "/state/projects" || l.WorktreesDir() != filepath.Join(l.Dir, "worktrees") ||
			l.LegacyWorktreesDir() != "/src/app/.batty/worktrees" {
			t.Errorf("LayoutFor(%s) = %+v (worktrees %s)", f, l, l.WorktreesDir())
		}
		if err := CheckStateDir(l.Dir, []string{l.Root()}); err != nil {
			t.Errorf("the state directory of %s is inside the project: %v", f, err)
		}
		// The worktrees are out of the project: no agent sharing the
		// checkout can write them.
		if rel, err := filepath.Rel(l.Root(), l.WorktreesDir()); err != nil || !strings.HasPrefix(rel, "..") {
			t.Errorf("the worktrees %s are inside the project %s", l.WorktreesDir(), l.Root())
		}
	}
}

func TestLayoutWithoutProject(t *testing.T) {
	l := Layout{Dir: "/h/p/.batty"}
	if l.WorktreesDir() != "/h/p/.batty/worktrees" || l.LegacyWorktreesDir() != "" {
		t.Errorf("WorktreesDir = %s, LegacyWorktreesDir = %q", l.WorktreesDir(), l.LegacyWorktreesDir())
	}
}

func TestCheckStateDir(t *testing.T) {
	tests := []struct {
		state      string
		workspaces []string
		exposed    bool
	}{
		{"/home/u/.local/state/batty/projects/app-1", []string{"/src/app", "/src/app/svc", ""}, false},
		{"/src/app/.state/projects/app-1", []string{"/src/app"}, true},
		{"/home/u/.local/state/batty/projects/app-1", []string{"/src/app", "/home/u"}, true}, // a role working in the home directory
		{"/home/u/.local/state/batty/projects/app-1", []string{"/home/u/.local/state/batty/projects/app-1"}, true},
		{"/home/u/.local/state/batty/projects/app-1", []string{"/home/u/.local/state/batty/projects/app-10"}, false},
		{"/home/u/.local/state/batty/projects/app-1", []string{"/home/u/.cache/go-build"}, false},
		// An agent's worktree, its writable root, is inside the state
		// directory, not the other way round.
		{"/home/u/.local/state/batty/projects/app-1", []string{"/src/app", "/home/u/.local/state/batty/projects/app-1/worktrees/eng"}, false},
		{"/home/u/.local/state/batty/projects/app-1", []string{"/home/u/.local/state/batty/projects/app-1/worktrees"}, false},
		{"/home/u/.local/state/batty/projects/app-1", []string{"/home/u/.local/state/batty"}, true},
	}
	for _, tt := range tests {
		err := CheckStateDir(tt.state, tt.workspaces)
		if got := errors.Is(err, ErrStateExposed); got != tt.exposed {
			t.Errorf("CheckStateDir(%s, %v) = %v; want exposed %v", tt.state, tt.workspaces, err, tt.exposed)
		}
		if err != nil && !strings.Contains(err.Error(), EnvStateHome) {
			t.Errorf("the error does not say how to move it: %v", err)
		}
	}
}
