package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// crashingShim returns a shim command that exits at once while flag exists
// and is the real shim once it is removed.
func crashingShim(t *testing.T, flag string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", "-c", `if [ -e '` + flag + `' ]; then exit 3; fi; exec "$0" "$@"`, self}
}

func TestFailedAgentIsRetriedAfterItsCooldown(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	flag := filepath.Join(p.dir, "crash")
	r := p.start(func(o *Options) {
		o.ShimCommand = crashingShim(t, flag)
		o.FailedRetryMin, o.FailedRetryMax = 300*time.Millisecond, 600*time.Millisecond
	})
	id := p.send("solo", "human", "waits for a working shim")
	first := r.waitEvent(t, "agent failed", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentFailed })
	if !strings.Contains(first.Detail, "5 crashes within") || !strings.Contains(first.Detail, "retrying in 300ms") ||
		!strings.Contains(first.Detail, "batty resume solo") || payloadOf[eventlog.AgentFailed](first).Failures != 1 {
		t.Fatalf("first failure %q %v", first.Detail, first.Data)
	}
	if st := call(t, p, control.Request{Op: control.OpStatus}).Status.Agents[0]; st.State != agentFailed || !strings.Contains(st.LastError, "retrying in") {
		t.Fatalf("status while failed: %+v", st)
	}
	// The retry after the cool-down is one try: its crash fails the agent
	// again at once, with the next alert and a doubled cool-down.
	second := r.waitEvent(t, "second failure", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvAgentFailed && payloadOf[eventlog.AgentFailed](e).Failures == 2
	})
	if !strings.Contains(second.Detail, "crashed again after its retry") || !strings.Contains(second.Detail, "retrying in 600ms") {
		t.Fatalf("second failure %q", second.Detail)
	}
	if n := r.count(eventlog.EvShimExited, ""); n != 6 {
		t.Fatalf("%d shim exits by the second failure, want 5 + 1 retry", n)
	}
	third := r.waitEvent(t, "third failure", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvAgentFailed && payloadOf[eventlog.AgentFailed](e).Failures == 3
	})
	if !strings.Contains(third.Detail, "retrying in 600ms") {
		t.Fatalf("cool-down not capped: %q", third.Detail)
	}
	// Fixed: the next retry starts a shim that stays, and the message that
	// waited is answered.
	os.Remove(flag)
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if st := call(t, p, control.Request{Op: control.OpStatus}).Status.Agents[0]; st.State == agentFailed {
		t.Fatalf("status after the retry: %+v", st)
	}
}

func TestResumeRetriesAFailedAgentAtOnce(t *testing.T) {
	p := newProject(t, "  - name: solo\n  - name: other\n")
	flag := filepath.Join(p.dir, "crash")
	r := p.start(func(o *Options) {
		o.ShimCommand = crashingShim(t, flag)
		o.FailedRetryMin = time.Hour // only a resume retries within the test
	})
	r.waitEvent(t, "solo failed", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentFailed && e.Agent == "solo" })
	r.waitEvent(t, "other failed", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentFailed && e.Agent == "other" })
	os.Remove(flag)
	if resp, err := control.Call(p.layout, control.Request{Op: control.OpResume, Agent: "nobody"}, 10*time.Second); err == nil || !strings.Contains(err.Error(), `no agent "nobody"`) {
		t.Fatalf("resume of an unknown agent: %+v %v", resp, err)
	}
	resp := call(t, p, control.Request{Op: control.OpResume, Agent: "solo"})
	if len(resp.Retried) != 1 || resp.Retried[0] != "solo" || resp.Changed {
		t.Fatalf("resume solo: %+v", resp)
	}
	r.waitEvent(t, "solo's shim", func(e eventlog.Event) bool { return e.Type == eventlog.EvShimStarted && e.Agent == "solo" })
	if st := r.finished(t, p.send("solo", "human", "back?")); st != "completed" {
		t.Fatalf("status %s", st)
	}
	// Only solo: other still waits for its hour.
	if st := call(t, p, control.Request{Op: control.OpStatus}).Status; st.Agents[1].Name != "other" || st.Agents[1].State != agentFailed {
		t.Fatalf("other after resume solo: %+v", st.Agents[1])
	}
	if resp := call(t, p, control.Request{Op: control.OpResume, Agent: "solo"}); len(resp.Retried) != 0 {
		t.Fatalf("resume of a working agent retried it: %+v", resp)
	}
	// `batty resume` without a name retries every failed agent.
	if resp := call(t, p, control.Request{Op: control.OpResume}); len(resp.Retried) != 1 || resp.Retried[0] != "other" {
		t.Fatalf("resume: %+v", resp)
	}
	if st := r.finished(t, p.send("other", "human", "back?")); st != "completed" {
		t.Fatalf("status %s", st)
	}
}
