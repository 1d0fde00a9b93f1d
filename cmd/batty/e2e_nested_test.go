package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
)

// With the real Codex CLI, a worktree agent in codex's workspace-write
// sandbox makes a git repository of its own in its worktree, whose
// fsmonitor hook is a command of its choosing (the sandbox lets it: only
// the worktree's top-level .git is protected). batty's git runs outside
// the sandbox, as the user: after the turn's commit, `batty status` and
// `batty diff` the command has still not run, the nested repository is
// not on the agent's branch, and the agent is told why.
func TestE2ENestedRepositoryRunsNothingOutsideTheSandbox(t *testing.T) {
	r, _, codexBin, home := sandboxedRun(t, "nested", gitTestEnv(t.TempDir())...)
	// Outside every writable root of the sandbox (/tmp is taken out):
	// only a process outside it can make the marker.
	marker := filepath.Join(t.TempDir(), "ran-outside-the-sandbox")
	team := fmt.Sprintf(`name: nested
%sroles:
  - name: eng
    workspace: worktree
`, sandboxedCodex(codexBin, home))
	initRepo(t, r.dir, map[string]string{"team.yaml": team, "README": "base\n", ".gitignore": ".batty/\n"})
	r.must("start", "--no-tmux")

	shell := "git init -q sub && git -C sub -c user.name=a -c user.email=a@x commit -q --allow-empty -m own && " +
		"echo lib > sub/lib.txt && git -C sub add lib.txt && " +
		"git -C sub config core.fsmonitor 'touch " + marker + "' && echo top > top.txt && echo planted"
	r.must("send", "eng", "[[mock:shell "+shell+"]]")
	r.waitStatus("the turn committed", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.LastError != "" || a.TurnsCompleted >= 1 && a.Workspace != nil && a.Workspace.Ahead == 1
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent's fsmonitor hook ran outside the sandbox (after the turn's commit)")
	}
	worktree := filepath.Join(layoutOf(t, r.dir).WorktreesDir(), "eng")
	if _, err := os.Stat(filepath.Join(worktree, "sub", ".git", "config")); err != nil {
		t.Fatalf("the agent's shell did not make its repository in the sandbox: %v", err)
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"diff", "eng"}, {"diff", "--stat", "eng"}} {
		r.must(args...)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the agent's fsmonitor hook ran outside the sandbox (after batty %s)", strings.Join(args, " "))
		}
	}
	tree := gitIn(t, r.dir, "ls-tree", "-r", "--name-only", "batty/eng")
	if !strings.Contains(tree, "top.txt") || strings.Contains(tree, "sub") {
		t.Fatalf("batty/eng's tree:\n%s\nwant top.txt and not the nested repository", tree)
	}
	// The agent is told, once, in a message: its next turn.
	r.waitStatus("the note's turn", func(st control.Status) bool {
		return agentStatus(st, "eng").TurnsCompleted >= 2
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent's fsmonitor hook ran outside the sandbox (after the note's turn)")
	}
	l, err := project.LayoutFor(filepath.Join(r.dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	events, _ := os.ReadFile(l.EventsLog())
	warned := 0
	for _, line := range strings.Split(string(events), "\n") {
		if e, err := eventlog.Decode([]byte(line)); err == nil && e.Type == eventlog.EvWarning && strings.Contains(e.Detail, "nested git repositories not committed: sub") {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("%d warnings of the nested repository, want 1; events:\n%s", warned, events)
	}
}
