package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/schedule/fakeclock"
)

// waitingOf waits until status says why agent name waits and returns it.
func waitingOf(t *testing.T, p *testProject, name string) control.AgentStatus {
	t.Helper()
	var st control.AgentStatus
	waitFor(t, "reason why "+name+" waits in status", func() bool {
		st = agentStatus(t, p, name)
		return st.Waiting != nil
	})
	return st
}

// An idle agent whose backlog the paused team holds says so in status;
// once it runs its message, and with nothing left, it waits for nothing.
func TestStatusSaysThePausedTeamHoldsAnAgent(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(nil)
	if st := agentStatus(t, p, "manager"); st.Waiting != nil {
		t.Fatalf("an agent with nothing to do waits: %+v", st.Waiting)
	}
	call(t, p, control.Request{Op: control.OpPause, Reason: "lunch"})
	r.waitEvent(t, "pause", isType(eventlog.EvPaused))
	id := p.send("manager", "human", "wait for it")
	st := waitingOf(t, p, "manager")
	if st.Waiting.Reason != control.WaitDispatchPaused || st.Waiting.Detail != "the team is paused: lunch" || st.Backlog != 1 || st.InFlight != nil {
		t.Fatalf("status of the held manager: %+v, waiting %+v", st, st.Waiting)
	}
	call(t, p, control.Request{Op: control.OpResume})
	if s := r.finished(t, id); s != "completed" {
		t.Fatalf("status %s", s)
	}
	waitFor(t, "the manager done with its backlog", func() bool {
		st = agentStatus(t, p, "manager")
		return st.Backlog == 0 && st.InFlight == nil
	})
	if st.Waiting != nil {
		t.Fatalf("an agent with an empty backlog waits: %+v", st.Waiting)
	}
}

// An agent a reached token budget holds says which budget in status.
func TestStatusSaysABudgetHoldsAnAgent(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\nbudgets:\n  - {for: a, tokens: 1000, per: day}\n", "  - name: a\n  - name: b\n")
	clock := fakeclock.New(time.Date(2030, 3, 6, 10, 20, 0, 0, time.UTC))
	r := p.start(withBudgetClock(clock))
	p.sendAndWait(r, "a", "scenario:usage:2000", "completed")
	r.waitEvent(t, "budget reached", isType(eventlog.EvBudgetReached))
	p.send("a", "human", "held hello")
	st := waitingOf(t, p, "a")
	if st.Waiting.Reason != control.WaitBudgetHeld || !strings.HasPrefix(st.Waiting.Detail, "held by budget a/day: ") ||
		!strings.HasSuffix(st.Waiting.Detail, "no new turn until 2030-03-07 00:00 UTC") {
		t.Fatalf("status of a: %+v, waiting %+v", st, st.Waiting)
	}
	if b := agentStatus(t, p, "b"); b.Waiting != nil {
		t.Fatalf("b waits: %+v", b.Waiting)
	}
}
