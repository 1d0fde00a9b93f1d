package console

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// The team page shows, next to an idle agent's state, why it starts no
// turn with messages waiting, as plain text.
func TestTeamPageShowsWhyAnAgentWaits(t *testing.T) {
	ts, _, fb := newConsole(t)
	fb.set(func(st *control.Status) {
		st.Agents[0].Backlog = 2
		st.Agents[0].Waiting = &control.WaitingStatus{Reason: control.WaitDispatchPaused, Detail: "the team is paused: " + hostile}
	})
	c := logIn(t, ts)
	_, body := get(t, ts, "/", c)
	if !strings.Contains(body, `<div class="why waiting">waiting: the team is paused: &lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Fatalf("the team page does not say why eng waits:\n%s", body)
	}
	for _, bad := range []string{"<script>alert", "\x1b", "\x07"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	fb.set(func(st *control.Status) { st.Agents[0].Waiting = nil })
	if _, body := get(t, ts, "/", c); strings.Contains(body, "waiting:") {
		t.Fatalf("an agent that does not wait shows a reason:\n%s", body)
	}
}

// The team page's totals are status's: busy counts the turns that run,
// not a finishing one whose outcome is being recorded, and the backlog
// holds the messages in role queues too.
func TestTeamViewTotalsCountWhatRuns(t *testing.T) {
	id := "20261202T120000.000000000Z-1f2e3d4c"
	st := &control.Status{Team: "crew", Queues: map[string]int{"eng": 2}, Agents: []control.AgentStatus{
		{Name: "a", State: "working", InFlight: &id, Backlog: 1, InputTokens: 1250, OutputTokens: 999_960},
		{Name: "b", State: control.AgentFinishing, InFlight: &id, Backlog: 1},
		{Name: "c", State: "idle"},
	}}
	v := newTeamView(st, nil, "")
	if v.Totals.Agents != 3 || v.Totals.Busy != 1 || v.Totals.Backlog != 4 || v.Totals.Input != "1.3k" || v.Totals.Output != "1.0M" {
		t.Fatalf("totals %+v", v.Totals)
	}
	if !v.Agents[1].Busy || v.Agents[1].InFlight != "1f2e3d4c" {
		t.Errorf("a finishing agent's message is not shown in flight: %+v", v.Agents[1])
	}
}
