package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
)

// With the real Codex CLI, two engineers edit the same file, each in its
// own worktree through the shell tool as a real model does; batty commits
// each turn on the engineer's branch. The first branch lands on main (the
// user's clean checkout comes along); the second conflicts: main is left as
// it was, and the engineer is told which file.
func TestE2EWorktreesLandTheFirstAndTellTheSecond(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-worktree-%d", time.Now().UnixNano())}
	team := fmt.Sprintf(`name: wt
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
workspace:
  verify: test -s shared.txt
%sroles:
  - name: eng
    instances: 2
    workspace: worktree
`, codexBin, home, sandboxOrOff(t))
	for name, text := range map[string]string{"team.yaml": team, "shared.txt": "base\n", ".gitignore": ".batty/\n"} {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, r.dir, "init", "-q", "-b", "main")
	gitIn(t, r.dir, "add", "-A")
	gitIn(t, r.dir, "commit", "-q", "-m", "initial")

	// Each engineer writes shared.txt with the word its message names.
	srv.Handle(func(req codextest.Request) codextest.Reply {
		if req.FollowUp {
			return codextest.ShellDoneReply(req)
		}
		text := req.LastUserText()
		for _, word := range []string{"one", "two"} {
			if strings.Contains(text, "[[write "+word+"]]") {
				return codextest.Reply{Shell: "printf '" + word + "\\n' > shared.txt && pwd"}
			}
		}
		return codextest.TextReply("NOTED")
	})
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	r.must("start", "--no-tmux")
	r.must("send", "eng-1", "[[write one]]")
	r.must("send", "eng-2", "[[write two]]")
	r.waitStatus("both turns committed", func(st control.Status) bool {
		for _, name := range []string{"eng-1", "eng-2"} {
			ws := agentStatus(st, name).Workspace
			if agentStatus(st, name).TurnsCompleted < 1 || ws == nil || ws.Ahead != 1 || ws.Dirty != 0 {
				return false
			}
		}
		return true
	})
	for name, want := range map[string]string{"eng-1": "one", "eng-2": "two"} {
		if got := gitIn(t, r.dir, "show", "batty/"+name+":shared.txt"); got != want {
			t.Fatalf("batty/%s holds %q, want %q", name, got, want)
		}
		if b, _ := os.ReadFile(filepath.Join(r.dir, "shared.txt")); string(b) != "base\n" {
			t.Fatalf("an engineer edited the project's checkout: %q", b)
		}
	}

	r.must("merge", "eng-1")
	st := r.waitStatus("eng-1 landed", func(st control.Status) bool {
		return len(st.Landings) > 0 && st.Landings[len(st.Landings)-1].State == "landed"
	})
	main := gitIn(t, r.dir, "rev-parse", "main")
	if l := st.Landings[len(st.Landings)-1]; l.Agent != "eng-1" || l.Commit != main {
		t.Fatalf("landing %+v, main %s", l, main)
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "shared.txt")); string(b) != "one\n" {
		t.Fatalf("the user's checkout after the landing: %q", b)
	}

	r.must("merge", "eng-2")
	r.waitStatus("eng-2's landing failed", func(st control.Status) bool {
		return len(st.Landings) > 1 && st.Landings[len(st.Landings)-1].State == "failed"
	})
	if now := gitIn(t, r.dir, "rev-parse", "main"); now != main {
		t.Fatalf("a failed landing moved main")
	}
	l, err := project.LayoutFor(filepath.Join(r.dir, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	events, _ := os.ReadFile(l.EventsLog())
	var failed eventlog.Event
	for _, line := range strings.Split(string(events), "\n") {
		if e, err := eventlog.Decode([]byte(line)); err == nil && e.Type == eventlog.EvLandingFailed {
			failed = e
		}
	}
	if !strings.Contains(failed.Detail, "shared.txt") {
		t.Fatalf("landing_failed %+v does not name the file", failed)
	}
	store, err := inbox.Open(l.Inboxes())
	if err != nil {
		t.Fatal(err)
	}
	box, err := store.Box("eng-2")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pending, _ := box.Pending()
		inflight, _ := box.InFlight()
		done, _ := box.Done(0)
		told := false
		for _, m := range append(append(pending, inflight...), done...) {
			if strings.Contains(m.Body, "conflicts with") && strings.Contains(m.Body, "shared.txt") {
				told = true
			}
		}
		if told {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("eng-2 was not told of the conflict")
		}
		time.Sleep(50 * time.Millisecond) // the daemon delivers it
	}
}

// sandboxOrOff is what a test's team file adds to its workspace mapping:
// nothing where Codex's sandbox runs here (verify and setup run in it, as
// by default), else `sandbox: off`, saying so.
func sandboxOrOff(t testing.TB) string {
	t.Helper()
	if _, err := codextest.SandboxBinary(); err != nil {
		t.Logf("verify and setup run without a sandbox: %v", err)
		return "  sandbox: off\n"
	}
	return ""
}
