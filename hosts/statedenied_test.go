package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/project"
)

// The state directory on a host is denied child by child: the clones, the
// outboxes and state/, each directly in it; the clone repository, which
// the agents' git reads in their clones, is not among them, nor the state
// directory itself.
func TestDeniedThere(t *testing.T) {
	state := StateDir("~/src/p")
	got := DeniedThere("~/src/p")
	if want := []string{state + "/worktrees", state + "/outboxes", state + "/state"}; !slices.Equal(got, want) {
		t.Fatalf("DeniedThere = %v, want %v", got, want)
	}
	l := project.Layout{Dir: state}
	if slices.Contains(got, l.CloneRepo()) || slices.Contains(got, state) || !slices.Contains(got, WorktreesThere("~/src/p")) ||
		!slices.Contains(got, filepath.Dir(l.GitLock())) {
		t.Fatalf("DeniedThere = %v", got)
	}
}

// The denied children of the state directory are made (0700, the state
// directory too) before the profile drops what is missing; paths outside
// it, and the state directory itself, are left alone; a link planted at
// one is refused, not followed.
func TestMakeDeniedState(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "projects", "p-1")
	outside := filepath.Join(root, "elsewhere")
	deny := []string{state + "/worktrees", state + "/outboxes", state + "/state", outside, state, "/"}
	if err := MakeDeniedState(state, deny); err != nil {
		t.Fatal(err)
	}
	for _, d := range deny[:3] {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", d, fi, err)
		}
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Fatalf("%s, outside the state directory, was made", outside)
	}
	if err := MakeDeniedState(state, deny); err != nil {
		t.Fatalf("again: %v", err)
	}
	os.Remove(state + "/state")
	if err := os.Symlink(outside, state+"/state"); err != nil {
		t.Fatal(err)
	}
	if err := MakeDeniedState(state, deny); !errors.Is(err, atomicfile.ErrSymlink) {
		t.Fatalf("a link at a denied child: %v", err)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Fatalf("the link was followed")
	}
	if err := MakeDeniedState("relative", deny); err == nil {
		t.Fatal("a relative state directory was taken")
	}
}
