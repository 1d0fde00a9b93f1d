package control

import "testing"

func TestTurnRuns(t *testing.T) {
	id := "m-1"
	for _, c := range []struct {
		name     string
		state    string
		inflight bool
		want     bool
	}{
		{"working with a message", "working", true, true},
		{"sent, shim not working yet", "idle", true, true},
		{"waiting for the network", AgentWaitingForNetwork, true, true},
		{"working without a message (a moment)", "working", false, true},
		{"ended, outcome being recorded", AgentFinishing, true, false},
		{"idle", "idle", false, false},
		{"waiting for a slot", AgentWaitingForSlot, false, false},
		{"quota paused", AgentQuotaPaused, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := AgentStatus{State: c.state}
			if c.inflight {
				a.InFlight = &id
			}
			if got := a.TurnRuns(); got != c.want {
				t.Fatalf("TurnRuns = %v, want %v", got, c.want)
			}
		})
	}
}
