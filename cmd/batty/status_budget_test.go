package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
)

// An agent a reached budget holds is shown in the table and, under it,
// with the budget, its use and until when; the others are not.
func TestStatusShowsBudgetHolds(t *testing.T) {
	until := time.Date(2030, 3, 7, 0, 0, 0, 0, time.Local)
	st := control.Status{Team: "t", Agents: []control.AgentStatus{
		{Name: "eng-1", Role: "eng", State: control.AgentBudgetHeld, Backlog: 2,
			Budget: &control.BudgetHoldStatus{Budget: "eng/day\x1b[31m", Used: 2_100_000, Tokens: 2_000_000, Until: until}},
		{Name: "manager", Role: "manager", State: "idle"},
	}}
	var b bytes.Buffer
	printStatus(&b, st)
	out := b.String()
	want := "eng-1: held by budget eng/day"
	if !strings.Contains(out, want) || !strings.Contains(out, "no new turn until 2030-03-07 00:00") ||
		!strings.Contains(out, "`batty resume eng-1` lets it go on") || !strings.Contains(out, "budget_held") {
		t.Fatalf("status:\n%s", out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "manager: held") {
		t.Fatalf("status:\n%q", out)
	}
	var none bytes.Buffer
	printStatus(&none, control.Status{Team: "t", Agents: []control.AgentStatus{{Name: "a", State: "idle"}}})
	if strings.Contains(none.String(), "held by budget") {
		t.Fatalf("status without a hold:\n%s", none.String())
	}
}
