package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/schedule/fakeclock"
	"github.com/battyhq/batty/team"
)

// spec is a schedule for the tests.
type spec struct {
	name        string
	every       time.Duration
	start, stop time.Time
	maxRuns     *int
	cont        bool
}

func (s spec) team() team.Schedule {
	name := s.name
	if name == "" {
		name = "s"
	}
	ts := team.Schedule{Name: name, To: "a", Prompt: "p", Every: s.every, StartAt: s.start, StopAt: s.stop, MaxRuns: s.maxRuns, OnError: team.OnErrorStop}
	if s.cont {
		ts.OnError = team.OnErrorContinue
	}
	return ts
}

// fakeBoxes is a Deliverer over an in-memory set of messages. Deliver
// checks that the run was saved as running first.
type fakeBoxes struct {
	t      *testing.T
	store  *memStore
	mu     sync.Mutex
	msgs   map[string]*Result // nil: pending
	refuse error
	// failAfter, if set, is returned by Deliver after the message was
	// written (as a failed fsync after the rename would be).
	failAfter error
	got       chan string
}

func newFakeBoxes(t *testing.T, store *memStore) *fakeBoxes {
	return &fakeBoxes{t: t, store: store, msgs: map[string]*Result{}, got: make(chan string, 100)}
}

func (f *fakeBoxes) Deliver(spec team.Schedule, id string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.store.saved()[spec.Name]; st.State != Running || st.RunID != id {
		f.t.Errorf("run %s delivered before it was saved as running (saved: %+v)", id, st)
	}
	if _, ok := f.msgs[id]; ok {
		return nil
	}
	if f.refuse != nil {
		return f.refuse
	}
	f.msgs[id] = nil
	f.got <- id
	return f.failAfter
}

func (f *fakeBoxes) Lookup(id string) (int, Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.msgs[id]
	switch {
	case !ok:
		return Missing, Result{}, nil
	case r == nil:
		return Pending, Result{}, nil
	}
	return Recorded, *r, nil
}

// record records the outcome of id (as the daemon would, without telling
// a Runner).
func (f *fakeBoxes) record(id string, r Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs[id] = &r
}

// memStore keeps the encoded state file in memory.
type memStore struct {
	mu   sync.Mutex
	data []byte
}

func (m *memStore) Load() (map[string]State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Decode(m.data)
}

func (m *memStore) Save(s map[string]State) error {
	b, err := Encode(s)
	if err != nil {
		return err
	}
	if _, err := Decode(b); err != nil {
		return fmt.Errorf("saved an invalid state: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data = b
	return nil
}

func (m *memStore) saved() map[string]State {
	s, _ := m.Load()
	return s
}

// harness runs one Runner.
type harness struct {
	t      *testing.T
	clock  *fakeclock.Clock
	boxes  *fakeBoxes
	store  *memStore
	r      *Runner
	events chan stamped
	stop   func()

	idleMu  sync.Mutex
	idles   int           // times the runner went to sleep
	idleCh  chan struct{} // closed and replaced when idles grows
	lastIdl int           // idles when the event last returned by event was emitted
}

// stamped is an event with the runner's sleep count when it was emitted.
type stamped struct {
	Event
	idles int
}

func newHarness(t *testing.T, clock *fakeclock.Clock, store *memStore, boxes *fakeBoxes, specs ...spec) *harness {
	t.Helper()
	var ts []team.Schedule
	for _, s := range specs {
		ts = append(ts, s.team())
	}
	h := &harness{t: t, clock: clock, boxes: boxes, store: store, events: make(chan stamped, 1000), idleCh: make(chan struct{})}
	h.r = New(ts, clock, boxes, store, nil, func(e Event) { h.events <- stamped{e, h.idleCount()} })
	h.r.idle = func() {
		h.idleMu.Lock()
		defer h.idleMu.Unlock()
		h.idles++
		close(h.idleCh)
		h.idleCh = make(chan struct{})
	}
	if err := h.r.Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.r.Run(ctx) }()
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
		}
	})
	return h
}

func (h *harness) shutdown() {
	h.stop()
	h.stop = nil
}

// delivered waits for the next delivery.
func (h *harness) delivered() string {
	h.t.Helper()
	select {
	case id := <-h.boxes.got:
		return id
	case <-time.After(10 * time.Second):
		h.t.Fatal("no run was delivered")
		return ""
	}
}

// noDelivery checks that nothing was delivered so far.
func (h *harness) noDelivery() {
	h.t.Helper()
	select {
	case id := <-h.boxes.got:
		h.t.Fatalf("unexpected delivery of %s", id)
	default:
	}
}

// event waits for the next event of kind (skipping others).
func (h *harness) event(kind string) Event {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-h.events:
			if e.Kind == kind {
				h.lastIdl = e.idles
				return e.Event
			}
		case <-deadline:
			h.t.Fatalf("no %s event", kind)
		}
	}
}

// finish records id's outcome and tells the runner; it waits until the
// runner finished the run.
func (h *harness) finish(id string, r Result) Event {
	h.t.Helper()
	h.boxes.record(id, r)
	h.r.Finished(id, r)
	e := h.event(EvRunFinished)
	if e.ID != id {
		h.t.Fatalf("finished %s, want %s", e.ID, id)
	}
	return e
}

func newParts(t *testing.T) (*fakeclock.Clock, *memStore, *fakeBoxes) {
	store := &memStore{}
	return fakeclock.New(epoch), store, newFakeBoxes(t, store)
}

func TestRunnerSingleFlightAndMissedTicks(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{every: time.Minute})
	id := h.delivered()
	if id != RunID("s", 1, epoch) {
		t.Fatalf("first run %s, want it at the anchor (first seen)", id)
	}
	// Five ticks pass while the run is in flight: no second run.
	clock.Advance(5*time.Minute + 30*time.Second)
	e := h.finish(id, Result{})
	h.noDelivery()
	if e.State.State != Waiting || e.State.RunsCompleted != 1 || !e.State.NextDue.Equal(epoch.Add(6*time.Minute)) ||
		!e.State.LastFinished.Equal(epoch.Add(5*time.Minute+30*time.Second)) || !e.State.LastStarted.Equal(epoch) {
		t.Fatalf("after a late run: %+v; want the next due at the first tick after it (epoch+6m)", e.State)
	}
	clock.Advance(30*time.Second - time.Nanosecond)
	h.noDelivery()
	clock.Advance(time.Nanosecond)
	if id := h.delivered(); id != RunID("s", 2, epoch.Add(6*time.Minute)) {
		t.Fatalf("second run %s", id)
	}
	h.noDelivery()
	if st := h.r.Status(); len(st) != 1 || st[0].State != Running || st[0].Runs != 2 {
		t.Fatalf("status %+v", st)
	}
}

func TestRunnerStartAtInTheFuture(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{every: time.Hour, start: epoch.Add(90 * time.Minute)})
	clock.Advance(90*time.Minute - time.Nanosecond)
	h.noDelivery()
	if st := h.r.Status(); st[0].State != Waiting || !st[0].NextDue.Equal(epoch.Add(90*time.Minute)) {
		t.Fatalf("status %+v", st)
	}
	clock.Advance(time.Nanosecond)
	h.delivered()
}

func TestRunnerFailureStops(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{every: time.Minute})
	id := h.delivered()
	h.finish(id, Result{Failed: true, Error: "failed network: unreachable"})
	e := h.event(EvFailed)
	if e.State.State != Failed || e.State.LastError != "failed network: unreachable" || e.State.RunsCompleted != 1 || e.State.RunsFailed != 1 {
		t.Fatalf("after a failed run: %+v", e.State)
	}
	clock.Advance(time.Hour)
	h.noDelivery()
	if st := store.saved()["s"]; st.State != Failed {
		t.Fatalf("saved %+v", st)
	}
	// Resumed, it runs at once (its ticks passed), counts kept.
	if names := h.r.Resume(); len(names) != 1 || names[0] != "s" {
		t.Fatalf("Resume = %v", names)
	}
	if id := h.delivered(); id != RunID("s", 2, epoch.Add(time.Hour)) {
		t.Fatalf("run after resume %s", id)
	}
	if st := h.r.Status()[0]; st.RunsCompleted != 1 || st.RunsFailed != 1 {
		t.Fatalf("status %+v", st)
	}
	if names := h.r.Resume(); names != nil {
		t.Fatalf("Resume of a running schedule = %v", names)
	}
}

func TestRunnerOnErrorContinue(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{every: time.Minute, cont: true})
	id := h.delivered()
	e := h.finish(id, Result{Failed: true, Error: "boom"})
	if e.State.State != Waiting || e.State.LastError != "boom" || e.State.RunsFailed != 1 {
		t.Fatalf("after a failed run: %+v", e.State)
	}
	clock.Advance(time.Minute)
	h.delivered()
}

func TestRunnerRefusedDelivery(t *testing.T) {
	for _, cont := range []bool{false, true} {
		t.Run(fmt.Sprint("continue=", cont), func(t *testing.T) {
			clock, store, boxes := newParts(t)
			boxes.refuse = errors.New("a holds 256 messages, its backlog limit is 256")
			h := newHarness(t, clock, store, boxes, spec{every: time.Minute, cont: cont})
			e := h.event(EvRunFinished)
			if e.State.RunsCompleted != 0 || e.State.RunsFailed != 1 || e.State.LastError != "delivery refused: a holds 256 messages, its backlog limit is 256" {
				t.Fatalf("after a refused delivery: %+v", e.State)
			}
			if !cont {
				if e.State.State != Failed {
					t.Fatalf("state %s, want failed", e.State.State)
				}
				return
			}
			boxes.mu.Lock()
			boxes.refuse = nil
			boxes.mu.Unlock()
			clock.Advance(time.Minute)
			if id := h.delivered(); id != RunID("s", 2, epoch.Add(time.Minute)) {
				t.Fatalf("next run %s", id)
			}
		})
	}
}

// A delivery that failed after its message was written is no refusal:
// the run stays in flight (single flight holds, even with on_error:
// continue) and its outcome counts.
func TestRunnerDeliveryFailedAfterTheWrite(t *testing.T) {
	clock, store, boxes := newParts(t)
	boxes.failAfter = errors.New("fsync inboxes/a/new: input/output error")
	h := newHarness(t, clock, store, boxes, spec{every: time.Minute, cont: true})
	id := h.delivered()
	boxes.mu.Lock()
	boxes.failAfter = nil
	boxes.mu.Unlock()
	// Ticks pass while the run is queued: no second run starts.
	clock.Advance(3 * time.Minute)
	h.noDelivery()
	if st := h.r.Status()[0]; st.State != Running || st.RunID != id || st.RunsFailed != 0 {
		t.Fatalf("after a delivery that failed after the write: %+v, want %s running", st, id)
	}
	if e := h.finish(id, Result{}); e.State.RunsCompleted != 1 || e.State.RunsFailed != 0 {
		t.Fatalf("the run's outcome: %+v", e.State)
	}
}

func TestRunnerStopAt(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{every: time.Minute, stop: epoch.Add(2 * time.Minute)})
	for i := range 2 {
		id := h.delivered()
		clock.Advance(time.Second)
		h.finish(id, Result{})
		if i == 0 {
			clock.Advance(time.Minute - time.Second)
		}
	}
	// The tick at stop_at does not start: stop_at is exclusive.
	e := h.event(EvStopped)
	if e.State.State != Stopped || e.State.RunsCompleted != 2 || e.Detail != "stop_at (2030-06-01T12:02:00Z) reached" {
		t.Fatalf("stopped: %+v %q", e.State, e.Detail)
	}
	clock.Advance(time.Hour)
	h.noDelivery()
}

func TestRunnerMaxRuns(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{every: time.Minute, maxRuns: intp(2)}, spec{name: "never", every: time.Minute, maxRuns: intp(0)})
	e := h.event(EvStopped)
	if e.Schedule != "never" || e.Detail != "max_runs (0) reached" {
		t.Fatalf("event %+v", e)
	}
	for range 2 {
		id := h.delivered()
		h.finish(id, Result{})
		clock.Advance(time.Minute)
	}
	if e := h.event(EvStopped); e.Schedule != "s" || e.State.RunsCompleted != 2 {
		t.Fatalf("event %+v", e)
	}
	clock.Advance(time.Hour)
	h.noDelivery()
}

// A restart neither repeats a run nor forgets the count, whatever the
// stopped daemon left.
func TestRunnerRestart(t *testing.T) {
	t.Run("outcome recorded while down", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: time.Minute, maxRuns: intp(2)})
		id := h.delivered()
		h.shutdown()
		clock.Advance(90 * time.Second)
		boxes.record(id, Result{Recorded: true})
		h2 := newHarness(t, clock, store, boxes, spec{every: time.Minute, maxRuns: intp(2)})
		e := h2.event(EvRunFinished)
		if e.ID != id || e.State.RunsCompleted != 1 || !e.State.NextDue.Equal(epoch.Add(2*time.Minute)) {
			t.Fatalf("after restart: %+v", e)
		}
		h2.noDelivery()
		clock.Advance(30 * time.Second)
		id2 := h2.delivered()
		if id2 != RunID("s", 2, epoch.Add(2*time.Minute)) {
			t.Fatalf("second run %s", id2)
		}
		h2.finish(id2, Result{})
		if e := h2.event(EvStopped); e.State.RunsCompleted != 2 {
			t.Fatalf("stopped %+v", e.State)
		}
	})
	t.Run("saved but never delivered", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		// The daemon died between saving "running" and delivering.
		st := State{Name: "s", FirstSeen: epoch, State: Waiting}
		id := start(&st, epoch)
		if err := store.Save(map[string]State{"s": st}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
		h := newHarness(t, clock, store, boxes, spec{every: time.Minute})
		if got := h.delivered(); got != id {
			t.Fatalf("delivered %s, want the saved run %s", got, id)
		}
		h.noDelivery()
		h.finish(id, Result{})
		if s := store.saved()["s"]; s.Runs != 1 || s.RunsCompleted != 1 {
			t.Fatalf("saved %+v", s)
		}
	})
	t.Run("still pending", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: time.Minute})
		id := h.delivered()
		h.shutdown()
		clock.Advance(10 * time.Minute)
		h2 := newHarness(t, clock, store, boxes, spec{every: time.Minute})
		h2.noDelivery()
		if st := h2.r.Status(); st[0].State != Running || st[0].RunID != id {
			t.Fatalf("status %+v", st)
		}
		e := h2.finish(id, Result{})
		if e.State.Runs != 1 || e.State.RunsCompleted != 1 || !e.State.NextDue.Equal(epoch.Add(11*time.Minute)) {
			t.Fatalf("finished %+v", e.State)
		}
	})
	t.Run("first seen kept", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: time.Hour})
		id := h.delivered()
		clock.Advance(time.Minute)
		h.finish(id, Result{})
		h.shutdown()
		clock.Advance(30 * time.Minute)
		h2 := newHarness(t, clock, store, boxes, spec{every: time.Hour})
		if st := h2.r.Status(); !st[0].FirstSeen.Equal(epoch) || !st[0].NextDue.Equal(epoch.Add(time.Hour)) {
			t.Fatalf("status %+v", st)
		}
		h2.noDelivery()
	})
}

// Outcomes of other messages, and a second report of one, change nothing.
func TestRunnerIgnoresOtherOutcomes(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{every: time.Minute})
	id := h.delivered()
	h.r.Finished("20300601T120000.000000000Z-1f2e3d4c", Result{Failed: true})
	e := h.finish(id, Result{})
	h.r.Finished(id, Result{Failed: true, Error: "late duplicate"})
	clock.Advance(time.Minute)
	h.delivered()
	if st := h.r.Status()[0]; st.RunsCompleted != 1 || st.RunsFailed != 0 || e.State.LastError != "" {
		t.Fatalf("status %+v", st)
	}
}

// A schedule that stopped or failed before a restart is not announced
// again; one that stops at the restart is, once.
func TestRunnerRestartAnnouncesOnce(t *testing.T) {
	clock, store, boxes := newParts(t)
	h := newHarness(t, clock, store, boxes, spec{name: "never", every: time.Minute, maxRuns: intp(0)}, spec{every: time.Minute, maxRuns: intp(1)})
	h.event(EvStopped)
	id := h.delivered()
	h.shutdown()
	boxes.record(id, Result{Recorded: true})
	h2 := newHarness(t, clock, store, boxes, spec{name: "never", every: time.Minute, maxRuns: intp(0)}, spec{every: time.Minute, maxRuns: intp(1)})
	if e := h2.event(EvStopped); e.Schedule != "s" {
		t.Fatalf("stopped %+v", e)
	}
	h2.shutdown()
	h3 := newHarness(t, clock, store, boxes, spec{name: "never", every: time.Minute, maxRuns: intp(0)}, spec{every: time.Minute, maxRuns: intp(1)})
	h3.shutdown()
	close(h3.events)
	for e := range h3.events {
		t.Errorf("announced again at a restart: %+v", e)
	}
	if st := store.saved(); st["s"].State != Stopped || st["never"].State != Stopped || st["s"].RunsCompleted != 1 {
		t.Fatalf("saved %+v", st)
	}
}

func (h *harness) idleCount() int {
	h.idleMu.Lock()
	defer h.idleMu.Unlock()
	return h.idles
}

// asleepAfter waits until the runner went to sleep more than n times.
func (h *harness) asleepAfter(n int) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.idleMu.Lock()
		k, ch := h.idles, h.idleCh
		h.idleMu.Unlock()
		if k > n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			h.t.Fatalf("the runner does not go to sleep")
		}
	}
}

// settled waits until the runner went to sleep after the event event last
// returned: it has done all that event leads to.
func (h *harness) settled() { h.t.Helper(); h.asleepAfter(h.lastIdl) }

// wakesAt is when (by the wall clock) the earliest timer of the clock
// fires; zero without any.
func (h *harness) wakesAt() time.Time { return h.clock.NextAt() }

// advance lets d pass, which must fire the timer of the runner (asleep),
// and waits until it is asleep again.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	n := h.idleCount()
	h.clock.Advance(d)
	h.asleepAfter(n)
}

// The wall clock set forwards or backwards while the runner sleeps (the
// system's timers run on elapsed time, as do the fake clock's): one run
// soon after, no burst, no stall.
func TestRunnerClockSet(t *testing.T) {
	const year = 365 * 24 * time.Hour
	t.Run("forwards a year", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: 24 * time.Hour})
		h.finish(h.delivered(), Result{})
		h.settled()
		clock.Jump(epoch.Add(year))
		clock.Advance(maxSleep)
		if id := h.delivered(); id != RunID("s", 2, epoch.Add(year+maxSleep)) {
			t.Fatalf("run after the clock jumped %s", id)
		}
		e := h.finish(RunID("s", 2, epoch.Add(year+maxSleep)), Result{})
		if want := epoch.Add(year + 24*time.Hour); !e.State.NextDue.Equal(want) {
			t.Fatalf("next due %v, want the tick after now %v", e.State.NextDue, want)
		}
		clock.Advance(time.Hour)
		h.noDelivery()
	})
	t.Run("backwards a year", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: time.Hour})
		id := h.delivered()
		clock.Advance(time.Minute)
		h.finish(id, Result{})
		h.settled()
		clock.Jump(epoch.Add(-year + time.Minute))
		h.advance(maxSleep)
		h.noDelivery()
		if st := h.r.Status()[0]; !st.NextDue.Equal(epoch.Add(-year + time.Hour)) {
			t.Fatalf("next due %v after the clock went back a year, want %v", st.NextDue, epoch.Add(-year+time.Hour))
		}
		// Saved too: a restart before the next run keeps that due time.
		if st := store.saved()["s"]; st.LastFinished.After(clock.Now()) || st.FirstSeen.After(clock.Now().Add(time.Hour)) {
			t.Fatalf("saved %+v: the clock set back is not saved", st)
		}
		clock.Advance(time.Hour - 2*time.Minute)
		if id := h.delivered(); id != RunID("s", 2, epoch.Add(-year+time.Hour)) {
			t.Fatalf("run after the clock went back %s", id)
		}
	})
	t.Run("backwards a year across a restart", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: time.Hour})
		id := h.delivered()
		clock.Advance(time.Minute)
		h.finish(id, Result{})
		h.shutdown()
		clock.Jump(epoch.Add(-year))
		h2 := newHarness(t, clock, store, boxes, spec{every: time.Hour})
		if st := h2.r.Status()[0]; !st.NextDue.Equal(epoch.Add(-year+time.Hour)) || st.RunsCompleted != 1 {
			t.Fatalf("after a restart with the clock a year back: %+v", st)
		}
		h2.noDelivery()
	})
}

// A tiny every whose runs are refused at once (a full backlog, on_error:
// continue) retries once per refusedPause, not as fast as the disk goes.
func TestRunnerRefusedRunsPause(t *testing.T) {
	clock, store, boxes := newParts(t)
	boxes.refuse = errors.New("a holds 256 messages, its backlog limit is 256")
	h := newHarness(t, clock, store, boxes, spec{every: time.Nanosecond, cont: true})
	h.event(EvRunFinished)
	h.settled()
	if at := h.wakesAt(); !at.Equal(epoch.Add(refusedPause)) {
		t.Fatalf("after a refused run the runner wakes at %v, want a pause later", at)
	}
	clock.Advance(refusedPause)
	if e := h.event(EvRunFinished); e.State.RunsFailed != 2 || !e.State.LastStarted.Equal(epoch.Add(refusedPause)) {
		t.Fatalf("second refused run %+v, want it a pause after the first", e.State)
	}
	h.settled()
	if at := h.wakesAt(); !at.Equal(epoch.Add(2 * refusedPause)) {
		t.Fatalf("after a second refused run the runner wakes at %v, want a pause later", at)
	}
	boxes.mu.Lock()
	boxes.refuse = nil
	boxes.mu.Unlock()
	clock.Advance(refusedPause)
	if id := h.delivered(); id != RunID("s", 3, epoch.Add(2*refusedPause)) {
		t.Fatalf("run after the backlog cleared %s", id)
	}
}

// lose removes id from the boxes, as an agent deleting the file or the
// inbox moving it to bad/ as unreadable does.
func (f *fakeBoxes) lose(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.msgs, id)
}

// A run whose message leaves every inbox without an outcome (deleted, or
// quarantined as unreadable) fails at the second look, instead of keeping
// its schedule running until the daemon restarts; one whose outcome was
// recorded but not reported finishes.
func TestRunnerRunLostInFlight(t *testing.T) {
	t.Run("lost", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: time.Hour})
		id := h.delivered()
		h.event(EvRunStarted)
		h.settled()
		h.advance(maxSleep)
		boxes.lose(id)
		h.advance(maxSleep)
		if st := h.r.Status()[0]; st.State != Running {
			t.Fatalf("failed at the first look: %+v", st)
		}
		clock.Advance(maxSleep)
		e := h.event(EvRunFinished)
		if e.ID != id || e.State.State != Failed || e.State.RunsCompleted != 0 || e.State.RunsFailed != 1 || !strings.Contains(e.State.LastError, "in no inbox") {
			t.Fatalf("lost run %+v", e.State)
		}
		if st := store.saved()["s"]; st.State != Failed {
			t.Fatalf("saved %+v", st)
		}
	})
	t.Run("outcome not reported", func(t *testing.T) {
		clock, store, boxes := newParts(t)
		h := newHarness(t, clock, store, boxes, spec{every: time.Hour})
		id := h.delivered()
		h.event(EvRunStarted)
		h.settled()
		boxes.record(id, Result{Recorded: true})
		clock.Advance(maxSleep)
		if e := h.event(EvRunFinished); e.ID != id || e.State.State != Waiting || e.State.RunsCompleted != 1 {
			t.Fatalf("finished %+v", e.State)
		}
	})
}
