package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/blame"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
)

// The real Codex CLI on both runtimes: each engineer writes a file of its
// own through the shell tool, batty commits its turn, the branch lands on
// main through the merge queue. `batty blame` of a landed line names the
// agent, the message (its id, from the human, its text), the turn's
// thread and the landing request; `batty show` of the message names the
// commit, its landing and its file, and `batty show` of the commit the
// message.
func TestE2EBlameNamesTheAgentAndMessage(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := newTeamRun(t, "e2e-blame")
	r.writeTeam(fmt.Sprintf(`name: e2e-blame
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
workspace:
  verify: test -s base.txt
%sroles:
  - name: eng
    workspace: worktree
  - name: warm
    workspace: worktree
    codex:
      runtime: app-server
`, codexBin, home, sandboxOrOff(t)))
	for name, text := range map[string]string{"base.txt": "base\n", ".gitignore": ".batty/\n"} {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, r.dir, "init", "-q", "-b", "main")
	gitIn(t, r.dir, "add", "-A")
	gitIn(t, r.dir, "commit", "-q", "-m", "initial")
	srv.Handle(func(req codextest.Request) codextest.Reply {
		if req.FollowUp {
			return codextest.ShellDoneReply(req)
		}
		text := req.LastUserText()
		for _, a := range []string{"eng", "warm"} {
			if strings.Contains(text, "[[write "+a+"]]") {
				return codextest.Reply{Shell: "printf 'first\\nwritten by " + a + "\\n' > " + a + ".txt"}
			}
		}
		return codextest.TextReply("NOTED")
	})
	r.must("start", "--no-tmux")
	ids := map[string]string{}
	for _, a := range []string{"eng", "warm"} {
		out := r.must("send", a, "please [[write "+a+"]] <b>now</b>")
		f := strings.Fields(out)
		if len(f) < 2 || f[0] != "queued" {
			t.Fatalf("send: %q", out)
		}
		ids[a] = f[1]
	}
	r.waitStatus("both turns committed", func(st control.Status) bool {
		for _, a := range []string{"eng", "warm"} {
			ws := agentStatus(st, a).Workspace
			if agentStatus(st, a).TurnsCompleted < 1 || ws == nil || ws.Ahead != 1 {
				return false
			}
		}
		return true
	})
	for i, a := range []string{"eng", "warm"} {
		r.must("merge", a)
		r.waitStatus(a+" landed", func(st control.Status) bool {
			return len(st.Landings) > i && st.Landings[i].State == "landed"
		})
	}
	st := r.status()
	for i, a := range []string{"eng", "warm"} {
		var res blame.Result
		if err := json.Unmarshal([]byte(r.must("blame", a+".txt:2", "--json")), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Lines) != 1 || res.Lines[0].Text != "written by "+a || len(res.Commits) != 1 {
			t.Fatalf("blame of %s.txt:2: %+v", a, res)
		}
		c := res.Commits[0]
		if c.Agent != a || c.MessageID != ids[a] || !c.Made || c.Turn == nil || c.Turn.From != "human" ||
			!strings.Contains(c.Turn.Text, "<b>now</b>") || c.Turn.Thread == "" {
			t.Fatalf("blame of %s.txt:2: commit %+v turn %+v", a, c, c.Turn)
		}
		if c.Landing == nil || c.Landing.Request != st.Landings[i].ID || c.Landing.Agent != a || c.Landing.Merge != st.Landings[i].Commit {
			t.Fatalf("blame of %s.txt:2: landing %+v, want request %+v", a, c.Landing, st.Landings[i])
		}
		// The text: the agent, the message, escaped.
		text := r.must("blame", a+".txt")
		if !strings.Contains(text, "made by "+a+" in the turn of message "+ids[a]) || !strings.Contains(text, "landing request "+st.Landings[i].ID) {
			t.Fatalf("batty blame %s.txt:\n%s", a, text)
		}
		var sh blame.Shown
		if err := json.Unmarshal([]byte(r.must("show", ids[a], "--json")), &sh); err != nil {
			t.Fatal(err)
		}
		if len(sh.Turns) != 1 || len(sh.Commits) != 1 || sh.Commits[0].SHA != c.SHA || sh.Commits[0].Landing == nil ||
			len(sh.Commits[0].Files) != 1 || sh.Commits[0].Files[0] != a+".txt" {
			t.Fatalf("show %s: %+v", ids[a], sh)
		}
		if err := json.Unmarshal([]byte(r.must("show", c.SHA[:10], "--json")), &sh); err != nil {
			t.Fatal(err)
		}
		if sh.MessageID != ids[a] || len(sh.Turns) != 1 || sh.Turns[0].Agent != a {
			t.Fatalf("show %s: %+v", c.SHA[:10], sh)
		}
	}
}
