package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
)

// With the real Codex CLI, a worktree agent commits a check that verify
// runs, and the check writes outside the merge's worktree: into the
// user's home and the project's checkout. verify runs inside Codex's
// sandbox, so neither write happens, the landing fails, main stays, and
// the failure names the setting that would allow a write.
func TestE2EVerifyRunsAnAgentsCodeInTheSandbox(t *testing.T) {
	userHome, state := t.TempDir(), t.TempDir()
	r, srv, codexBin, home := sandboxedRun(t, "verify-attack", "HOME="+userHome, project.EnvStateHome+"="+state)
	team := fmt.Sprintf(`name: verifyattack
%sworkspace:
  verify: sh check.sh
roles:
  - name: eng
    workspace: worktree
`, sandboxedCodex(codexBin, home))
	initRepo(t, r.dir, map[string]string{"team.yaml": team, "check.sh": "true\n", ".gitignore": ".batty/\n"})
	homeTarget, projectTarget := filepath.Join(userHome, "pwned"), filepath.Join(r.dir, "pwned")
	check := fmt.Sprintf(`echo pwned > %s && echo pwned > %s`, homeTarget, projectTarget)
	srv.Handle(func(req codextest.Request) codextest.Reply {
		if req.FollowUp {
			return codextest.ShellDoneReply(req)
		}
		if strings.Contains(req.LastUserText(), "[[plant]]") {
			return codextest.Reply{Shell: "printf '%s\\n' '" + check + "' > check.sh"}
		}
		return codextest.TextReply("NOTED")
	})
	r.must("start", "--no-tmux")
	r.must("send", "eng", "[[plant]]")
	r.waitStatus("the turn committed", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.TurnsCompleted == 1 && a.Workspace != nil && a.Workspace.Ahead == 1 && a.Workspace.Dirty == 0
	})
	if got := gitIn(t, r.dir, "show", "batty/eng:check.sh"); !strings.Contains(got, "pwned") {
		t.Fatalf("the agent's check was not committed: %q", got)
	}
	main := gitIn(t, r.dir, "rev-parse", "main")
	r.must("merge", "eng")
	r.waitStatus("the landing failed", func(st control.Status) bool {
		return len(st.Landings) > 0 && st.Landings[len(st.Landings)-1].State == "failed"
	})
	for _, p := range []string{homeTarget, projectTarget} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("verify wrote %s, outside the merge's worktree", p)
		}
	}
	if now := gitIn(t, r.dir, "rev-parse", "main"); now != main {
		t.Fatal("a red verify moved main")
	}
	events, _ := os.ReadFile(project.LayoutIn(state, r.dir).EventsLog())
	var failed eventlog.Event
	for _, line := range strings.Split(string(events), "\n") {
		if e, err := eventlog.Decode([]byte(line)); err == nil && e.Type == eventlog.EvLandingFailed {
			failed = e
		}
	}
	if !strings.Contains(failed.Detail, "workspace.sandbox") {
		t.Fatalf("landing_failed %+v does not name the sandbox's setting", failed)
	}
}
