package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// Time-ordered (v7) thread ids of the app-server, made the same minute by
// three agents: their first 12 characters are alike.
var sameMinuteThreads = []string{
	"019ad6f1-2c3e-7a41-9f5e-3a2b1c0d9e8f",
	"019ad6f1-2c3e-7b02-8c11-77e0a4d5b6c1",
	"019ad6f1-2c41-7e9d-a0b4-c5d6e7f80912",
}

func TestThreadCell(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"", "-"},
		{"T1", "T1"},
		{"0123456789abc", "0123456789abc"}, // 13: shown whole
		{sameMinuteThreads[0], "…3a2b1c0d9e8f"},
		{sameMinuteThreads[1], "…77e0a4d5b6c1"},
		{"019ad6f1-2c3e-7a41-9f5e-\x1b[2J3a2b1c0d9e8f\n", "…3a2b1c0d9e8f"}, // made safe first
	} {
		if got := threadCell(c.id); got != c.want {
			t.Errorf("threadCell(%q) = %q, want %q", c.id, got, c.want)
		}
	}
	seen := map[string]string{}
	for _, id := range sameMinuteThreads {
		cell := threadCell(id)
		if other, ok := seen[cell]; ok {
			t.Fatalf("threads %s and %s both show as %q", other, id, cell)
		}
		seen[cell] = id
	}
}

// The TOTAL row counts the turns that run: an agent whose turn has ended
// and whose outcome is being recorded (finishing) is not working, and its
// message is counted apart.
func TestTeamTotalsCountWhatRuns(t *testing.T) {
	id := "20261202T120000.000000000Z-1f2e3d4c"
	in := func(state string) control.AgentStatus { return control.AgentStatus{State: state, InFlight: &id} }
	for _, c := range []struct {
		name             string
		agents           []control.AgentStatus
		working, flights int
		finishing        int
		cell             string
	}{
		{"none", []control.AgentStatus{{State: "idle"}}, 0, 0, 0, "0 in flight"},
		{"working", []control.AgentStatus{in("working"), {State: "idle"}}, 1, 1, 0, "1 in flight"},
		{"sent, not working yet", []control.AgentStatus{in("idle")}, 1, 1, 0, "1 in flight"},
		{"waiting for the network", []control.AgentStatus{in(control.AgentWaitingForNetwork)}, 1, 1, 0, "1 in flight"},
		{"finishing", []control.AgentStatus{in("working"), in(control.AgentFinishing), in(control.AgentFinishing)}, 1, 1, 2, "1 in flight, 2 finishing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tt := teamTotals(c.agents)
			if tt.working != c.working || tt.inFlight != c.flights || tt.finishing != c.finishing || tt.flightCell() != c.cell {
				t.Fatalf("totals %+v (%q), want working %d, in flight %d, finishing %d (%q)", tt, tt.flightCell(), c.working, c.flights, c.finishing, c.cell)
			}
		})
	}
}

// Status's table shows the distinguishing end of each agent's thread, and
// a finishing agent as such, not among those working.
func TestStatusTableThreadsAndFinishing(t *testing.T) {
	id := "20261202T120000.000000000Z-1f2e3d4c"
	var b bytes.Buffer
	printStatus(&b, control.Status{Team: "demo", Agents: []control.AgentStatus{
		{Name: "eng-1", State: "working", ThreadID: sameMinuteThreads[0], InFlight: &id},
		{Name: "eng-2", State: control.AgentFinishing, ThreadID: sameMinuteThreads[1], InFlight: &id},
	}})
	out := b.String()
	for _, want := range []string{"…3a2b1c0d9e8f", "…77e0a4d5b6c1", "finishing", "1/2 working", "1 in flight, 1 finishing"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}
