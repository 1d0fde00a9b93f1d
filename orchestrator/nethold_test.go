package orchestrator

import (
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

func TestNetHolds(t *testing.T) {
	var n netHolds
	t0 := time.Now()
	if _, _, held := n.probe("A"); held {
		t.Fatal("an account without a hold is held")
	}
	if !n.wait("A", "a1", t0, "Reconnecting... waiting for network (x)") {
		t.Fatal("the first wait began no hold")
	}
	if n.wait("A", "a2", t0.Add(time.Second), "Reconnecting... waiting for network (y)") {
		t.Fatal("a second waiter began another hold")
	}
	if since, msg, ok := n.get("A"); !ok || !since.Equal(t0) || msg != "Reconnecting... waiting for network (y)" {
		t.Fatalf("hold = %v %q %v", since, msg, ok)
	}
	// The agent that began the hold probes; other accounts are not held.
	if p, since, held := n.probe("A"); !held || p != "a1" || !since.Equal(t0) {
		t.Fatalf("probe = %q %v %v", p, since, held)
	}
	if _, _, held := n.probe("B"); held {
		t.Fatal("another account is held")
	}
	// The probe passes on only from the agent that has it.
	if n.handOver("A", "a2", "a3") || n.handOver("B", "", "b1") {
		t.Fatal("handed over what the agent did not have")
	}
	if !n.handOver("A", "a1", "") {
		t.Fatal("the probe did not pass")
	}
	// Nobody probes: the hold stays, and a turn that waits probes.
	if p, _, held := n.probe("A"); !held || p != "" {
		t.Fatalf("after the probe left: %q %v", p, held)
	}
	if n.wait("A", "a2", t0, "x") {
		t.Fatal("a wait in a hold began another")
	}
	if p, _, _ := n.probe("A"); p != "a2" {
		t.Fatalf("probe = %q, want the waiting agent", p)
	}
	n.wait("A", "a3", t0, "x")
	if p, _, _ := n.probe("A"); p != "a2" {
		t.Fatalf("probe = %q, a second waiter took it", p)
	}
	// Only the API answering ends the hold.
	if since, ok := n.restored("A"); !ok || !since.Equal(t0) {
		t.Fatalf("restored = %v %v", since, ok)
	}
	if _, ok := n.restored("A"); ok {
		t.Fatal("a restored hold lingers")
	}
	if _, _, held := n.probe("A"); held || n.handOver("A", "a2", "") {
		t.Fatal("a restored hold lingers")
	}
	if !n.wait("A", "a1", t0, "x") {
		t.Fatal("the next outage began no hold")
	}
}

func TestDecideNetStep(t *testing.T) {
	for _, c := range []struct {
		name         string
		held         bool
		prober       string
		mine, theirs bool
		want         netStep
	}{
		{"not held", false, "", false, false, netGo},
		{"not held, no message", false, "x", false, true, netGo},
		{"the probe with a message", true, "me", true, false, netGo},
		{"the probe with nothing to send", true, "me", false, false, netRelease},
		{"another probes", true, "x", true, true, netWait},
		{"another probes, nothing here", true, "x", false, true, netWait},
		{"the probe cannot send: take it over", true, "x", true, false, netTake},
		{"nobody probes: take it", true, "", true, false, netTake},
		{"nobody probes, nothing here", true, "", false, false, netIdle},
		{"the probe cannot send, nothing here", true, "x", false, false, netIdle},
	} {
		if got := decideNetStep(c.held, "me", c.prober, c.mine, c.theirs); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestTurnAnswered(t *testing.T) {
	since := time.Now()
	before, after := since.Add(-time.Minute), since.Add(time.Second)
	for _, c := range []struct {
		name    string
		e       protocol.TurnFinished
		started time.Time
		want    bool
	}{
		{"completed", protocol.TurnFinished{Status: protocol.TurnCompleted}, before, true},
		{"usage limit", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailQuota}, before, true},
		{"stopped for the network", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailNetwork, Items: 3}, after, false},
		{"timed out while waiting", protocol.TurnFinished{Status: protocol.TurnTimedOut, Failure: protocol.FailNetwork}, after, false},
		{"items in a probe", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream, Items: 1}, after, true},
		{"items before the hold", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream, Items: 1}, before, false},
		{"nothing done", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream}, after, false},
		{"interrupted", protocol.TurnFinished{Status: protocol.TurnInterrupted}, after, false},
		{"login refused", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailAuth}, after, false},
	} {
		if got := turnAnswered(c.e, c.started, since); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
