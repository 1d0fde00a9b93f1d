package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project/projecttest"
)

// preflightProject is a project in a temp dir whose one agent, eng, runs
// the codex at bin (the fake codex once it exists) with CODEX_HOME home
// ("" = inherited) and env lines added to codex.env.
type preflightProject struct {
	t    *testing.T
	dir  string
	env  []string
	mark string
}

func newPreflightProject(t *testing.T, bin, home string, env ...string) *preflightProject {
	t.Helper()
	p := &preflightProject{t: t, dir: t.TempDir(), mark: fmt.Sprintf("preflight-%d", time.Now().UnixNano())}
	p.env = []string{"BATTY_TEST_MARK=" + p.mark, "OPENAI_API_KEY=", "CODEX_API_KEY=", "OPENAI_BASE_URL="}
	yaml := fmt.Sprintf(`name: pf
codex:
  bin: %s
  codex_home: %q
  env:
    BATTY_TEST_ROLE: fakecodex
    FAKE_CODEX_STATE: %s
`, bin, home, t.TempDir())
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		yaml += fmt.Sprintf("    %s: %q\n", k, v)
	}
	yaml += "timeouts:\n  shutdown: 5s\nroles:\n  - name: eng\n"
	if err := os.WriteFile(filepath.Join(p.dir, "team.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.batty("stop")
		codextest.AssertNoMarked(t, p.mark)
	})
	return p
}

func (p *preflightProject) batty(args ...string) (string, string, int) {
	p.t.Helper()
	return runBattyIn(p.t, p.dir, p.env, "", args...)
}

func (p *preflightProject) status() control.AgentStatus {
	p.t.Helper()
	out, errOut, code := p.batty("status", "--json")
	var st control.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Agents) != 1 {
		p.t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	return st.Agents[0]
}

// waitStatus reads `batty status --json` again (the daemon is another
// process) until ok holds, up to a minute.
func (p *preflightProject) waitStatus(what string, ok func(control.AgentStatus) bool) control.AgentStatus {
	p.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		a := p.status()
		if ok(a) {
			return a
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(layoutOf(p.t, p.dir).Dir, "daemon.log"))
			p.t.Fatalf("no %s within a minute: %+v\ndaemon log:\n%s", what, a, log)
		}
		time.Sleep(50 * time.Millisecond) // another process owns the state
	}
}

// `batty start` with a codex that does not exist starts the team, says on
// the terminal what is wrong and how to fix it, and parks the agent: a
// message waits (not consumed), status says why, and once the binary is
// there the message runs without a restart.
func TestStartWithoutCodexSaysHowToFixIt(t *testing.T) {
	self := projecttest.Executable(t)
	bin := filepath.Join(projecttest.TempProgramDir(t), "codex")
	p := newPreflightProject(t, bin, "", "CODEX_API_KEY=fake")
	out, errOut, code := p.batty("start")
	want := "batty: warning: eng parked: codex not found at " + bin + " — install it: npm install -g @openai/codex@" + codex.Version
	if code != 0 || !strings.Contains(out, `team "pf" running`) || !strings.Contains(errOut, want) || !strings.Contains(errOut, "`batty doctor`") {
		t.Fatalf("start: exit %d\nstdout %s\nstderr %s\nwant %q and a pointer to batty doctor", code, out, errOut, want)
	}
	a := p.status()
	if a.State != "parked" || a.Parked == nil || a.Parked.Kind != "codex_missing" || !strings.Contains(a.LastError, "codex not found at "+bin) {
		t.Fatalf("status %+v (%+v)", a, a.Parked)
	}
	table, _, _ := p.batty("status")
	if !strings.Contains(table, "eng parked: codex not found at "+bin+" — install it") {
		t.Fatalf("status table lacks the problem:\n%s", table)
	}

	sendOut, errOut, code := p.batty("send", "eng", "hello")
	if code != 0 {
		t.Fatalf("send: exit %d %s", code, errOut)
	}
	id := strings.Fields(sendOut)[1]
	p.waitStatus("the message seen", func(a control.AgentStatus) bool { return a.Backlog == 1 })
	box := filepath.Join(layoutOf(p.t, p.dir).Dir, "inboxes", "eng")
	if _, err := os.Stat(filepath.Join(box, "new", id+".json")); err != nil {
		t.Fatalf("the message is not waiting in new/: %v", err)
	}
	if des, _ := os.ReadDir(filepath.Join(box, "done")); len(des) != 0 {
		t.Fatalf("done/ holds %d entries while codex is missing", len(des))
	}
	if out, _, code := p.batty("resume"); code != 0 || !strings.Contains(out, "checking the codex of eng again") {
		t.Fatalf("resume: exit %d, %q", code, out)
	}

	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	a = p.waitStatus("the message to complete", func(a control.AgentStatus) bool { return a.TurnsCompleted == 1 })
	if a.State == "parked" || a.Parked != nil || a.LastError != "" {
		t.Fatalf("status after the binary appeared %+v", a)
	}
}

// A codex whose provider needs an OpenAI login and that is not logged in:
// start says to run `codex login` with the agent's CODEX_HOME; logging in
// releases the agent.
func TestStartNotLoggedInSaysToLogIn(t *testing.T) {
	self := projecttest.Executable(t)
	home := t.TempDir()
	p := newPreflightProject(t, self, home)
	_, errOut, code := p.batty("start")
	want := "eng parked: codex is not logged in (CODEX_HOME " + home + ", model provider openai) — run: CODEX_HOME=" + home + " codex login"
	if code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("start: exit %d\nstderr %s\nwant %q", code, errOut, want)
	}
	if a := p.status(); a.Parked == nil || a.Parked.Kind != "not_logged_in" {
		t.Fatalf("status %+v", a)
	}
	_, _, code = p.batty("send", "eng", "hello")
	if code != 0 {
		t.Fatal("send failed")
	}
	// What `codex login` leaves behind (the fake reads only that it exists).
	if err := os.WriteFile(filepath.Join(home, "auth.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitStatus("the message to complete", func(a control.AgentStatus) bool { return a.TurnsCompleted == 1 })
}

// The real Codex CLI with an empty CODEX_HOME and the default provider:
// `batty start` says it is not logged in and how to log in.
func TestE2EStartRealCodexNotLoggedIn(t *testing.T) {
	bin := codextest.Codex(t)
	home := t.TempDir()
	p := newPreflightProject(t, bin, home)
	_, errOut, code := p.batty("start")
	want := "eng parked: codex is not logged in (CODEX_HOME " + home + ", model provider openai) — run: CODEX_HOME=" + home + " codex login"
	if code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("start: exit %d\nstderr %s\nwant %q", code, errOut, want)
	}
}
