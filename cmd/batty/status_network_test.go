package main

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
)

// status names the turn that waits for the network, since when, in codex's
// words, and the agents its account holds.
func TestPrintStatusNetwork(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	notice := "Reconnecting... waiting for network (Connection failed: error sending request)"
	st := control.Status{Team: "t", Agents: []control.AgentStatus{
		{Name: "a", State: control.AgentWaitingForNetwork,
			Network: &control.NetworkStatus{State: "waiting", Account: "/h", Since: since, Message: notice}},
		{Name: "b", State: "idle", Network: &control.NetworkStatus{State: "held", Account: "/h", Since: since, Message: notice}},
		{Name: "c", State: "idle"},
	}}
	var b strings.Builder
	printStatus(&b, st)
	out := b.String()
	for _, want := range []string{
		"waiting_for_network",
		"a: waiting for network since " + since.Local().Format("15:04:05") + " (account /h): " + notice,
		"held until the API answers (account /h): b\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}
