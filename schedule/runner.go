package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/team"
)

// Where a run's message stands (Deliverer.Lookup).
const (
	// Missing: the message is in no inbox: never delivered.
	Missing = iota
	// Pending: the message waits or runs; its outcome is not recorded.
	Pending
	// Recorded: its outcome is recorded.
	Recorded
)

// Deliverer delivers runs as messages. The daemon's implementation writes
// them into inboxes exactly like `batty send` from the human.
type Deliverer interface {
	// Deliver queues the prompt of spec as message id. It is idempotent by
	// id: an id present in any inbox (in done/ too) is not delivered
	// again, and that is no error. An error means nothing was queued (a
	// backlog at its limit, say): the run fails.
	Deliver(spec team.Schedule, id string, at time.Time) error
	// Lookup says where message id stands (Missing, Pending, Recorded),
	// with the run's result when Recorded.
	Lookup(id string) (int, Result, error)
}

// Store persists the states of the schedules. Save must be atomic: a
// crash leaves the old states or the new ones.
type Store interface {
	Load() (map[string]State, error)
	Save(map[string]State) error
}

// Event kinds a Runner reports.
const (
	EvRunStarted  = "schedule_run_started"  // a run was delivered
	EvRunFinished = "schedule_run_finished" // a run's outcome was recorded, or its delivery refused
	EvStopped     = "schedule_stopped"      // stop_at or max_runs reached
	EvFailed      = "schedule_failed"       // a run failed and on_error is stop, or the due time overflowed
)

// Event is one change of a schedule, for the daemon's event log.
type Event struct {
	Kind     string
	Schedule string
	// Run is the run number and ID its message id (for run events).
	Run int
	ID  string
	// Detail is the run's error, or why the schedule stopped or failed.
	Detail string
	// State is the schedule's state after the event.
	State State
}

// maxSleep bounds the loop's sleep. Timers run on elapsed time, which
// neither a wall clock set forwards nor a suspended machine moves on: the
// loop looks at the wall clock at least this often, so a run is never
// later than this after it is due.
const maxSleep = time.Minute

// refusedPause is how long a schedule whose run was refused (its message
// was not written, or its state not saved) waits at least before it starts
// the next: a run refused at once must not turn a small every into a loop
// writing the state file and the event log as fast as the disk goes.
const refusedPause = time.Second

// Runner runs a team's schedules. Create it with New, call Run once (it
// owns the loop's goroutine), and Finished whenever an outcome is recorded.
// Status is safe from any goroutine.
type Runner struct {
	specs   []team.Schedule
	byName  map[string]team.Schedule
	clock   Clock
	deliver Deliverer
	store   Store
	log     hclog.Logger
	onEvent func(Event)

	saveMu   sync.Mutex // held across a snapshot and its save: saves land in order
	mu       sync.Mutex
	states   map[string]State     // every known schedule's state, also of schedules gone from the file
	finished map[string]Result    // recorded outcomes not yet applied, by message id
	kick     chan struct{}        // buffered(1): finished has entries
	held     map[string]time.Time // no run starts before this, by schedule (refusedPause); Run's goroutine only
	missing  map[string]string    // run id found in no inbox at the last look, by schedule; Run's goroutine only
	loaded   bool                 // Load ran (Run's goroutine, or before Run)
	idle     func()               // tests: called by Run's goroutine each time it blocks with nothing pending
}

// New returns a Runner of specs. onEvent (may be nil) is called from the
// goroutines of Load and Run, one at a time; it must not block.
func New(specs []team.Schedule, clock Clock, d Deliverer, store Store, log hclog.Logger, onEvent func(Event)) *Runner {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	r := &Runner{specs: specs, byName: map[string]team.Schedule{}, clock: clock, deliver: d, store: store, log: log,
		onEvent: onEvent, states: map[string]State{}, finished: map[string]Result{}, kick: make(chan struct{}, 1),
		held: map[string]time.Time{}, missing: map[string]string{}}
	for _, s := range specs {
		r.byName[s.Name] = s
	}
	return r
}

// Load reads the persisted states and settles them at the current time:
// new schedules get their first-seen time, a run left running is finished
// from its recorded outcome, delivered when it is in no inbox (the daemon
// stopped between saving and delivering) or left to run when it waits.
// The states are saved. Run calls it unless it was called before (to
// show the states before the loop starts).
func (r *Runner) Load() error {
	loaded, err := r.store.Load()
	if err != nil {
		return err
	}
	now := r.clock.Now()
	was := map[string]string{} // the states as saved
	r.mu.Lock()
	r.states = loaded
	for _, spec := range r.specs {
		was[spec.Name] = r.states[spec.Name].State
		st, ok := r.states[spec.Name]
		switch {
		case !ok:
			r.states[spec.Name] = State{Name: spec.Name, FirstSeen: now.UTC(), State: Waiting}
		case st.State == Stopped:
			// Looked at again: the team file may have moved stop_at or
			// raised max_runs since.
			st.State = Waiting
			r.states[spec.Name] = st
		}
	}
	r.mu.Unlock()
	for _, spec := range r.specs {
		st := r.state(spec.Name)
		if st.State != Running {
			continue
		}
		where, res, err := r.deliver.Lookup(st.RunID)
		switch {
		case err != nil:
			// Left running: its outcome, once recorded, still finishes it.
			r.log.Warn("Cannot tell where a scheduled run stands; waiting for its outcome", "schedule", spec.Name, "id", st.RunID, "error", err)
		case where == Recorded:
			res.Recorded = true
			r.finish(spec, st.RunID, res, now)
			was[spec.Name] = r.state(spec.Name).State // finish told it
		case where == Missing:
			r.log.Info("Delivering a scheduled run the daemon did not deliver before it stopped", "schedule", spec.Name, "id", st.RunID)
			if err := r.deliverRun(spec, st.RunID, st.LastStarted); err != nil {
				r.finish(spec, st.RunID, Result{Failed: true, Error: "delivery refused: " + err.Error()}, now)
				was[spec.Name] = r.state(spec.Name).State
			}
		}
	}
	var ended []State
	for _, spec := range r.specs {
		st := r.state(spec.Name)
		plan(spec, &st, now)
		r.setState(st)
		if st.State != was[spec.Name] {
			// Told once: a schedule that stopped before this start is not
			// announced again.
			ended = append(ended, st)
		}
	}
	r.loaded = true
	if err := r.save(); err != nil {
		return err
	}
	for _, st := range ended {
		r.stopped(st)
	}
	return nil
}

// Finished tells the Runner that the outcome of message id was recorded.
// Messages that are no run in flight are ignored, so the daemon may call
// it for every outcome. It never blocks; safe from any goroutine.
func (r *Runner) Finished(id string, res Result) {
	res.Recorded = true
	r.mu.Lock()
	r.finished[id] = res
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Status returns the state of every schedule of the team file, in file
// order. Safe from any goroutine.
func (r *Runner) Status() []State {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]State, 0, len(r.specs))
	for _, s := range r.specs {
		if st, ok := r.states[s.Name]; ok {
			out = append(out, st)
		}
	}
	return out
}

// Run runs the schedules until ctx ends: it starts each run when it is due
// and finishes it when Finished reports its outcome. It returns nil when
// ctx ends, or the error of Load.
func (r *Runner) Run(ctx context.Context) error {
	if !r.loaded {
		if err := r.Load(); err != nil {
			return err
		}
	}
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	lastLook := r.clock.Now() // Load looked at the runs in flight
	for {
		r.applyFinished()
		if now := r.clock.Now(); now.Sub(lastLook) >= maxSleep || now.Before(lastLook) {
			// By the wall clock, whatever wakes the loop (outcomes of
			// other messages may come more often than the timer fires).
			r.checkInFlight()
			lastLook = now
		}
		wake := r.startDue()
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		var fire <-chan time.Time
		switch now := r.clock.Now(); {
		case !wake.IsZero():
			timer = r.clock.TimerAt(minTime(wake, now.Add(maxSleep)))
		case r.anyRunning():
			timer = r.clock.TimerAt(lastLook.Add(maxSleep))
		}
		if timer != nil {
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
			continue
		case <-fire:
			timer = nil
			continue
		default:
		}
		if r.idle != nil {
			r.idle() // tests: nothing is pending, the loop blocks
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
		case <-fire:
			timer = nil
		}
	}
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// anyRunning reports whether a schedule of the team file has a run in
// flight.
func (r *Runner) anyRunning() bool {
	for _, spec := range r.specs {
		if r.state(spec.Name).State == Running {
			return true
		}
	}
	return false
}

// checkInFlight looks the runs in flight up in the inboxes (Run's
// goroutine, once every maxSleep). One whose outcome is recorded finishes with it, should its
// report have been missed. One whose message is in no inbox at two looks
// in a row (deleted, or moved to bad/ as unreadable: it will never have an
// outcome) fails, rather than keep its schedule running until the daemon
// restarts; two looks, because a message moving between boxes may be
// missed by one.
func (r *Runner) checkInFlight() {
	now := r.clock.Now()
	for _, spec := range r.specs {
		st := r.state(spec.Name)
		if st.State != Running {
			delete(r.missing, spec.Name)
			continue
		}
		where, res, err := r.deliver.Lookup(st.RunID)
		switch {
		case err != nil:
			r.log.Warn("Cannot tell where a scheduled run stands", "schedule", spec.Name, "id", st.RunID, "error", err)
		case where == Recorded:
			delete(r.missing, spec.Name)
			res.Recorded = true
			r.finish(spec, st.RunID, res, now)
		case where == Missing && r.missing[spec.Name] == st.RunID:
			delete(r.missing, spec.Name)
			r.finish(spec, st.RunID, Result{Failed: true, Error: "its message " + st.RunID +
				" is in no inbox any more, with no outcome (deleted, or moved to bad/ as unreadable)"}, now)
		case where == Missing:
			r.missing[spec.Name] = st.RunID
		default:
			delete(r.missing, spec.Name)
		}
	}
}

// applyFinished finishes the runs whose outcome Finished reported.
func (r *Runner) applyFinished() {
	r.mu.Lock()
	done := r.finished
	r.finished = map[string]Result{}
	r.mu.Unlock()
	if len(done) == 0 {
		return
	}
	now := r.clock.Now()
	for _, spec := range r.specs {
		st := r.state(spec.Name)
		if res, ok := done[st.RunID]; ok && st.State == Running {
			r.finish(spec, st.RunID, res, now)
		}
	}
}

// startDue starts every run that is due and returns when the next one is
// (zero: none waits).
func (r *Runner) startDue() time.Time {
	var wake time.Time
	for _, spec := range r.specs {
		now := r.clock.Now()
		st := r.state(spec.Name)
		if st.State != Waiting {
			// Only Resume changes a schedule at rest (failed → waiting):
			// never written back from a stale copy here.
			continue
		}
		before := st
		due := plan(spec, &st, now)
		r.setState(st)
		switch {
		case st.State != before.State:
			r.saveLogged()
			r.stopped(st)
		case !st.FirstSeen.Equal(before.FirstSeen) || !st.LastFinished.Equal(before.LastFinished):
			// The clock was set back (plan moved them): kept, so that a
			// restart keeps the due time.
			r.saveLogged()
		}
		if !due || now.Before(r.held[spec.Name]) {
			continue
		}
		delete(r.held, spec.Name)
		id := start(&st, now)
		r.setState(st)
		// Saved before it is delivered: a crash in between delivers this
		// id at the next start, never a second run.
		if err := r.save(); err != nil {
			r.held[spec.Name] = now.Add(refusedPause)
			r.finish(spec, id, Result{Failed: true, Error: "saving the schedule's state failed: " + err.Error()}, now)
			continue
		}
		if err := r.deliverRun(spec, id, st.LastStarted); err != nil {
			r.held[spec.Name] = now.Add(refusedPause)
			r.finish(spec, id, Result{Failed: true, Error: "delivery refused: " + err.Error()}, now)
			continue
		}
		r.emit(Event{Kind: EvRunStarted, Schedule: spec.Name, Run: st.Runs, ID: id, State: st})
	}
	// A run that ended at once (refused) waits for its next tick too, and
	// for its pause.
	for _, spec := range r.specs {
		st := r.state(spec.Name)
		if st.State != Waiting {
			continue
		}
		at := st.NextDue
		if h := r.held[spec.Name]; h.After(at) {
			at = h
		}
		if wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	return wake
}

// finish ends run id of spec with res at now, saves it and then reports
// it.
func (r *Runner) finish(spec team.Schedule, id string, res Result, now time.Time) {
	st := r.state(spec.Name)
	run := st.Runs
	finish(spec, &st, res, now)
	if st.State == Waiting {
		plan(spec, &st, now)
	}
	r.setState(st)
	r.saveLogged()
	r.emit(Event{Kind: EvRunFinished, Schedule: spec.Name, Run: run, ID: id, Detail: res.Error, State: st})
	r.stopped(st)
}

// stopped reports a schedule that stopped or failed.
func (r *Runner) stopped(st State) {
	switch st.State {
	case Stopped:
		r.emit(Event{Kind: EvStopped, Schedule: st.Name, Detail: stopReason(r.byName[st.Name], st), State: st})
	case Failed:
		r.emit(Event{Kind: EvFailed, Schedule: st.Name, Detail: st.LastError, State: st})
	}
}

// stopReason says why a stopped schedule stopped.
func stopReason(spec team.Schedule, st State) string {
	if spec.MaxRuns != nil && st.RunsCompleted >= *spec.MaxRuns {
		return fmt.Sprintf("max_runs (%d) reached", *spec.MaxRuns)
	}
	return "stop_at (" + spec.StopAt.UTC().Format(time.RFC3339) + ") reached"
}

func (r *Runner) emit(e Event) {
	if r.onEvent != nil {
		r.onEvent(e)
	}
}

func (r *Runner) state(name string) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states[name]
}

func (r *Runner) setState(st State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states[st.Name] = st
}

// save persists every state.
func (r *Runner) save() error {
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	r.mu.Lock()
	snap := make(map[string]State, len(r.states))
	for k, v := range r.states {
		snap[k] = v
	}
	r.mu.Unlock()
	if err := r.store.Save(snap); err != nil {
		return fmt.Errorf("save schedule states: %w", err)
	}
	return nil
}

// saveLogged persists every state; a failure is logged (the states stay in
// memory and the next save retries).
func (r *Runner) saveLogged() {
	if err := r.save(); err != nil && !errors.Is(err, context.Canceled) {
		r.log.Error("Saving the schedules' state failed", "error", err)
	}
}

// Resume puts every failed schedule of the team file back to waiting (its
// count and last error kept): its next run is due at the first tick after
// the run that failed, at once when that has passed. It returns their
// names (none: nil). Safe from any goroutine; the loop starts the runs.
func (r *Runner) Resume() []string {
	var names []string
	r.mu.Lock()
	for _, spec := range r.specs {
		if st, ok := r.states[spec.Name]; ok && st.State == Failed {
			st.State = Waiting
			r.states[spec.Name] = st
			names = append(names, spec.Name)
		}
	}
	r.mu.Unlock()
	if names == nil {
		return nil
	}
	r.saveLogged()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return names
}

// ResumeFailed is Resume for states at rest (no Runner runs): failed
// schedules among names go back to waiting. It returns their names.
func ResumeFailed(states map[string]State, names []string) []string {
	var out []string
	for _, n := range names {
		if st, ok := states[n]; ok && st.State == Failed {
			st.State = Waiting
			states[n] = st
			out = append(out, n)
		}
	}
	return out
}

// deliverRun delivers run id and returns the error of a delivery that was
// refused: the run is in no box. A Deliver that failed after the message
// was written (a failed fsync after the rename), or whose failure leaves
// where the run is unknown, is not a refusal: the run stays in flight,
// its outcome finishes it and the in-flight look settles it otherwise, so
// single flight holds and the run's outcome is counted.
func (r *Runner) deliverRun(spec team.Schedule, id string, at time.Time) error {
	err := r.deliver.Deliver(spec, id, at)
	if err == nil {
		return nil
	}
	where, _, lerr := r.deliver.Lookup(id)
	if lerr == nil && where == Missing {
		return err
	}
	r.log.Warn("Delivering a scheduled run failed, but the run may be queued: it stays in flight", "schedule", spec.Name, "id", id, "error", err, "lookup_error", lerr)
	return nil
}
