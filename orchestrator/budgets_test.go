package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/budget"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/schedule/fakeclock"
)

// withBudgetClock gives the daemon's budgets clock, their windows in UTC.
func withBudgetClock(c *fakeclock.Clock) func(*Options) {
	return func(o *Options) { o.BudgetClock, o.BudgetLocation = c, time.UTC }
}

// agentStatus returns agent name's line of the daemon's status.
func agentStatus(t *testing.T, p *testProject, name string) control.AgentStatus {
	t.Helper()
	for _, a := range call(t, p, control.Request{Op: control.OpStatus}).Status.Agents {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no agent %s in the status", name)
	return control.AgentStatus{}
}

func isType(typ string) func(eventlog.Event) bool {
	return func(e eventlog.Event) bool { return e.Type == typ }
}

// A team budget warns once at warn_at and, reached, holds every agent of
// the team: their messages wait (none dropped) until the window rolls
// over, and the hold shows in status. Each alert is sent once.
func TestBudgetHoldsTheTeamUntilTheWindowRollsOver(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\nbudgets:\n  - {for: team, tokens: 1000, per: hour, warn_at: 50%}\n",
		"  - name: a\n  - name: b\n")
	t0 := time.Date(2030, 3, 6, 10, 20, 0, 0, time.UTC)
	clock := fakeclock.New(t0)
	r := p.start(inProcessWith(withBudgetClock(clock)))
	p.sendAndWait(r, "a", "scenario:usage:300", "completed") // 400 tokens
	if n := r.count(eventlog.EvBudgetWarning, ""); n != 0 {
		t.Fatalf("%d warnings at 40%%", n)
	}
	p.sendAndWait(r, "b", "scenario:usage:100", "completed") // 600: past 50%
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	if len(st.Budgets) != 1 || st.Budgets[0] != (control.BudgetStatus{Budget: "team/hour", For: "team", Per: "hour", Used: 600, Tokens: 1000,
		UsedPct: 60, WarnAt: 50, WindowStart: t0.Add(-20 * time.Minute), WindowEnd: t0.Add(40 * time.Minute)}) {
		t.Fatalf("budgets in the status: %+v", st.Budgets)
	}
	for _, a := range st.Agents {
		if a.BudgetPct == nil || *a.BudgetPct != 60 {
			t.Fatalf("budget %% of %s: %v", a.Name, a.BudgetPct)
		}
	}
	w := r.waitEvent(t, "budget warning", isType(eventlog.EvBudgetWarning))
	if b := payloadOf[eventlog.Budget](w); b.Budget != "team/hour" || b.Until.Format(time.RFC3339) != "2030-03-06T11:00:00Z" {
		t.Fatalf("warning %+v", w)
	}
	if a, ok := eventlog.AlertFor(w); !ok || a.Kind != eventlog.AlertBudgetWarning {
		t.Fatalf("alert of the warning: %+v %v", a, ok)
	}
	p.sendAndWait(r, "a", "scenario:usage:300", "completed") // 1000: reached
	reached := r.waitEvent(t, "budget reached", isType(eventlog.EvBudgetReached))
	if a, ok := eventlog.AlertFor(reached); !ok || a.Kind != eventlog.AlertBudgetReached || !strings.Contains(a.Message, "until 2030-03-06T11:00:00Z") {
		t.Fatalf("alert of the reached budget: %+v %v", a, ok)
	}

	// Held: the messages to both agents wait in their inboxes.
	held := p.send("a", "human", "scenario:usage:1")
	heldB := p.send("b", "human", "scenario:usage:2")
	for _, name := range []string{"a", "b"} {
		st := agentStatus(t, p, name)
		if st.State != control.AgentBudgetHeld || st.Budget == nil || st.Budget.Budget != "team/hour" ||
			st.Budget.Used != 1000 || st.Budget.Tokens != 1000 || !st.Budget.Until.Equal(t0.Add(40*time.Minute)) {
			t.Fatalf("status of %s: %+v, budget %+v", name, st, st.Budget)
		}
	}
	if n := r.count(eventlog.EvDelivered, held) + r.count(eventlog.EvDelivered, heldB); n != 0 {
		t.Fatalf("a held message was delivered %d times", n)
	}

	// The next hour: the daemon's timer lets them go on.
	clock.Advance(40 * time.Minute)
	for _, id := range []string{held, heldB} {
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("%s: %s", id, st)
		}
	}
	if st := agentStatus(t, p, "a"); st.Budget != nil {
		t.Fatalf("a still held in the next window: %+v", st.Budget)
	}
	if w, rc := r.count(eventlog.EvBudgetWarning, ""), r.count(eventlog.EvBudgetReached, ""); w != 1 || rc != 1 {
		t.Fatalf("%d warnings, %d reached alerts; want one of each", w, rc)
	}
}

// A budget of one agent holds it alone; `batty resume <agent>` lets it go
// on for the rest of the window and says so in the event log; the use (from
// the ledger), the alerts sent and the resume survive a restart.
func TestBudgetResumeOfAnAgentSurvivesARestart(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\nbudgets:\n  - {for: a, tokens: 1000, per: day}\n", "  - name: a\n  - name: b\n")
	t0 := time.Date(2030, 3, 6, 10, 20, 0, 0, time.UTC)
	clock := fakeclock.New(t0)
	r := p.start(inProcessWith(withBudgetClock(clock)))
	p.sendAndWait(r, "a", "scenario:usage:2000", "completed") // past the budget at once
	r.waitEvent(t, "budget reached", isType(eventlog.EvBudgetReached))
	if n := r.count(eventlog.EvBudgetWarning, ""); n != 0 {
		t.Fatalf("%d warnings besides the reached alert", n)
	}
	held := p.send("a", "human", "held hello")
	p.sendAndWait(r, "b", "not held", "completed")
	if n := r.count(eventlog.EvDelivered, held); n != 0 {
		t.Fatalf("the held message was delivered %d times", n)
	}

	// A restart counts the day's use from the ledger: still held, no
	// second alert.
	r.stop(t)
	r = p.start(inProcessWith(withBudgetClock(clock)))
	st := agentStatus(t, p, "a")
	if st.Budget == nil || st.Budget.Used != 2100 || !st.Budget.Until.Equal(time.Date(2030, 3, 7, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("status of a after a restart: %+v, budget %+v", st, st.Budget)
	}
	if pending, _ := p.box("a").Pending(); len(pending) != 1 || pending[0].ID != held {
		t.Fatalf("a's inbox after a restart: %+v", pending)
	}
	if b := agentStatus(t, p, "b"); b.Budget != nil {
		t.Fatalf("b held by a's budget: %+v", b.Budget)
	}

	resp := call(t, p, control.Request{Op: control.OpResume, Agent: "a"})
	if !resp.OK || len(resp.Ended) != 1 || !strings.Contains(resp.Ended[0], "budget hold a/day") {
		t.Fatalf("resume: %+v", resp)
	}
	ev := r.waitEvent(t, "budget resumed", isType(eventlog.EvBudgetResumed))
	if ev.Agent != "a" || payloadOf[eventlog.BudgetResumed](ev).Budget != "a/day" || !strings.Contains(ev.Detail, "resumed by user") {
		t.Fatalf("resumed event %+v", ev)
	}
	if st := r.finished(t, held); st != "completed" {
		t.Fatalf("held message: %s", st)
	}
	if again := call(t, p, control.Request{Op: control.OpResume, Agent: "a"}); len(again.Ended) != 0 {
		t.Fatalf("a second resume ended %v", again.Ended)
	}

	// The resume holds for the rest of the day, across a restart.
	r.stop(t)
	r = p.start(inProcessWith(withBudgetClock(clock)))
	p.sendAndWait(r, "a", "after the restart", "completed")
	if n := r.count(eventlog.EvBudgetReached, ""); n != 0 {
		t.Fatalf("%d reached alerts after the restart", n)
	}
	if st := agentStatus(t, p, "a"); st.Budget != nil || st.State == control.AgentBudgetHeld {
		t.Fatalf("a held after its resume: %+v", st)
	}
}

func TestBudgetPct(t *testing.T) {
	bs := []control.BudgetStatus{{For: "team", UsedPct: 10}, {For: "eng", UsedPct: 70}, {For: "eng-2", UsedPct: 40}}
	for _, c := range []struct {
		agent, role string
		want        float64
	}{
		{"eng-1", "eng", 70},
		{"eng-2", "eng", 70},
		{"mgr", "mgr", 10},
	} {
		got := budgetPct(bs, c.agent, c.role)
		if got == nil || *got != c.want {
			t.Errorf("budgetPct(%s) = %v, want %v", c.agent, got, c.want)
		}
	}
	if got := budgetPct(bs[1:], "mgr", "mgr"); got != nil {
		t.Errorf("budgetPct of an agent no budget covers = %v, want nil", *got)
	}
}

func TestBudgetHoldStatusAndState(t *testing.T) {
	early := time.Date(2030, 3, 6, 11, 0, 0, 0, time.UTC)
	late := time.Date(2030, 3, 7, 0, 0, 0, 0, time.UTC)
	if s := budgetHoldStatus(nil); s != nil {
		t.Fatalf("no hold: %+v", s)
	}
	s := budgetHoldStatus([]budget.Hold{{Budget: "team/hour", Used: 5, Tokens: 4, Until: early}, {Budget: "a/day", Used: 9, Tokens: 8, Until: late}})
	if s == nil || s.Budget != "a/day" || s.Used != 9 || s.Tokens != 8 || !s.Until.Equal(late) {
		t.Fatalf("two holds: %+v (want the one ending last)", s)
	}
	tests := []struct {
		state          string
		inflight, held bool
		want           string
	}{
		{"idle", false, true, control.AgentBudgetHeld},
		{"idle", false, false, "idle"},
		{"working", true, true, "working"}, // its turn finishes first
		{"idle", true, true, "idle"},
		{agentParked, false, true, agentParked},
		{control.AgentQuotaPaused, false, true, control.AgentQuotaPaused},
	}
	for _, tt := range tests {
		if got := budgetHeldState(tt.state, tt.inflight, tt.held); got != tt.want {
			t.Errorf("budgetHeldState(%s, %v, %v) = %s, want %s", tt.state, tt.inflight, tt.held, got, tt.want)
		}
	}
}
