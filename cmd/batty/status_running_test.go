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
