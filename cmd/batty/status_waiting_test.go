package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// An idle agent with a backlog that waits shows its reason's code after its
// state, unless the state says it already; the JSON carries the reason and
// its words.
func TestStatusShowsWhyAnAgentWaits(t *testing.T) {
	st := control.Status{Team: "t", Agents: []control.AgentStatus{
		{Name: "eng-1", Role: "eng", State: "idle", Backlog: 2,
			Waiting: &control.WaitingStatus{Reason: control.WaitDispatchPaused, Detail: "the team is paused: lunch"}},
		{Name: "eng-2", Role: "eng", State: control.AgentBudgetHeld, Backlog: 1,
			Waiting: &control.WaitingStatus{Reason: control.WaitBudgetHeld, Detail: "held by budget eng/day"}},
		{Name: "eng-3", Role: "eng", State: control.AgentWaitingForSlot, Backlog: 1,
			Waiting: &control.WaitingStatus{Reason: control.WaitSlot, Detail: "waiting for a slot"}},
		{Name: "eng-4", Role: "eng", State: "idle", Backlog: 1,
			Waiting: &control.WaitingStatus{Reason: "odd\x1b[31m", Detail: "x"}},
		{Name: "manager", Role: "manager", State: "idle"},
	}}
	var b bytes.Buffer
	printStatus(&b, st)
	rows := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 {
			rows[f[0]] = line
		}
	}
	if !strings.Contains(rows["eng-1"], "idle (dispatch_paused)") {
		t.Errorf("eng-1: %q", rows["eng-1"])
	}
	for _, n := range []string{"eng-2", "eng-3", "manager"} {
		if strings.Contains(rows[n], "(") {
			t.Errorf("%s says its reason twice, or has none to say: %q", n, rows[n])
		}
	}
	if strings.Contains(b.String(), "\x1b") || !strings.Contains(rows["eng-4"], "idle (odd") {
		t.Errorf("eng-4: %q", rows["eng-4"])
	}

	out, err := json.Marshal(st.Agents[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"waiting":{"reason":"dispatch_paused","detail":"the team is paused: lunch"}`) {
		t.Errorf("JSON: %s", out)
	}
	if out, _ := json.Marshal(st.Agents[4]); !strings.Contains(string(out), `"waiting":null`) {
		t.Errorf("JSON of an agent that does not wait: %s", out)
	}
}
