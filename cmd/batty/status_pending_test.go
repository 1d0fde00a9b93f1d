package main

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// TestPrintStatusPending: the requests that wait for an agent's git or ssh
// step are named under the table, a cancel by its message's short id, an
// agent's own text made one safe line; nothing for an agent with none.
func TestPrintStatusPending(t *testing.T) {
	st := control.Status{Team: "t", Agents: []control.AgentStatus{
		{Name: "eng-1", Role: "eng", State: "working", Pending: []string{"reset", "cancel 20261128T120000.000000000Z-1f2e3d4c", "resume\x1b[2J"}},
		{Name: "eng-2", Role: "eng", State: "idle"},
	}}
	var b strings.Builder
	printStatus(&b, st)
	out := b.String()
	if !strings.Contains(out, "\neng-1: pending: reset, cancel 1f2e3d4c, resume (applied once its git or ssh step ends)\n") {
		t.Fatalf("status:\n%q", out)
	}
	if strings.Contains(out, "eng-2: pending") || strings.Contains(out, "\x1b") {
		t.Fatalf("status:\n%q", out)
	}
}
