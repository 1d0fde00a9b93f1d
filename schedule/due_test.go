package schedule

import (
	"errors"
	"math/big"
	"testing"
	"time"
)

// epoch is the fixed origin of the tests' times.
var epoch = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

func TestNext(t *testing.T) {
	far := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		anchor time.Time
		every  time.Duration
		now    time.Time
		want   time.Time
		err    error
	}{
		{"before the anchor", epoch, time.Hour, epoch.Add(-5 * time.Minute), epoch, nil},
		{"long before the anchor", epoch, time.Hour, epoch.Add(-1000 * time.Hour), epoch, nil},
		{"at the anchor: strictly after", epoch, time.Hour, epoch, epoch.Add(time.Hour), nil},
		{"just after the anchor", epoch, time.Hour, epoch.Add(time.Nanosecond), epoch.Add(time.Hour), nil},
		{"on a tick: the next one", epoch, 30 * time.Minute, epoch.Add(90 * time.Minute), epoch.Add(2 * time.Hour), nil},
		{"missed ticks collapse", epoch, 10 * time.Minute, epoch.Add(3*time.Hour + 5*time.Minute), epoch.Add(3*time.Hour + 10*time.Minute), nil},
		{"one ns before a tick", epoch, time.Minute, epoch.Add(time.Minute - time.Nanosecond), epoch.Add(time.Minute), nil},
		{"nanosecond period", epoch, time.Nanosecond, epoch.Add(7), epoch.Add(8), nil},
		{"zone of the anchor kept", epoch.In(time.FixedZone("x", 3600)), time.Hour, epoch.Add(time.Hour), epoch.Add(2 * time.Hour), nil},
		{"every zero", epoch, 0, epoch, time.Time{}, nil},
		{"every negative", epoch, -time.Minute, epoch, time.Time{}, nil},
		{"k·every beyond a duration", epoch, 200 * 365 * 24 * time.Hour, epoch.Add(250 * 365 * 24 * time.Hour), epoch.Add(200 * 365 * 24 * time.Hour).Add(200 * 365 * 24 * time.Hour), nil},
		{"distance beyond a duration", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Hour, far, far.Add(time.Hour), nil},
		{"year 1700, odd period", time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC), 7 * time.Second, time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC).Add(1<<62 + 5), time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC).Add(4_611_686_023 * time.Second), nil}, // 2⁶² ns is 4,611,686,018.43 s; 7 divides 4,611,686,016
		{"largest period, one step", epoch, time.Duration(1<<63 - 1), epoch, epoch.Add(time.Duration(1<<63 - 1)), nil},
		{"tick after year 9999", time.Date(9999, 6, 1, 0, 0, 0, 0, time.UTC), time.Duration(1<<63 - 1), time.Date(9999, 6, 1, 0, 0, 0, 0, time.UTC), time.Time{}, ErrOverflow},
		{"tick in year 10000", time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), time.Hour, time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), time.Time{}, ErrOverflow},
		{"an anchor in year 9999 is no overflow while it is ahead", time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), time.Hour, epoch, time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Next(tt.anchor, tt.every, tt.now)
			if tt.every <= 0 {
				if err == nil {
					t.Fatalf("Next = %v, want an error", got)
				}
				return
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Next = %v, %v; want %v", got, err, tt.err)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("Next = %v, %v; want %v", got, err, tt.want)
			}
			if !got.After(tt.now) && !tt.now.Before(tt.anchor) {
				t.Fatalf("Next = %v is not after now %v", got, tt.now)
			}
		})
	}
}

func intp(n int) *int { return &n }

func TestPlan(t *testing.T) {
	tests := []struct {
		name     string
		spec     spec
		st       State
		now      time.Time
		wantDue  bool
		wantNext time.Time
		wantSt   string
	}{
		{"first run at the anchor (first seen)", spec{every: time.Hour}, State{FirstSeen: epoch}, epoch, true, epoch, Waiting},
		{"first run at start_at, later", spec{every: time.Hour, start: epoch.Add(time.Hour)}, State{FirstSeen: epoch}, epoch, false, epoch.Add(time.Hour), Waiting},
		{"first run: start_at long past runs once now", spec{every: time.Hour, start: epoch.Add(-50 * time.Hour)}, State{FirstSeen: epoch}, epoch, true, epoch.Add(-50 * time.Hour), Waiting},
		{"after a run: the first tick after it finished", spec{every: time.Hour}, State{FirstSeen: epoch, Runs: 1, RunsCompleted: 1, LastFinished: epoch.Add(150 * time.Minute)}, epoch.Add(150 * time.Minute), false, epoch.Add(3 * time.Hour), Waiting},
		{"max_runs 0 stops at once", spec{every: time.Hour, maxRuns: intp(0)}, State{FirstSeen: epoch}, epoch, false, time.Time{}, Stopped},
		{"max_runs reached", spec{every: time.Hour, maxRuns: intp(2)}, State{FirstSeen: epoch, Runs: 2, RunsCompleted: 2, LastFinished: epoch}, epoch, false, time.Time{}, Stopped},
		{"max_runs counts completed runs, not refused ones", spec{every: time.Hour, maxRuns: intp(2)}, State{FirstSeen: epoch, Runs: 3, RunsCompleted: 1, LastFinished: epoch}, epoch, false, epoch.Add(time.Hour), Waiting},
		{"stop_at exclusive: a tick on it does not start", spec{every: time.Hour, stop: epoch.Add(time.Hour)}, State{FirstSeen: epoch, Runs: 1, RunsCompleted: 1, LastFinished: epoch.Add(time.Minute)}, epoch.Add(time.Minute), false, time.Time{}, Stopped},
		{"stop_at: a tick before it does", spec{every: time.Hour, stop: epoch.Add(time.Hour + 1)}, State{FirstSeen: epoch, Runs: 1, RunsCompleted: 1, LastFinished: epoch.Add(time.Minute)}, epoch.Add(time.Minute), false, epoch.Add(time.Hour), Waiting},
		{"stop_at passed while the daemon was down", spec{every: time.Hour, stop: epoch.Add(time.Hour)}, State{FirstSeen: epoch}, epoch.Add(2 * time.Hour), false, time.Time{}, Stopped},
		{"a tick after year 9999 fails the schedule", spec{every: 200 * 365 * 24 * time.Hour}, State{FirstSeen: time.Date(9700, 1, 1, 0, 0, 0, 0, time.UTC), Runs: 1, RunsCompleted: 1, LastFinished: time.Date(9950, 1, 1, 0, 0, 0, 0, time.UTC)}, time.Date(9950, 1, 1, 0, 0, 0, 0, time.UTC), false, time.Time{}, Failed},
		{"clock set back after the run: the first tick after now, not after the run's future end", spec{every: time.Hour}, State{FirstSeen: epoch, Runs: 1, RunsCompleted: 1, LastFinished: epoch.Add(365 * 24 * time.Hour)}, epoch.Add(90 * time.Minute), false, epoch.Add(2 * time.Hour), Waiting},
		{"clock set back before first seen: ticks keep their phase", spec{every: time.Hour}, State{FirstSeen: epoch.Add(365*24*time.Hour + 30*time.Minute), Runs: 1, RunsCompleted: 1, LastFinished: epoch.Add(365*24*time.Hour + 31*time.Minute)}, epoch, false, epoch.Add(30 * time.Minute), Waiting},
		{"clock set back before first seen, never run", spec{every: 24 * time.Hour}, State{FirstSeen: epoch.Add(365*24*time.Hour + 30*time.Minute)}, epoch, false, epoch.Add(30 * time.Minute), Waiting},
		{"clock set back centuries before first seen", spec{every: time.Hour}, State{FirstSeen: time.Date(9999, 1, 1, 0, 30, 0, 0, time.UTC), Runs: 1, RunsCompleted: 1, LastFinished: time.Date(9999, 1, 1, 0, 31, 0, 0, time.UTC)}, epoch, false, epoch.Add(time.Hour), Waiting},
		{"start_at is the user's: the clock set back waits for it", spec{every: time.Hour, start: epoch.Add(365 * 24 * time.Hour)}, State{FirstSeen: epoch, Runs: 1, RunsCompleted: 1, LastFinished: epoch.Add(365*24*time.Hour + time.Minute)}, epoch, false, epoch.Add(365 * 24 * time.Hour), Waiting},
		{"not waiting: nothing to do", spec{every: time.Hour}, State{FirstSeen: epoch, State: Failed}, epoch, false, time.Time{}, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.st
			st.Name = "s"
			if st.State == "" {
				st.State = Waiting
			}
			due := plan(tt.spec.team(), &st, tt.now)
			if due != tt.wantDue || !st.NextDue.Equal(tt.wantNext) || st.State != tt.wantSt {
				t.Fatalf("plan = %v, next %v, state %s (%s); want %v, %v, %s", due, st.NextDue, st.State, st.LastError, tt.wantDue, tt.wantNext, tt.wantSt)
			}
			if tt.spec.start.IsZero() && st.FirstSeen.After(tt.now.Add(tt.spec.every)) {
				t.Fatalf("first seen %v is more than a period after now %v", st.FirstSeen, tt.now)
			}
			if st.State == Failed && tt.st.State == "" && st.LastError == "" {
				t.Fatalf("failed without an error")
			}
		})
	}
}

func TestRunIDValid(t *testing.T) {
	id := RunID("nightly-report", 12, epoch.In(time.FixedZone("x", 7200)))
	if id != "20300601T120000.000000000Z-schedule.nightly-report.12" {
		t.Fatalf("RunID = %q", id)
	}
}

// A schedule anchored centuries back (more than a time.Duration spans) or
// far ahead keeps to its ticks, whatever today is.
func TestPlanFarFromNow(t *testing.T) {
	now := time.Now().UTC()
	day := func(t0 time.Time) time.Time {
		// The first instant after now with t0's clock time, in UTC.
		d := time.Date(now.Year(), now.Month(), now.Day(), t0.Hour(), t0.Minute(), t0.Second(), t0.Nanosecond(), time.UTC)
		if !d.After(now) {
			d = d.AddDate(0, 0, 1)
		}
		return d
	}
	back300 := now.AddDate(-300, 0, 0).Add(-time.Hour)
	year1700 := time.Date(1700, 3, 1, 0, 30, 0, 0, time.UTC)
	halfPast := now.Truncate(time.Hour).Add(30 * time.Minute)
	if !halfPast.After(now) {
		halfPast = halfPast.Add(time.Hour)
	}
	ahead := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	ran := State{FirstSeen: now, Runs: 1, RunsCompleted: 1, LastFinished: now}
	tests := []struct {
		name     string
		spec     spec
		st       State
		wantDue  bool
		wantNext time.Time
	}{
		{"start_at 300 years back: first run at once", spec{every: 24 * time.Hour, start: back300}, State{FirstSeen: now}, true, back300},
		{"start_at 300 years back: then daily at its clock time", spec{every: 24 * time.Hour, start: back300}, ran, false, day(back300)},
		{"start_at in 1700: hourly at half past", spec{every: time.Hour, start: year1700}, ran, false, halfPast},
		{"start_at in year 9999: waits for it", spec{every: time.Hour, start: ahead}, State{FirstSeen: now}, false, ahead},
		{"start_at in year 9999, the clock set back after a run", spec{every: time.Hour, start: ahead}, ran, false, ahead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.st
			st.Name, st.State = "s", Waiting
			due := plan(tt.spec.team(), &st, now)
			if due != tt.wantDue || !st.NextDue.Equal(tt.wantNext) || st.State != Waiting {
				t.Fatalf("plan = %v, next %v, state %s (%s); want %v, %v, waiting", due, st.NextDue, st.State, st.LastError, tt.wantDue, tt.wantNext)
			}
			if err := st.Validate(); err != nil {
				t.Fatalf("the state does not fit the state file: %v", err)
			}
		})
	}
	// Any period, from 1700: the tick is after now, the one before is
	// not, and it is on the grid.
	for _, every := range []time.Duration{time.Nanosecond, 7*time.Minute + 13*time.Second + 5, 97 * 24 * time.Hour, time.Duration(1<<63 - 1)} {
		got, err := Next(year1700, every, now)
		if err != nil || !got.After(now) || got.Add(-every).After(now) {
			t.Fatalf("Next(1700, %s) = %v, %v", every, got, err)
		}
		if r := new(big.Int).Rem(nanosBetween(year1700, got), big.NewInt(int64(every))); r.Sign() != 0 {
			t.Fatalf("Next(1700, %s) = %v is %s ns off the grid", every, got, r)
		}
	}
}
