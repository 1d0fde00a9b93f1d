package workspaces

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// legacy makes agent's worktree where an earlier batty kept it, in the
// project's .batty/worktrees, with a commit and uncommitted work, and
// returns its directory.
func (f *fixture) legacy(agent string) string {
	f.t.Helper()
	dir := filepath.Join(f.top, ".batty", "worktrees", agent)
	f.git(f.top, "worktree", "add", "-q", "-b", Branch(agent), dir, "main")
	writeFile(f.t, filepath.Join(dir, "done.txt"), "committed\n")
	f.git(dir, "add", "done.txt")
	userCommit(f.t, f.env, dir, "work of "+agent)
	writeFile(f.t, filepath.Join(dir, "wip.txt"), "not committed yet\n")
	return dir
}

func TestMoveWorktreesFromTheProject(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	old := filepath.Join(f.top, ".batty", "worktrees")
	eng := f.legacy("eng")
	tip := f.rev(Branch("eng"))
	// The merge queue's scratch worktree, and something not a worktree.
	f.git(f.top, "worktree", "add", "-q", "--detach", filepath.Join(old, ".landing"), "main")
	writeFile(t, filepath.Join(old, "notes", "keep.txt"), "the user's\n")

	m, err := f.repo.MoveWorktrees(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Agents, ",") != "eng" || strings.Join(m.Removed, ",") != ".landing" || strings.Join(m.Left, ",") != "notes" {
		t.Fatalf("MoveWorktrees = %+v", m)
	}
	to := f.repo.Path("eng")
	if exists(eng) || readFile(t, filepath.Join(to, "wip.txt")) != "not committed yet\n" {
		t.Fatalf("the worktree and its uncommitted work are not at %s", to)
	}
	if exists(filepath.Join(old, ".landing")) || readFile(t, filepath.Join(old, "notes", "keep.txt")) != "the user's\n" {
		t.Fatal("the scratch worktree stayed or the user's directory went")
	}
	list := f.git(f.top, "worktree", "list", "--porcelain")
	if !strings.Contains(list, "worktree "+to+"\n") || strings.Contains(list, old) {
		t.Fatalf("git's records:\n%s", list)
	}
	// The moved worktree is batty's as before: its state, its commit.
	st, err := f.repo.State(ctx, "eng", "main")
	if err != nil || !st.Exists || st.Dirty != 1 || st.Ahead != 1 {
		t.Fatalf("State = %+v, %v", st, err)
	}
	if f.commit("eng", "after the move") == tip {
		t.Fatal("no commit")
	}
	// Idempotent; an old directory left empty is removed.
	if err := os.RemoveAll(filepath.Join(old, "notes")); err != nil {
		t.Fatal(err)
	}
	if m, err := f.repo.MoveWorktrees(ctx, old); err != nil || len(m.Agents)+len(m.Left)+len(m.Removed) != 0 || exists(old) {
		t.Fatalf("again: %+v %v (old there: %v)", m, err, exists(old))
	}
	if m, err := f.repo.MoveWorktrees(ctx, old); err != nil || len(m.Agents) != 0 {
		t.Fatalf("nothing there: %+v %v", m, err)
	}
}

func TestMoveWorktreesRefuses(t *testing.T) {
	ctx := context.Background()
	t.Run("both places", func(t *testing.T) {
		f := newFixture(t, Options{})
		old := filepath.Join(f.top, ".batty", "worktrees")
		f.legacy("eng")
		f.ensure("ops")
		if err := os.MkdirAll(f.repo.Path("eng"), 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := f.repo.MoveWorktrees(ctx, old)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(old, "eng")) || !strings.Contains(err.Error(), f.repo.Path("eng")) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("gitdir elsewhere", func(t *testing.T) {
		f := newFixture(t, Options{})
		old := filepath.Join(f.top, ".batty", "worktrees")
		eng := f.legacy("eng")
		writeFile(t, filepath.Join(eng, ".git"), "gitdir: "+filepath.Join(t.TempDir(), ".git")+"\n")
		_, err := f.repo.MoveWorktrees(ctx, old)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(eng, ".git")) || !strings.Contains(err.Error(), "repair") {
			t.Fatalf("err = %v", err)
		}
		if !exists(filepath.Join(eng, "wip.txt")) {
			t.Fatal("the worktree was touched")
		}
	})
	t.Run("link", func(t *testing.T) {
		f := newFixture(t, Options{})
		old := filepath.Join(f.top, ".batty", "worktrees")
		if err := os.MkdirAll(filepath.Dir(old), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(t.TempDir(), old); err != nil {
			t.Fatal(err)
		}
		if _, err := f.repo.MoveWorktrees(ctx, old); err == nil || !strings.Contains(err.Error(), old) {
			t.Fatalf("err = %v", err)
		}
	})
}

// A worktree's .git file replaced with one naming a repository whose
// configuration runs a filter: batty's commit, status and diff of that
// worktree never take the repository from it, so the filter never runs.
func TestWorktreeGitFileNeverRead(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "work.txt"), "work\n")
	evil := t.TempDir()
	proof := filepath.Join(t.TempDir(), "proof")
	f.git(evil, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(evil, ".git", "objects", "info", "alternates"), filepath.Join(f.top, ".git", "objects")+"\n")
	writeFile(t, filepath.Join(evil, ".git", "info", "attributes"), "* filter=evil\n")
	f.git(evil, "config", "filter.evil.clean", "touch "+proof+"; cat")
	f.git(evil, "config", "filter.evil.smudge", "touch "+proof+"; cat")
	f.git(evil, "config", "core.fsmonitor", "touch "+proof)
	writeFile(t, filepath.Join(path, ".git"), "gitdir: "+filepath.Join(evil, ".git")+"\n")

	if _, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s", MessageID: "m"}); err == nil {
		t.Error("Commit took the worktree whose .git file names another repository")
	}
	if _, err := f.repo.State(ctx, "eng", "main"); err != nil {
		t.Logf("State: %v", err)
	}
	var diff strings.Builder
	if err := f.repo.Diff(ctx, "eng", "main", &diff, false); err != nil {
		t.Logf("Diff: %v", err)
	}
	if admin, err := WorktreeGitDir(f.repo.GitDir(), path); err != nil || admin != "" {
		t.Errorf("WorktreeGitDir = %q, %v: want none for a tampered worktree", admin, err)
	}
	noMarker(t, proof, "commit, status and diff")
}
