package landing

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plantGitDir makes, in a directory of the test's (as an agent would in
// /tmp), a repository that borrows the project's objects (alternates) and
// whose configuration runs `touch proof` as a smudge filter of every
// file, and replaces the .git file of the worktree dir with a "gitdir:"
// line naming it: a git that takes the worktree's repository from its .git
// file runs the filter when it checks a file out. It returns the proof
// file's path.
func plantGitDir(t *testing.T, r *repo, dir string) string {
	t.Helper()
	evil := t.TempDir()
	proof := filepath.Join(t.TempDir(), "proof")
	r.git(evil, "init", "-q", "-b", "main")
	r.write(evil, ".git/objects/info/alternates", filepath.Join(r.top, ".git", "objects")+"\n")
	r.write(evil, ".git/info/attributes", "* filter=evil\n")
	r.git(evil, "config", "filter.evil.smudge", "touch "+proof+"; cat")
	r.git(evil, "config", "filter.evil.required", "true")
	r.write(dir, ".git", "gitdir: "+filepath.Join(evil, ".git")+"\n")
	return proof
}

// Attack 1a: the integration worktree's .git file swapped for one naming
// a repository with a filter, right after the queue checked the worktree
// (what an agent that could write there would time with inotify). Every
// git the queue runs names the worktree's git dir from the repository's
// records, so the filter never runs and the landing is the project's.
func TestLandingNeverReadsTheWorktreeGitFile(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	r.commit(r.agent("b"), "b.txt", "b\n", "b")
	q := r.open(r.options())
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("a: %s %q", got.State, got.Error)
	}
	integ := filepath.Join(r.worktrees(), IntegrationName)
	var proof string
	q.afterCheck = func() {
		if proof == "" {
			proof = plantGitDir(t, r, integ)
		}
	}
	got := r.land(q, r.enqueue(q, "b").ID)
	if proof == "" {
		t.Fatal("the integration worktree was never checked")
	}
	if _, err := os.Stat(proof); err == nil {
		t.Fatal("the filter of the repository the swapped .git file names ran")
	}
	if got.State != Landed || r.read(r.top, "b.txt") != "b\n" {
		t.Fatalf("b: %s %q", got.State, got.Error)
	}
	// The next landing finds the worktree tampered with and makes it
	// again, the filter still not run.
	r.commit(filepath.Join(r.worktrees(), "a"), "a2.txt", "a2\n", "a2")
	q.afterCheck = nil
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("a again: %s %q", got.State, got.Error)
	}
	if _, err := os.Stat(proof); err == nil {
		t.Fatal("the filter ran when the worktree was made again")
	}
	if b, err := os.ReadFile(filepath.Join(integ, ".git")); err != nil || !strings.Contains(string(b), filepath.Join(r.top, ".git", "worktrees")) {
		t.Fatalf("the integration worktree was not made again: %q %v", b, err)
	}
}

// Attack 1b: a tampered integration worktree that cannot be removed (a
// directory written to while it is removed: "directory not empty") does
// not leave the landing waiting: it is set aside, the worktree made
// again, and what was set aside goes at a later landing.
func TestTamperedIntegrationWorktreeClearedWhenNotRemovable(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	r.commit(r.agent("b"), "b.txt", "b\n", "b")
	q := r.open(r.options())
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("a: %s %q", got.State, got.Error)
	}
	integ := filepath.Join(r.worktrees(), IntegrationName)
	r.write(integ, ".git", "gitdir: /nowhere\n")
	r.write(integ, "planted/x", "x\n")
	fails := 0
	q.removeAll = func(string) error {
		fails++
		return errors.New("unlinkat: directory not empty")
	}
	if got := r.land(q, r.enqueue(q, "b").ID); got.State != Landed {
		t.Fatalf("b: %s %q", got.State, got.Error)
	}
	if fails == 0 {
		t.Fatal("the tampered worktree was not cleared")
	}
	if _, err := os.Stat(filepath.Join(integ, "planted")); err == nil {
		t.Fatal("the planted file is still in the integration worktree")
	}
	aside, _ := filepath.Glob(filepath.Join(r.worktrees(), clearedPrefix+"*"))
	if len(aside) != 1 {
		t.Fatalf("set aside: %v", aside)
	}
	q.removeAll = os.RemoveAll
	r.commit(filepath.Join(r.worktrees(), "a"), "a2.txt", "a2\n", "a2")
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("a again: %s %q", got.State, got.Error)
	}
	if aside, _ := filepath.Glob(filepath.Join(r.worktrees(), clearedPrefix+"*")); len(aside) != 0 {
		t.Fatalf("still set aside: %v", aside)
	}
}
