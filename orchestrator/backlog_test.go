package orchestrator

import (
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// An agent's backlog is one number: the messages waiting in its inbox
// plus the one in flight, as the inbox counts them for backlog_limit.
func TestBacklogIsWaitingPlusInFlight(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	r := p.start(inProcess)
	busy := p.send("solo", "human", "scenario:slow:3 busy")
	r.waitEvent(t, "delivery", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == busy })
	p.send("solo", "human", "second")
	p.send("solo", "human", "third")
	a := r.waitAgent(t, "solo", "a backlog of 3", func(a control.AgentStatus) bool { return a.Backlog == 3 })
	if a.InFlight == nil || *a.InFlight != busy {
		t.Fatalf("in flight %v, want %s", a.InFlight, busy)
	}
	pending, inflight, err := p.box("solo").Count()
	if err != nil || pending != 2 || inflight != 1 {
		t.Fatalf("the inbox counts %d waiting, %d in flight (%v); want 2 and 1", pending, inflight, err)
	}
}
