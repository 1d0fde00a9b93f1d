package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// A project whose worktrees an earlier batty kept in the project
// (.batty/worktrees/<agent>, where agents sharing the checkout could
// write them) keeps working: `batty diff` and `batty start` move each
// worktree into the state directory with git worktree move — its commits
// and uncommitted work with it — and drop the merge queue's scratch
// worktree; the agent then works and commits there.
func TestLegacyWorktreesMovedIntoTheStateDirectory(t *testing.T) {
	dir, l := newGitProject(t)
	env := gitTestEnv(dir)
	old := filepath.Join(dir, ".batty", "worktrees")
	eng1, eng2 := filepath.Join(old, "engineer-1"), filepath.Join(old, "engineer-2")
	gitIn(t, dir, "worktree", "add", "-q", "-b", "batty/engineer-1", eng1, "main")
	if err := os.WriteFile(filepath.Join(eng1, "done.txt"), []byte("done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, eng1, "add", "done.txt")
	gitIn(t, eng1, "commit", "-q", "-m", "earlier work")
	if err := os.WriteFile(filepath.Join(eng1, "wip.txt"), []byte("half done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "worktree", "add", "-q", "-b", "batty/engineer-2", eng2, "main")
	gitIn(t, dir, "worktree", "add", "-q", "--detach", filepath.Join(old, ".landing"), "main")

	// An offline command that works on the worktrees moves them.
	out, errOut, code := runBattyIn(t, dir, env, "", "diff", "--stat", "engineer-1")
	wt1 := filepath.Join(l.WorktreesDir(), "engineer-1")
	if code != 0 || !strings.Contains(out, "done.txt") || !strings.Contains(out, "note: 1 path in "+wt1+" not committed") {
		t.Fatalf("diff: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the old worktrees directory is still there: %v", err)
	}
	list := gitIn(t, dir, "worktree", "list", "--porcelain")
	if !strings.Contains(list, "worktree "+wt1+"\n") || !strings.Contains(list, "worktree "+filepath.Join(l.WorktreesDir(), "engineer-2")+"\n") || strings.Contains(list, old) {
		t.Fatalf("git's records:\n%s", list)
	}

	// The same again, this time at start, for a worktree the daemon
	// moves; the agent's next turn commits there.
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "worktree", "move", wt1, eng1)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "1s") })
	if out, errOut, code := runBattyIn(t, dir, env, "", "start", "--no-tmux"); code != 0 {
		log, _ := os.ReadFile(l.DaemonLog())
		t.Fatalf("start: exit %d\n%s%s\ndaemon.log:\n%s", code, out, errOut, log)
	}
	mustSend(t, dir, nil, "", "engineer-1", "scenario:write:notes.txt=after-the-move")
	st := waitJSONStatus(t, dir, "engineer-1's turn committed", func(st control.Status) bool {
		a := agentStatus(st, "engineer-1")
		return a.TurnsCompleted == 1 && a.Workspace != nil && a.Workspace.Dirty == 0 && a.Workspace.Ahead >= 2
	})
	if ws := agentStatus(st, "engineer-1").Workspace; ws.Path != wt1 || !ws.Exists {
		t.Fatalf("engineer-1's workspace: %+v", ws)
	}
	for _, f := range []string{"done.txt", "wip.txt", "notes.txt"} {
		gitIn(t, dir, "cat-file", "-e", "batty/engineer-1:"+f)
	}
	if _, err := os.Stat(eng1); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still in the project: %v", err)
	}
}
