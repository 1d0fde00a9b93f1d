package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/project/projecttest"
)

// waitAgent waits until the status of agent name satisfies ok. Status has
// no event of its own, so the in-process status is read again on a short
// tick, up to waitLimit.
func (r *running) waitAgent(t testing.TB, name, what string, ok func(control.AgentStatus) bool) control.AgentStatus {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, a := range r.d.status().Agents {
			if a.Name == name && ok(a) {
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s within %s; status %+v", name, what, waitLimit, r.d.status().Agents)
		}
		<-tick.C
	}
}

// engWithCodex is a team of one agent, eng, whose codex is bin.
func engWithCodex(bin string) string {
	return fmt.Sprintf("  - name: eng\n    codex:\n      bin: %s\n", bin)
}

// assertWaiting checks that message id is pending in eng's inbox, never
// delivered and its attempt not used.
func assertWaiting(t *testing.T, p *testProject, r *running, id string) {
	t.Helper()
	m, where, err := p.box("eng").Get(id)
	if err != nil || where != "new" || m.Attempt != 0 || m.Outcome != nil {
		t.Fatalf("message %s: %+v in %q (%v); want it pending, attempt 0", id, m, where, err)
	}
	if n := r.count(eventlog.EvDelivered, id); n != 0 {
		t.Fatalf("message %s delivered %d times while the agent was parked", id, n)
	}
}

func assertCompletedFirstTry(t *testing.T, p *testProject, r *running, id string) {
	t.Helper()
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("message %s: %s", id, st)
	}
	m, where, err := p.box("eng").Get(id)
	if err != nil || where != "done" || m.Attempt != 1 || m.Outcome == nil || m.Outcome.Status != "completed" {
		t.Fatalf("message %s: %+v in %q (%v); want completed on attempt 1", id, m, where, err)
	}
}

// A codex binary that does not exist parks the agent: status says why and
// how to fix it, messages wait (not consumed, attempt not used), one alert
// is written, and once the binary appears the messages run without a
// restart.
func TestMissingCodexParksTheAgentUntilItAppears(t *testing.T) {
	self := projecttest.Executable(t)
	bin := filepath.Join(projecttest.TempProgramDir(t), "codex")
	p := newProject(t, engWithCodex(bin))
	// No back-off check during the test: the binary's directory is watched.
	r := p.start(func(o *Options) { o.RecheckMin, o.RecheckMax = time.Hour, time.Hour })

	r.waitEvent(t, "agent_parked", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentParked && e.Agent == "eng" })
	a := r.waitAgent(t, "eng", "parked state", func(a control.AgentStatus) bool { return a.State == agentParked })
	if a.Parked == nil || a.Parked.Kind != "codex_missing" || !strings.Contains(a.LastError, "codex not found at "+bin) ||
		!strings.Contains(a.LastError, "npm install -g @openai/codex@"+codex.Version) {
		t.Fatalf("parked agent status %+v (%+v)", a, a.Parked)
	}

	id1 := p.send("eng", "human", "first")
	r.waitAgent(t, "eng", "the first message seen", func(a control.AgentStatus) bool { return a.Backlog == 1 })
	id2 := p.send("eng", "human", "second")
	r.waitAgent(t, "eng", "the second message seen", func(a control.AgentStatus) bool { return a.Backlog == 2 })
	assertWaiting(t, p, r, id1)
	assertWaiting(t, p, r, id2)
	if n := r.count(eventlog.EvAgentParked, ""); n != 1 {
		t.Fatalf("%d agent_parked alerts; want one, not one per message", n)
	}

	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	assertCompletedFirstTry(t, p, r, id1)
	assertCompletedFirstTry(t, p, r, id2)
	r.waitEvent(t, "agent_unparked", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentUnparked && e.Agent == "eng" })
	if a := r.waitAgent(t, "eng", "idle", func(a control.AgentStatus) bool { return a.State == "idle" }); a.LastError != "" || a.Parked != nil {
		t.Fatalf("released agent status %+v", a)
	}
}

// A binary that exists but does not run (`codex --version` fails) parks the
// agent too, and `batty resume` checks it again at once: no back-off, no
// watched file involved.
func TestBrokenCodexIsReleasedByResume(t *testing.T) {
	self := projecttest.Executable(t)
	fixed := filepath.Join(t.TempDir(), "fixed")
	bin := filepath.Join(projecttest.TempProgramDir(t), "codex")
	script := fmt.Sprintf("#!/bin/sh\n[ -f %s ] || { echo 'codex: cannot open shared object' >&2; exit 3; }\nexec %s \"$@\"\n", fixed, self)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := newProject(t, engWithCodex(bin))
	r := p.start(func(o *Options) { o.RecheckMin, o.RecheckMax = time.Hour, time.Hour })

	a := r.waitAgent(t, "eng", "parked state", func(a control.AgentStatus) bool { return a.State == agentParked })
	if a.Parked == nil || a.Parked.Kind != "codex_broken" || !strings.Contains(a.LastError, "exited with status 3: codex: cannot open shared object") {
		t.Fatalf("parked agent status %+v (%+v)", a, a.Parked)
	}
	id := p.send("eng", "human", "hello")
	r.waitAgent(t, "eng", "the message seen", func(a control.AgentStatus) bool { return a.Backlog == 1 })
	assertWaiting(t, p, r, id)

	if err := os.WriteFile(fixed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if resp, err := control.Call(p.layout, control.Request{Op: control.OpResume}, waitLimit); err != nil || !resp.OK {
		t.Fatalf("resume: %+v, %v", resp, err)
	}
	assertCompletedFirstTry(t, p, r, id)
}

// A binary that goes away while the team runs: the turn cannot start codex,
// so the message goes back to the queue as it was and the agent is parked
// until the binary is back.
func TestCodexGoneWhileRunningDoesNotConsumeTheMessage(t *testing.T) {
	self := projecttest.Executable(t)
	bin := filepath.Join(projecttest.TempProgramDir(t), "codex")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	p := newProject(t, engWithCodex(bin))
	r := p.start(func(o *Options) { o.RecheckMin, o.RecheckMax = time.Hour, time.Hour })
	assertCompletedFirstTry(t, p, r, p.send("eng", "human", "before"))

	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	id := p.send("eng", "human", "while gone")
	r.waitEvent(t, "agent_parked", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentParked && e.Agent == "eng" })
	// The spawn failure parks the agent at once; the check that follows
	// names the problem and its fix.
	a := r.waitAgent(t, "eng", "parked state with the checked reason", func(a control.AgentStatus) bool {
		return a.State == agentParked && a.Backlog == 1 && a.Parked != nil && a.Parked.Kind == "codex_missing"
	})
	if !strings.Contains(a.LastError, "codex not found at "+bin+" — install it") {
		t.Fatalf("parked agent status %+v (%+v)", a, a.Parked)
	}
	m, where, err := p.box("eng").Get(id)
	if err != nil || where != "new" || m.Attempt != 0 || m.Outcome != nil {
		t.Fatalf("message %+v in %q (%v); want it back in new/ with attempt 0", m, where, err)
	}
	if a.TurnsCompleted != 1 {
		t.Fatalf("turns completed %d", a.TurnsCompleted)
	}
	if n := r.count(eventlog.EvAgentParked, ""); n != 1 {
		t.Fatalf("%d agent_parked alerts; want one", n)
	}

	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	assertCompletedFirstTry(t, p, r, id)
}

// A login that fails while the team runs (HTTP 401) pauses dispatch; the
// alert and the status say to run `codex login` with the agent's
// CODEX_HOME, then `batty resume`.
func TestAuthFailureSaysToLogIn(t *testing.T) {
	home := t.TempDir()
	p := newProject(t, "  - name: solo\n    codex:\n      codex_home: "+home+"\n")
	r := p.start(nil)
	p.send("solo", "human", "scenario:auth")
	e := r.waitEvent(t, "auth_required", func(e eventlog.Event) bool { return e.Type == eventlog.EvAuthRequired })
	fix := "run: CODEX_HOME=" + home + " codex login (or set a valid OPENAI_API_KEY in codex.env), then `batty resume`"
	if !strings.Contains(e.Detail, fix) || payloadOf[eventlog.AuthRequired](e).Fix != fix {
		t.Fatalf("auth_required event %+v; want the fix %q", e, fix)
	}
	r.waitEvent(t, "dispatch_paused", func(e eventlog.Event) bool { return e.Type == eventlog.EvPaused })
	if st := r.d.status(); !st.Dispatch.Paused || !strings.Contains(st.Dispatch.Reason, fix) {
		t.Fatalf("dispatch %+v; want the fix in the reason", st.Dispatch)
	}
}

// An agent parked by an earlier daemon whose codex runs now starts with no
// stale "parked" error.
func TestParkedErrorOfAnEarlierDaemonIsCleared(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	if err := project.SaveJSON(p.layout, project.AgentStateName("solo"), project.AgentState{Name: "solo", LastError: parkedPrefix + "codex not found at /x"}); err != nil {
		t.Fatal(err)
	}
	r := p.start(nil)
	r.waitAgent(t, "solo", "the stale error cleared", func(a control.AgentStatus) bool { return a.LastError == "" && a.State == "idle" })
	if n := r.count(eventlog.EvAgentParked, ""); n != 0 {
		t.Fatalf("%d agent_parked events", n)
	}
}

// A codex of a version batty was not tested with runs (the agent is not
// parked), and the daemon's log warns of it once, naming the tested
// versions; a tested version draws no warning.
func TestUntestedCodexVersionWarnsOnce(t *testing.T) {
	for _, c := range []struct {
		version string
		warns   bool
	}{{"0.1.0", true}, {codex.Version, false}} {
		t.Run(c.version, func(t *testing.T) {
			bin := filepath.Join(projecttest.TempProgramDir(t), "codex")
			script := "#!/bin/sh\ncase \"$1\" in\n--version) echo codex-cli " + c.version + ";;\nlogin) echo 'Logged in using ChatGPT' >&2;;\nesac\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			p := newProject(t, engWithCodex(bin))
			r := p.start(func(o *Options) { o.RecheckMin, o.RecheckMax = time.Hour, time.Hour })
			if a := r.waitAgent(t, "eng", "its check", func(a control.AgentStatus) bool { return a.State != "" }); a.Parked != nil {
				t.Fatalf("eng parked: %+v", a.Parked)
			}
			log := r.log.String()
			n := strings.Count(log, "Codex of an untested version")
			switch {
			case c.warns && (n != 1 || !strings.Contains(log, strings.Join(codex.TestedVersions, ", ")) || !strings.Contains(log, "codex "+c.version)):
				t.Fatalf("%d warnings; log:\n%s", n, log)
			case !c.warns && n != 0:
				t.Fatalf("a tested version warned; log:\n%s", log)
			}
		})
	}
}
