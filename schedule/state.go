// Package schedule runs the team's scheduled prompts (team.yaml
// schedules): when each run is due, the state of every schedule, and the
// loop that starts runs through a Deliverer and finishes them when their
// outcome is recorded. It knows nothing of inboxes or files: the daemon
// gives it a Deliverer and a Store, and a Clock (a fakeclock.Clock in tests).
//
// Semantics (docs/config.md, "schedules"): runs are due at anchor + k·every,
// the anchor being start_at, or the moment the daemon first saw the
// schedule; the first run is due at the anchor. One run at a time; after a
// run the next is due at the first tick strictly after the moment it
// finished, so missed ticks collapse into one. stop_at is an exclusive
// bound for starting runs; max_runs bounds the completed runs (0 = stopped
// at once). A failed run stops the schedule as failed, unless on_error is
// continue. The loop reads the wall clock at least once a minute; a clock
// set back brings a run's end or the first-seen anchor found in the future
// back to now (the anchor by whole periods), so it never stalls a schedule.
package schedule

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// States of a schedule.
const (
	// Waiting: the next run is due at NextDue.
	Waiting = "waiting"
	// Running: run RunID was delivered and its outcome is not recorded yet.
	Running = "running"
	// Stopped: no run will start again (stop_at or max_runs reached).
	Stopped = "stopped"
	// Failed: a run failed (or could not be delivered, or its due time
	// overflowed) and on_error is stop; LastError says why.
	Failed = "failed"
)

// Limits of a decoded state file.
const (
	// MaxErrorLen bounds State.LastError, in bytes.
	MaxErrorLen = 4096
	// MaxStates bounds the schedules of a state file.
	MaxStates = 10_000
	// MaxCount bounds the run counts of a state, far beyond any
	// schedule's life: a schedule that has started so many runs fails
	// rather than wrap a count around.
	MaxCount = math.MaxInt32
)

// idLayout is the time part of a run's message id: the layout of the
// inbox's generated ids, so that a run queues in time order among them.
const idLayout = "20060102T150405.000000000Z"

// RunID returns the message id of run number run of the schedule name,
// started at: "<UTC time>-schedule.<name>.<run>", e.g.
// "20261121T090000.000000000Z-schedule.nightly.3". It is persisted before
// the run is delivered, so a restart delivers the same id again, never a
// second message. The time part makes the run sort among the inbox's
// generated ids by when it was sent. It is a pure function.
func RunID(name string, run int, at time.Time) string {
	return at.UTC().Format(idLayout) + "-schedule." + name + "." + strconv.Itoa(run)
}

// State is the persisted state of one schedule, kept by name in the
// daemon's state/schedules.json. Times are UTC; a zero time is unknown.
type State struct {
	// Name is the schedule's name.
	Name string `json:"name"`
	// FirstSeen is when the daemon first saw the schedule: its anchor when
	// it has no start_at.
	FirstSeen time.Time `json:"first_seen"`
	// State is Waiting, Running, Stopped or Failed.
	State string `json:"state"`
	// Runs is the number of the last run started (run ids count from 1).
	Runs int `json:"runs"`
	// RunID is the message id of the run in flight while Running.
	RunID string `json:"run_id,omitempty"`
	// RunsCompleted counts the runs whose outcome was recorded, whatever
	// it was; max_runs bounds it.
	RunsCompleted int `json:"runs_completed"`
	// RunsFailed counts the runs that failed: a recorded outcome other than
	// completed, or a delivery refused.
	RunsFailed int `json:"runs_failed"`
	// NextDue is when the next run is due, while Waiting.
	NextDue time.Time `json:"next_due,omitzero"`
	// LastStarted and LastFinished are when the last run was delivered and
	// when it finished.
	LastStarted  time.Time `json:"last_started,omitzero"`
	LastFinished time.Time `json:"last_finished,omitzero"`
	// LastError is the error of the last failed run, or why the schedule
	// stopped or failed.
	LastError string `json:"last_error,omitempty"`
}

var states = []string{Waiting, Running, Stopped, Failed}

// Validate reports the first way s is not a valid state, or nil. It is a
// pure function.
func (s *State) Validate() error {
	switch {
	case !team.ValidName(s.Name):
		return fmt.Errorf("invalid schedule name %.60q", s.Name)
	case !slices.Contains(states, s.State):
		return fmt.Errorf("schedule %s: invalid state %.40q", s.Name, s.State)
	case s.Runs < 0 || s.RunsCompleted < 0 || s.RunsFailed < 0 || s.RunsCompleted > s.Runs || s.Runs > MaxCount || s.RunsFailed > MaxCount:
		return fmt.Errorf("schedule %s: invalid run counts (%d started, %d completed, %d failed)", s.Name, s.Runs, s.RunsCompleted, s.RunsFailed)
	case s.State == Running && (s.Runs < 1 || s.RunID != RunID(s.Name, s.Runs, s.LastStarted)):
		return fmt.Errorf("schedule %s: running, but run id %.140q is not run %d started at %s", s.Name, s.RunID, s.Runs, s.LastStarted.UTC().Format(time.RFC3339Nano))
	case s.State != Running && s.RunID != "":
		return fmt.Errorf("schedule %s: %s with a run id", s.Name, s.State)
	case len(s.LastError) > MaxErrorLen || !utf8.ValidString(s.LastError):
		return fmt.Errorf("schedule %s: last_error is too long or not valid UTF-8", s.Name)
	}
	for _, t := range []time.Time{s.FirstSeen, s.NextDue, s.LastStarted, s.LastFinished} {
		if !t.IsZero() && (t.Year() < 1 || t.Year() > 9999) {
			return fmt.Errorf("schedule %s: time out of range", s.Name)
		}
	}
	return nil
}

// fileState is the content of the state file.
type fileState struct {
	Schedules []State `json:"schedules"`
}

// Decode parses a state file: every schedule's state, by name. It refuses
// (with an error, never a panic) anything but a valid file: invalid JSON,
// an invalid state, a name twice, more than MaxStates schedules. Empty
// data is no state at all. It is a pure function.
func Decode(data []byte) (map[string]State, error) {
	out := map[string]State{}
	if len(data) == 0 {
		return out, nil
	}
	var f fileState
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decode schedule states: %w", err)
	}
	if len(f.Schedules) > MaxStates {
		return nil, fmt.Errorf("decode schedule states: %d schedules, at most %d", len(f.Schedules), MaxStates)
	}
	for _, s := range f.Schedules {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("decode schedule states: %w", err)
		}
		if _, dup := out[s.Name]; dup {
			return nil, fmt.Errorf("decode schedule states: schedule %s twice", s.Name)
		}
		out[s.Name] = s
	}
	return out, nil
}

// Encode renders states as a state file, sorted by name. It is a pure
// function.
func Encode(states map[string]State) ([]byte, error) {
	f := fileState{Schedules: make([]State, 0, len(states))}
	for _, s := range states {
		f.Schedules = append(f.Schedules, s)
	}
	slices.SortFunc(f.Schedules, func(a, b State) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode schedule states: %w", err)
	}
	return append(b, '\n'), nil
}

// anchor is the time the schedule's runs count from.
func anchor(spec team.Schedule, st State) time.Time {
	if !spec.StartAt.IsZero() {
		return spec.StartAt
	}
	return st.FirstSeen
}

// Result is what became of a run.
type Result struct {
	// Recorded is set when the run's outcome was recorded (it ran); unset
	// when its delivery was refused.
	Recorded bool
	// Failed is set when the run did not complete; Error says why.
	Failed bool
	Error  string
}

// plan settles a state that is not running against spec at now: it stops
// the schedule once max_runs or stop_at says so, fails it when its due time
// overflows, and otherwise sets NextDue. It reports whether a run is due
// (NextDue ≤ now). It is a pure function of its arguments.
func plan(spec team.Schedule, st *State, now time.Time) (due bool) {
	if st.State != Waiting {
		return false
	}
	if spec.MaxRuns != nil && st.RunsCompleted >= *spec.MaxRuns {
		st.State, st.NextDue = Stopped, time.Time{}
		return false
	}
	if st.Runs >= MaxCount || st.RunsFailed >= MaxCount {
		st.State, st.NextDue, st.LastError = Failed, time.Time{}, fmt.Sprintf("%d runs started: no count beyond that; rename the schedule to start it afresh", st.Runs)
		return false
	}
	rewind(spec, st, now)
	next := anchor(spec, *st)
	if st.Runs > 0 {
		if now.Before(st.LastFinished) {
			// The clock was set back since the run finished: that moment
			// is taken to be now (kept, so that the next due stays put
			// while the clock runs up to it).
			st.LastFinished = now.UTC()
		}
		var err error
		if next, err = Next(next, spec.Every, st.LastFinished); err != nil {
			st.State, st.NextDue, st.LastError = Failed, time.Time{}, textclip.Bytes(err.Error(), MaxErrorLen, "")
			return false
		}
	}
	if !spec.StopAt.IsZero() && (!next.Before(spec.StopAt) || !now.Before(spec.StopAt)) {
		st.State, st.NextDue = Stopped, time.Time{}
		return false
	}
	st.NextDue = next
	return !next.After(now)
}

// rewind moves the first-seen anchor of st back by whole periods when the
// clock was set back before it (to less than one period after now), so
// that the ticks keep their phase and the next run is due
// within a period, not once the clock reaches the anchor again. A user's
// start_at is never moved. It changes nothing while the clock runs
// forward.
func rewind(spec team.Schedule, st *State, now time.Time) {
	if !spec.StartAt.IsZero() || !st.FirstSeen.After(now) || spec.Every <= 0 {
		return
	}
	gap := st.FirstSeen.Sub(now)
	if gap == math.MaxInt64 {
		// Too far to count in periods (Sub saturates): start the ticks
		// from now.
		st.FirstSeen = now.UTC()
		return
	}
	st.FirstSeen = st.FirstSeen.Add(-(gap / spec.Every) * spec.Every)
}

// start marks the next run of st as started at now and returns its id.
func start(st *State, now time.Time) string {
	st.Runs++
	st.State, st.NextDue, st.LastStarted = Running, time.Time{}, now.UTC()
	st.RunID = RunID(st.Name, st.Runs, st.LastStarted)
	return st.RunID
}

// finish ends the running run of st with r at now: counted, and the
// schedule waits for its next run, or fails (on_error: stop).
func finish(spec team.Schedule, st *State, r Result, now time.Time) {
	st.State, st.RunID, st.LastFinished = Waiting, "", now.UTC()
	if r.Recorded {
		st.RunsCompleted++
	}
	if r.Failed {
		st.RunsFailed++
		st.LastError = textclip.Bytes(r.Error, MaxErrorLen, "")
		if st.LastError == "" {
			st.LastError = "run failed"
		}
		if spec.OnError != team.OnErrorContinue {
			st.State = Failed
		}
	}
}
