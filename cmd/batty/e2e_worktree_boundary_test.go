package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
)

// With the real Codex CLI in its workspace-write sandbox, an agent that
// works in the project's checkout (the architect) tries, through its
// shell, to write into another agent's worktree (a file and a
// .codex/config.toml naming a program) and into the merge queue's
// worktree (its .git file and a file), at the paths it can compute from
// $BATTY_DIR. The worktrees are in the state directory, out of its
// writable roots: every write fails, the other agent's next turn commits
// none of it on its branch, and the next landing lands only that agent's
// work.
func TestE2ESharedCheckoutAgentCannotWriteOtherWorktrees(t *testing.T) {
	state, err := os.MkdirTemp("", "st") // short: the control socket's path must fit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	r, _, codexBin, home := sandboxedRun(t, "wt-boundary", project.EnvStateHome+"="+state)
	team := fmt.Sprintf(`name: boundary
%sroles:
  - name: architect
  - name: eng
    workspace: worktree
`, sandboxedCodex(codexBin, home))
	initRepo(t, r.dir, map[string]string{"team.yaml": team, "README": "base\n", ".gitignore": ".batty/\n"})
	l := project.LayoutIn(state, r.dir)
	engWT, landingWT := filepath.Join(l.WorktreesDir(), "eng"), filepath.Join(l.WorktreesDir(), ".landing")
	r.must("start", "--no-tmux")

	r.must("send", "eng", "[[mock:shell echo one > one.txt && echo WROTE-ONE]]")
	r.waitStatus("eng's first turn committed", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.TurnsCompleted == 1 && a.Workspace != nil && a.Workspace.Ahead == 1 && a.Workspace.Dirty == 0
	})
	r.must("merge", "eng")
	r.waitStatus("the first landing", func(st control.Status) bool {
		return len(st.Landings) == 1 && st.Landings[0].State == "landed"
	})
	if _, err := os.Stat(filepath.Join(landingWT, ".git")); err != nil {
		t.Fatalf("no merge queue's worktree at %s: %v", landingWT, err)
	}
	landingGit, _ := os.ReadFile(filepath.Join(landingWT, ".git"))

	var script []string
	for _, w := range []string{`"$BATTY_DIR/worktrees"`, l.WorktreesDir()} {
		script = append(script,
			`{ echo planted > `+w+`/eng/planted.txt; } 2>/dev/null && echo WROTE-ENG`,
			`{ mkdir -p `+w+`/eng/.codex && printf '[mcp_servers.x]\ncommand = "/bin/sh"\n' > `+w+`/eng/.codex/config.toml; } 2>/dev/null && echo WROTE-CODEX`,
			`{ printf 'gitdir: /nonexistent\n' > `+w+`/.landing/.git; } 2>/dev/null && echo WROTE-LANDING-GIT`,
			`{ echo planted > `+w+`/.landing/planted.txt; } 2>/dev/null && echo WROTE-LANDING`)
	}
	script = append(script, `echo own > architect.txt && echo WROTE-OWN`)
	r.must("send", "architect", "[[mock:shell "+strings.Join(script, "; ")+"]]")
	r.waitStatus("the architect's turn", func(st control.Status) bool {
		return agentStatus(st, "architect").TurnsCompleted == 1
	})
	reply := r.must("inbox", "--json")
	if !strings.Contains(reply, "WROTE-OWN") {
		t.Fatalf("the architect's shell did not run or could not write its own checkout:\n%s", reply)
	}
	for _, bad := range []string{"WROTE-ENG", "WROTE-CODEX", "WROTE-LANDING"} {
		if strings.Contains(reply, bad) {
			t.Fatalf("the architect's sandbox let it write another agent's or the queue's worktree (%s):\n%s", bad, reply)
		}
	}
	// (Not .codex itself: Codex's own sandbox of eng makes an empty,
	// read-only .codex, .agents and .aws at the top of eng's writable
	// root while a command runs, and removes them after.)
	for _, p := range []string{filepath.Join(engWT, "planted.txt"), filepath.Join(engWT, ".codex", "config.toml"), filepath.Join(landingWT, "planted.txt")} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s was written", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(landingWT, ".git")); string(b) != string(landingGit) {
		t.Fatalf("the merge queue's .git file changed: %q", b)
	}

	// eng's next turn commits its own work only; the landing lands it.
	r.must("send", "eng", "[[mock:shell echo two > two.txt && echo WROTE-TWO]]")
	r.waitStatus("eng's second turn committed", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.TurnsCompleted == 2 && a.Workspace != nil && a.Workspace.Ahead == 1 && a.Workspace.Dirty == 0
	})
	tree := gitIn(t, r.dir, "ls-tree", "-r", "--name-only", "batty/eng")
	if strings.Contains(tree, "planted") || strings.Contains(tree, ".codex") || !strings.Contains(tree, "two.txt") {
		t.Fatalf("batty/eng holds:\n%s", tree)
	}
	r.must("merge", "eng")
	r.waitStatus("the second landing", func(st control.Status) bool {
		return len(st.Landings) == 2 && st.Landings[1].State == "landed"
	})
	if main := gitIn(t, r.dir, "ls-tree", "-r", "--name-only", "main"); strings.Contains(main, "planted") || !strings.Contains(main, "two.txt") {
		t.Fatalf("main holds:\n%s", main)
	}
}
