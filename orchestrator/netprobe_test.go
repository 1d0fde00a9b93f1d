package orchestrator

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/protocol"
)

// One outage of an account is one alert, and one probe at a time: when the
// message that waited for the network fails for good, the hold stays until
// a probe gets an answer. Of the account's held agents only one starts a
// turn meanwhile (it takes the probe over: a has nothing left to send); the
// other starts once the API answered.
func TestOutageHoldsUntilAProbeAnswers(t *testing.T) {
	p := newProjectWith(t, "max_attempts: 2\ntimeouts:\n  network_wait: 300ms\n  shutdown: 5s\n",
		"  - name: a\n  - name: b\n  - name: c\n")
	down := filepath.Join(t.TempDir(), "down")
	if err := os.WriteFile(down, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := p.start(fastRetries)
	body := "scenario:outage:" + down
	ida := p.send("a", "human", body)
	r.waitEvent(t, "network_waiting", func(e eventlog.Event) bool { return e.Type == eventlog.EvNetworkWaiting && e.Agent == "a" })
	ids := map[string]string{"b": p.send("b", "human", body), "c": p.send("c", "human", body)}
	waitFor(t, "b's and c's backlog", func() bool {
		st := r.d.status()
		return agentStatusOf(st, "b").Backlog == 1 && agentStatusOf(st, "c").Backlog == 1
	})
	// a waits twice (its retry probes the same hold), then fails for good.
	if st := r.finished(t, ida); st != "failed" {
		t.Fatalf("a's message: %s, want failed", st)
	}
	if n := p.deliveries(ida); n != 2 {
		t.Fatalf("a's message ran %d times, want 2", n)
	}
	next := r.waitEvent(t, "the next probe", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvDelivered && (e.Message == ids["b"] || e.Message == ids["c"])
	})
	prober, other := "b", "c"
	if next.Agent == "c" {
		prober, other = "c", "b"
	}
	waitFor(t, prober+" waiting", func() bool { return agentStatusOf(r.d.status(), prober).State == control.AgentWaitingForNetwork })
	so := agentStatusOf(r.d.status(), other)
	if so.InFlight != nil || so.Network == nil || so.Network.State != "held" {
		t.Fatalf("%s while %s probes: %+v %+v", other, prober, so, so.Network)
	}
	if n := r.count(eventlog.EvNetworkWaiting, ""); n != 1 {
		t.Fatalf("%d network alerts during one outage, want 1", n)
	}

	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	if r.finished(t, ids[prober]) != "completed" || r.finished(t, ids[other]) != "completed" {
		t.Fatal("not completed once the API answered")
	}
	// The event log: between the alert and the end of the hold, turns of
	// a and of the prober only, one after the other.
	r.mu.Lock()
	seen := append([]eventlog.Event(nil), r.seen...)
	r.mu.Unlock()
	held, inflight := false, ""
	waiting, restored := 0, 0
	for _, e := range seen {
		switch e.Type {
		case eventlog.EvNetworkWaiting:
			held = true
			waiting++
		case eventlog.EvNetworkRestored:
			held = false
			restored++
		case eventlog.EvDelivered:
			if held && inflight != "" {
				t.Errorf("%s started %s while %s was in flight in the hold", e.Agent, e.Message, inflight)
			}
			if held && e.Agent == other {
				t.Errorf("%s started %s before the API answered", e.Agent, e.Message)
			}
			inflight = e.Message
		case eventlog.EvTurnFinished:
			if e.Message == inflight {
				inflight = ""
			}
		}
	}
	if waiting != 1 || restored != 1 {
		t.Fatalf("%d network_waiting, %d network_restored; want 1, 1", waiting, restored)
	}
	st := r.d.status()
	for _, n := range []string{"a", "b", "c"} {
		if s := agentStatusOf(st, n); s.Network != nil {
			t.Errorf("%s still shows the network: %+v", n, s.Network)
		}
	}
}

// A probe whose shim dies hands the probe on: the account's held agent
// probes in its place (the dead one is not respawned within the test), in
// the same hold, and goes through once the API answers.
func TestOutageProbeHandedOnWhenItsShimDies(t *testing.T) {
	p := newProject(t, "  - name: a\n  - name: b\n")
	down := filepath.Join(t.TempDir(), "down")
	if err := os.WriteFile(down, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := p.start(func(o *Options) {
		fastRetries(o)
		o.RespawnMin, o.RespawnMax = time.Hour, time.Hour
	})
	body := "scenario:outage:" + down
	p.send("a", "human", body)
	r.waitEvent(t, "network_waiting", func(e eventlog.Event) bool { return e.Type == eventlog.EvNetworkWaiting && e.Agent == "a" })
	idb := p.send("b", "human", body)
	waitFor(t, "b's backlog", func() bool { return agentStatusOf(r.d.status(), "b").Backlog == 1 })
	if sb := agentStatusOf(r.d.status(), "b"); sb.InFlight != nil {
		t.Fatalf("b started while a probes: %+v", sb)
	}
	if err := syscall.Kill(agentStatusOf(r.d.status(), "a").ShimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.waitEvent(t, "b's probe", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == idb })
	waitFor(t, "b waiting", func() bool { return agentStatusOf(r.d.status(), "b").State == control.AgentWaitingForNetwork })
	if n := r.count(eventlog.EvNetworkWaiting, ""); n != 1 {
		t.Fatalf("%d network alerts during one outage, want 1", n)
	}
	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	if st := r.finished(t, idb); st != "completed" {
		t.Fatalf("b's message: %s", st)
	}
	r.waitEvent(t, "network_restored", func(e eventlog.Event) bool { return e.Type == eventlog.EvNetworkRestored })
	if w, b := r.count(eventlog.EvNetworkWaiting, ""), r.count(eventlog.EvNetworkRestored, ""); w != 1 || b != 1 {
		t.Fatalf("%d network_waiting, %d network_restored; want 1, 1", w, b)
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
