package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/protocol"
)

// allIdle waits until every agent of the daemon is idle.
func allIdle(t *testing.T, r *running) {
	t.Helper()
	waitFor(t, "every agent idle", func() bool {
		for _, a := range r.d.status().Agents {
			if a.State != string(protocol.StateIdle) {
				return false
			}
		}
		return true
	})
}

// TestConcurrentTurnsCapAndFairness: with limits.concurrent_turns 2, six
// agents with four messages each never run more than two workers at once,
// and the turns go round the agents: no agent gets ahead of another by
// more than a round.
func TestConcurrentTurnsCapAndFairness(t *testing.T) {
	const agents, each, limit = 6, 4, 2
	p := newProjectWith(t, fmt.Sprintf("timeouts:\n  shutdown: 5s\nlimits:\n  concurrent_turns: %d\n", limit), "  - name: w\n    instances: 6\n")
	runDir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := p.start(nil)
	allIdle(t, r)
	// Held while the messages are written, so that every agent asks for a
	// slot at once.
	call(t, p, control.Request{Op: control.OpPause, Reason: "loading"})
	var ids []string
	for k := range each {
		for i := 1; i <= agents; i++ {
			ids = append(ids, p.send(fmt.Sprintf("w-%d", i), "human", fmt.Sprintf("turn %d scenario:running:%s=100", k, runDir)))
		}
	}
	call(t, p, control.Request{Op: control.OpResume})
	for _, id := range ids {
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("message %s: %s", id, st)
		}
	}
	runs, err := codextest.RunningCounts(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != agents*each {
		t.Fatalf("%d runs recorded, want %d", len(runs), agents*each)
	}
	most := 0
	for _, run := range runs {
		most = max(most, run.Running)
	}
	if most > limit {
		t.Fatalf("%d workers ran at once, the cap is %d", most, limit)
	}
	// The deliveries, in order: counts per agent never further apart
	// than one round (plus one for two agents granted at the same moment
	// whose events are written in the other order).
	got := map[string]int{}
	r.mu.Lock()
	seen := append([]eventlog.Event(nil), r.seen...)
	r.mu.Unlock()
	var order []string
	for _, e := range seen {
		if e.Type != eventlog.EvDelivered {
			continue
		}
		got[e.Agent]++
		order = append(order, e.Agent)
		lo, hi := each, 0
		for i := 1; i <= agents; i++ {
			n := got[fmt.Sprintf("w-%d", i)]
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > 2 {
			t.Fatalf("deliveries not fair: %v after %s", got, strings.Join(order, " "))
		}
	}
	r.stop(t)
	if n := r.d.slots.Held(); n != 0 {
		t.Fatalf("%d slots held after the daemon stopped", n)
	}
}

// TestSlotFreedWhenTurnEnds: with one slot, a second agent waits for it
// (status says so) and gets it when the first agent's shim is killed
// mid-turn, and again when a turn's codex crashes; the killed turn's
// message runs again; nothing is held once the daemon has stopped.
func TestSlotFreedWhenTurnEnds(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\nlimits:\n  concurrent_turns: 1\n", "  - name: a\n  - name: b\n")
	gate := filepath.Join(t.TempDir(), "gate")
	r := p.start(nil)
	allIdle(t, r)
	held := p.send("a", "human", "scenario:gate:"+gate)
	r.waitEvent(t, "a's turn", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == held })
	waiting := p.send("b", "human", "hello")
	waitFor(t, "b waiting for a slot", func() bool {
		return agentStatusOf(r.d.status(), "b").State == control.AgentWaitingForSlot
	})
	st := r.d.status()
	if a, b := agentStatusOf(st, "a"), agentStatusOf(st, "b"); a.Slot != control.SlotHeld || b.Slot != control.SlotWaiting {
		t.Fatalf("slots: a %q, b %q; want held, waiting", a.Slot, b.Slot)
	}
	if r.count(eventlog.EvDelivered, waiting) != 0 {
		t.Fatal("b's message was delivered while a held the one slot")
	}
	// a's shim dies with its turn: the slot goes to b.
	if err := syscall.Kill(agentStatusOf(st, "a").ShimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if s := r.finished(t, waiting); s != "completed" {
		t.Fatalf("b's message: %s", s)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s := r.finished(t, held); s != "completed" {
		t.Fatalf("a's message, run again: %s", s)
	}
	// A turn whose codex crashes gives its slot back too.
	crashed := p.send("a", "human", "scenario:crash")
	after := p.send("b", "human", "after the crash")
	r.finished(t, crashed)
	if s := r.finished(t, after); s != "completed" {
		t.Fatalf("b's message after a's crash: %s", s)
	}
	r.stop(t)
	if r.d.slots.Held() != 0 || r.d.slots.Waiting("a") || r.d.slots.Waiting("b") {
		t.Fatalf("slots left after the daemon stopped: %d held", r.d.slots.Held())
	}
}

// TestLowMemoryHoldsTurnsWithOneAlert: below limits.min_free_memory no
// turn starts, with one memory_low alert however often it is looked at;
// the turn starts once memory is back.
func TestLowMemoryHoldsTurnsWithOneAlert(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\nlimits:\n  min_free_memory: 1GiB\n", "  - name: a\n")
	var free, reads atomic.Uint64
	free.Store(100 << 20)
	r := p.start(func(o *Options) {
		o.MemoryRecheck = 10e6 // 10 ms
		o.Memory = func() (uint64, error) { reads.Add(1); return free.Load(), nil }
	})
	allIdle(t, r)
	id := p.send("a", "human", "hello")
	r.waitEvent(t, "memory_low", func(e eventlog.Event) bool { return e.Type == eventlog.EvMemoryLow })
	before := reads.Load()
	waitFor(t, "memory read again a few times", func() bool { return reads.Load() >= before+5 })
	if n := r.count(eventlog.EvDelivered, id); n != 0 {
		t.Fatalf("delivered %d times with memory low", n)
	}
	if s := agentStatusOf(r.d.status(), "a"); s.State != control.AgentWaitingForSlot {
		t.Fatalf("a's state %q, want %q", s.State, control.AgentWaitingForSlot)
	}
	free.Store(2 << 30)
	if s := r.finished(t, id); s != "completed" {
		t.Fatalf("message: %s", s)
	}
	r.waitEvent(t, "memory_recovered", func(e eventlog.Event) bool { return e.Type == eventlog.EvMemoryRecovered })
	if n := r.count(eventlog.EvMemoryLow, ""); n != 1 {
		t.Fatalf("%d memory_low events, want one per episode", n)
	}
	e := r.waitEvent(t, "memory_low", func(e eventlog.Event) bool { return e.Type == eventlog.EvMemoryLow })
	if a, ok := eventlog.AlertFor(e); !ok || a.Kind != eventlog.AlertMemory {
		t.Fatalf("memory_low is no memory alert: %+v %v", a, ok)
	}
}

// TestSlotGivenBackBeforeTheCommit: with one slot, a worktree agent's turn
// gives its slot back when the turn ends, not after its commit: while the
// commit is held (blocked in commit-tree), another agent's turn takes the
// slot and completes.
func TestSlotGivenBackBeforeTheCommit(t *testing.T) {
	p := newGitProject(t, "limits:\n  concurrent_turns: 1\n", "  - name: slow\n    workspace: worktree\n  - name: fast\n")
	r := p.start(nil)
	gate := blockCommitTree(t, "slow")
	allIdle(t, r)
	first := p.send("slow", "human", "scenario:write:notes.txt=slow work")
	gate.waitBlocked(t)
	p.sendAndWait(r, "fast", "hello", "completed")
	if n := r.count(eventlog.EvTurnFinished, first); n != 0 {
		t.Fatalf("slow's turn announced before its commit ended (%d)", n)
	}
	gate.open()
	if s := r.finished(t, first); s != "completed" {
		t.Fatalf("slow's message: %s", s)
	}
}

func TestFlightState(t *testing.T) {
	for _, c := range []struct {
		state           string
		inflight, ended bool
		want            string
	}{
		{"working", true, false, "working"},
		{"idle", true, false, "idle"}, // sent, the shim not working yet
		{"working", true, true, control.AgentFinishing},
		{"idle", true, true, control.AgentFinishing},
		{control.AgentWaitingForNetwork, true, true, control.AgentFinishing},
		{"idle", false, true, "idle"}, // recorded: nothing in flight
		{control.AgentWaitingForSlot, false, true, control.AgentWaitingForSlot},
		{agentParked, true, true, agentParked},
		{agentRestarting, true, true, agentRestarting},
		{"stopping", true, true, "stopping"},
		{agentFailed, true, true, agentFailed},
	} {
		if got := flightState(c.state, c.inflight, c.ended); got != c.want {
			t.Errorf("flightState(%q, %v, %v) = %q, want %q", c.state, c.inflight, c.ended, got, c.want)
		}
	}
}

// TestStatusShowsWhatRuns: with one slot, a worktree agent whose turn has
// ended and whose commit is held shows finishing — its message still in
// flight, no slot, not among the turns that run — while another agent's
// turn takes the slot; status never shows more turns running than the
// cap, and the finishing agent's message completes once its commit ends.
func TestStatusShowsWhatRuns(t *testing.T) {
	const limit = 1
	p := newGitProject(t, fmt.Sprintf("limits:\n  concurrent_turns: %d\n", limit), "  - name: slow\n    workspace: worktree\n  - name: fast\n")
	r := p.start(inProcess)
	gate := blockCommitTree(t, "slow")
	allIdle(t, r)
	runs := func() (n int, st control.Status) {
		st = r.d.status()
		for _, a := range st.Agents {
			if a.TurnRuns() {
				n++
			}
		}
		if n > limit {
			t.Fatalf("status shows %d turns running, the cap is %d: %+v", n, limit, st.Agents)
		}
		return n, st
	}
	agent := func(st control.Status, name string) control.AgentStatus {
		for _, a := range st.Agents {
			if a.Name == name {
				return a
			}
		}
		t.Fatalf("no agent %s in status", name)
		return control.AgentStatus{}
	}
	// A first turn makes slow's worktree (and commits nothing: the fake
	// shim writes nothing); then something for the next turn to commit.
	p.sendAndWait(r, "slow", "hello", "completed")
	if err := os.WriteFile(filepath.Join(p.layout.WorktreesDir(), "slow", "notes.txt"), []byte("slow work\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first := p.send("slow", "human", "hello")
	gate.waitBlocked(t)
	n, st := runs()
	if a := agent(st, "slow"); a.State != control.AgentFinishing || a.InFlight == nil || *a.InFlight != first || a.Slot != "" || n != 0 {
		t.Fatalf("slow with its commit held: state %q, in flight %v, slot %q; %d running", a.State, a.InFlight, a.Slot, n)
	}
	open := filepath.Join(t.TempDir(), "open")
	second := p.send("fast", "human", "scenario:gate:"+open)
	waitFor(t, "fast's turn running", func() bool {
		n, st := runs()
		a := agent(st, "fast")
		return n == 1 && a.TurnRuns() && a.Slot == control.SlotHeld
	})
	if _, st := runs(); agent(st, "slow").State != control.AgentFinishing {
		t.Fatalf("slow while fast runs: %q", agent(st, "slow").State)
	}
	if err := os.WriteFile(open, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s := r.finished(t, second); s != "completed" {
		t.Fatalf("fast's message: %s", s)
	}
	runs()
	gate.open()
	if s := r.finished(t, first); s != "completed" {
		t.Fatalf("slow's message: %s", s)
	}
	r.waitAgent(t, "slow", "idle with nothing in flight", func(a control.AgentStatus) bool {
		return a.State == string(protocol.StateIdle) && a.InFlight == nil
	})
}
