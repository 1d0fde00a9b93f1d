package orchestrator

import (
	"testing"
	"time"
)

func TestNetHolds(t *testing.T) {
	var n netHolds
	t0 := time.Now()
	if !n.allows("A", "a1") {
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
	// Waiters probe; the account's other agents wait; other accounts run.
	if !n.allows("A", "a1") || !n.allows("A", "a2") || n.allows("A", "a3") || !n.allows("B", "b1") {
		t.Fatal("allows is wrong")
	}
	if n.leave("A", "a3") || n.leave("A", "a1") {
		t.Fatal("a hold with a waiter left ended")
	}
	if n.allows("A", "a1") {
		t.Fatal("an agent that left still probes")
	}
	if !n.leave("A", "a2") {
		t.Fatal("the last waiter leaving did not end the hold")
	}
	if !n.allows("A", "a3") {
		t.Fatal("held after the hold ended")
	}
	// The API answering ends the hold whoever still waits.
	n.wait("A", "a1", t0, "x")
	n.wait("A", "a2", t0, "x")
	if since, ok := n.restored("A"); !ok || !since.Equal(t0) {
		t.Fatalf("restored = %v %v", since, ok)
	}
	if _, ok := n.restored("A"); ok || !n.allows("A", "a3") || n.leave("A", "a1") {
		t.Fatal("a restored hold lingers")
	}
}
