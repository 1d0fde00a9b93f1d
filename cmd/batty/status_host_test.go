package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// TestPrintStatusHost: the table names the host of an agent that runs on
// one, and nothing for the others.
func TestPrintStatusHost(t *testing.T) {
	st := control.Status{Team: "t", Agents: []control.AgentStatus{
		{Name: "eng-1", Role: "eng", State: "unreachable", Host: "build1"},
		{Name: "eng-2", Role: "eng", State: "idle"},
	}}
	var b strings.Builder
	printStatus(&b, st)
	out := b.String()
	if !regexp.MustCompile(`eng-1 +eng +unreachable @build1 `).MatchString(out) || strings.Contains(out, "idle @") {
		t.Fatalf("status:\n%s", out)
	}
}
