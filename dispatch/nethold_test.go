package dispatch

import (
	"testing"
	"time"
)

func TestNetHolds(t *testing.T) {
	var n NetHolds
	t0 := time.Now()
	if _, _, held := n.Probe("A"); held {
		t.Fatal("an account without a hold is held")
	}
	if !n.Wait("A", "a1", t0, "Reconnecting... waiting for network (x)") {
		t.Fatal("the first wait began no hold")
	}
	if n.Wait("A", "a2", t0.Add(time.Second), "Reconnecting... waiting for network (y)") {
		t.Fatal("a second waiter began another hold")
	}
	if since, msg, ok := n.Get("A"); !ok || !since.Equal(t0) || msg != "Reconnecting... waiting for network (y)" {
		t.Fatalf("hold = %v %q %v", since, msg, ok)
	}
	// The agent that began the hold probes; other accounts are not held.
	if p, since, held := n.Probe("A"); !held || p != "a1" || !since.Equal(t0) {
		t.Fatalf("probe = %q %v %v", p, since, held)
	}
	if _, _, held := n.Probe("B"); held {
		t.Fatal("another account is held")
	}
	// The probe passes on only from the agent that has it.
	if n.HandOver("A", "a2", "a3") || n.HandOver("B", "", "b1") {
		t.Fatal("handed over what the agent did not have")
	}
	if !n.HandOver("A", "a1", "") {
		t.Fatal("the probe did not pass")
	}
	// Nobody probes: the hold stays, and a turn that waits probes.
	if p, _, held := n.Probe("A"); !held || p != "" {
		t.Fatalf("after the probe left: %q %v", p, held)
	}
	if n.Wait("A", "a2", t0, "x") {
		t.Fatal("a wait in a hold began another")
	}
	if p, _, _ := n.Probe("A"); p != "a2" {
		t.Fatalf("probe = %q, want the waiting agent", p)
	}
	n.Wait("A", "a3", t0, "x")
	if p, _, _ := n.Probe("A"); p != "a2" {
		t.Fatalf("probe = %q, a second waiter took it", p)
	}
	// Only the API answering ends the hold.
	if since, ok := n.Restored("A"); !ok || !since.Equal(t0) {
		t.Fatalf("restored = %v %v", since, ok)
	}
	if _, ok := n.Restored("A"); ok {
		t.Fatal("a restored hold lingers")
	}
	if _, _, held := n.Probe("A"); held || n.HandOver("A", "a2", "") {
		t.Fatal("a restored hold lingers")
	}
	if !n.Wait("A", "a1", t0, "x") {
		t.Fatal("the next outage began no hold")
	}
}

func TestDecideNetStep(t *testing.T) {
	for _, c := range []struct {
		name         string
		held         bool
		prober       string
		mine, theirs bool
		want         NetStep
	}{
		{"not held", false, "", false, false, NetGo},
		{"not held, no message", false, "x", false, true, NetGo},
		{"the probe with a message", true, "me", true, false, NetGo},
		{"the probe with nothing to send", true, "me", false, false, NetRelease},
		{"another probes", true, "x", true, true, NetWait},
		{"another probes, nothing here", true, "x", false, true, NetWait},
		{"the probe cannot send: take it over", true, "x", true, false, NetTake},
		{"nobody probes: take it", true, "", true, false, NetTake},
		{"nobody probes, nothing here", true, "", false, false, NetIdle},
		{"the probe cannot send, nothing here", true, "x", false, false, NetIdle},
	} {
		if got := DecideNetStep(c.held, "me", c.prober, c.mine, c.theirs); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
