package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/schedule"
	"github.com/battyhq/batty/schedule/fakeclock"
)

// withClock gives the daemon's schedules clock.
func withClock(c schedule.Clock) func(*Options) {
	return func(o *Options) { o.ScheduleClock = c }
}

// scheduleOf returns the status of schedule name.
func scheduleOf(t *testing.T, st *control.Status, name string) control.ScheduleStatus {
	t.Helper()
	for _, s := range st.Schedules {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no schedule %s in %+v", name, st.Schedules)
	return control.ScheduleStatus{}
}

// scheduleJSON returns schedule name of the status as `batty status --json`
// prints it.
func scheduleJSON(t *testing.T, st *control.Status, name string) map[string]any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Schedules []map[string]any `json:"schedules"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, s := range v.Schedules {
		if s["name"] == name {
			return s
		}
	}
	t.Fatalf("no schedule %s in %s", name, b)
	return nil
}

func TestScheduleRunsAndARestartKeepsItsCount(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\nschedules:\n"+
		"  - {name: hourly, to: worker, prompt: \"scheduled hello\", every: 1h}\n"+
		"  - {name: never, to: worker, prompt: x, every: 1m, max_runs: 0}\n",
		"  - name: worker\n")
	t0 := time.Now().Truncate(time.Second)
	clock := fakeclock.New(t0)
	r := p.start(withClock(clock))
	// The first run is due when the daemon first sees the schedule.
	started := r.waitEvent(t, "run started", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunStarted })
	id := started.Message
	if id != schedule.RunID("hourly", 1, t0) || payloadOf[eventlog.Schedule](started).To != "worker" {
		t.Fatalf("run started %+v", started)
	}
	if st := r.finished(t, id); st != inbox.StatusCompleted {
		t.Fatalf("run %s: %s", id, st)
	}
	r.waitEvent(t, "run finished", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunFinished && e.Message == id })

	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	s := scheduleOf(t, st, "hourly")
	if s.State != schedule.Waiting || s.To != "worker" || s.RunsCompleted != 1 || s.RunsFailed != 0 || s.LastError != "" ||
		!s.NextDue.Equal(t0.Add(time.Hour)) || !s.LastStarted.Equal(t0) || s.LastFinished.IsZero() {
		t.Fatalf("status %+v", s)
	}
	js := scheduleJSON(t, st, "never")
	for _, k := range []string{"name", "to", "state", "runs_completed", "last_error"} {
		if _, ok := js[k]; !ok {
			t.Errorf("status JSON of a schedule lacks %q: %v", k, js)
		}
	}
	for _, k := range []string{"next_due", "last_started", "last_finished"} {
		if _, ok := js[k]; ok {
			t.Errorf("status JSON shows the unknown time %q: %v", k, js)
		}
	}
	if js["state"] != schedule.Stopped {
		t.Errorf("max_runs 0: state %v, want stopped", js["state"])
	}
	// The reply reaches the human like a reply to batty send, naming the
	// run (and with it the schedule) it answers.
	replies, _ := p.box("human").Pending()
	if len(replies) != 1 || replies[0].InReplyTo != id || !strings.Contains(replies[0].InReplyTo, "schedule.hourly.") || replies[0].Body != "ECHO:scheduled hello" {
		t.Fatalf("human inbox %+v", replies)
	}

	// A restart half an hour later neither repeats the run nor forgets it.
	r.stop(t)
	clock = fakeclock.New(t0.Add(30 * time.Minute))
	r = p.start(withClock(clock))
	st = call(t, p, control.Request{Op: control.OpStatus}).Status
	if s := scheduleOf(t, st, "hourly"); s.State != schedule.Waiting || s.RunsCompleted != 1 || !s.NextDue.Equal(t0.Add(time.Hour)) {
		t.Fatalf("status after restart %+v", s)
	}
	if n := p.deliveries(id); n != 1 {
		t.Fatalf("run 1 ran %d times", n)
	}
	clock.Set(t0.Add(time.Hour))
	id2 := r.waitEvent(t, "second run", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunStarted }).Message
	if id2 != schedule.RunID("hourly", 2, t0.Add(time.Hour)) {
		t.Fatalf("second run %s", id2)
	}
	r.waitEvent(t, "second run finished", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunFinished && e.Message == id2 })
	if s := scheduleOf(t, call(t, p, control.Request{Op: control.OpStatus}).Status, "hourly"); s.RunsCompleted != 2 || !s.NextDue.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("status after the second run %+v", s)
	}

	// A stopped team's status reads the schedules from their state file.
	r.stop(t)
	off, err := offline.Status(p.cfg, p.layout)
	if err != nil {
		t.Fatal(err)
	}
	if s := scheduleOf(t, &off, "hourly"); s.RunsCompleted != 2 || s.State != schedule.Waiting {
		t.Fatalf("offline status %+v", s)
	}
}

// A usage limit defers a scheduled run like any other message: the run
// waits (running), it does not fail, and completes once the pause ends.
func TestScheduleRunDeferredByQuotaPause(t *testing.T) {
	printed := time.Now().Add(2 * time.Hour).Truncate(time.Minute).UTC()
	p := newProjectWith(t, fmt.Sprintf("timeouts:\n  shutdown: 5s\nschedules:\n  - {name: q, to: worker, prompt: \"scenario:quota:%d\", every: 1h}\n", printed.Unix()),
		"  - name: worker\n")
	r := p.start(withClock(fakeclock.New(time.Now())))
	started := r.waitEvent(t, "run started", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunStarted })
	id := started.Message
	r.waitEvent(t, "requeue", func(e eventlog.Event) bool { return e.Type == eventlog.EvRequeued && e.Message == id })
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	if s := scheduleOf(t, st, "q"); s.State != schedule.Running || s.Running != id || s.LastError != "" || s.RunsFailed != 0 {
		t.Fatalf("schedule during the quota pause %+v", s)
	}
	if acc := accountOf(t, st, "worker"); !acc.Paused {
		t.Fatalf("account not paused: %+v", acc)
	}
	call(t, p, control.Request{Op: control.OpResume})
	e := r.waitEvent(t, "run finished", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunFinished && e.Message == id })
	if e.Detail != "" {
		t.Fatalf("run finished with %q", e.Detail)
	}
	if s := scheduleOf(t, call(t, p, control.Request{Op: control.OpStatus}).Status, "q"); s.State != schedule.Waiting || s.RunsCompleted != 1 || s.RunsFailed != 0 {
		t.Fatalf("schedule after the pause %+v", s)
	}
	if r.count(eventlog.EvScheduleRunStarted, "") != 1 {
		t.Fatalf("the deferred run was started again")
	}
}

// A failed run stops the schedule as failed, with the run's error.
func TestScheduleFailedRunStopsIt(t *testing.T) {
	p := newProjectWith(t, "max_attempts: 1\ntimeouts:\n  shutdown: 5s\nschedules:\n  - {name: f, to: worker, prompt: \"scenario:servererror\", every: 1m}\n",
		"  - name: worker\n")
	clock := fakeclock.New(time.Now())
	r := p.start(withClock(clock))
	e := r.waitEvent(t, "schedule failed", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleFailed })
	if !strings.Contains(e.Detail, "failed") {
		t.Fatalf("failed with %q", e.Detail)
	}
	s := scheduleOf(t, call(t, p, control.Request{Op: control.OpStatus}).Status, "f")
	if s.State != schedule.Failed || s.RunsFailed != 1 || s.LastError == "" {
		t.Fatalf("status %+v", s)
	}
	clock.Advance(time.Hour)
	if n := r.count(eventlog.EvScheduleRunStarted, ""); n != 1 {
		t.Fatalf("%d runs started after the failure", n)
	}
	// batty resume runs it again: at once, an hour of ticks having passed.
	if resp := call(t, p, control.Request{Op: control.OpResume}); len(resp.Schedules) != 1 || resp.Schedules[0] != "f" {
		t.Fatalf("resume answered %+v", resp)
	}
	e = r.waitEvent(t, "second run", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvScheduleRunStarted && payloadOf[eventlog.Schedule](e).Run == 2
	})
	if e.Message != schedule.RunID("f", 2, clock.Now()) {
		t.Fatalf("second run %s", e.Message)
	}
	r.waitEvent(t, "failed again", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvScheduleFailed && payloadOf[eventlog.Schedule](e).RunsCompleted == 2
	})
	r.stop(t)
	// With the daemon stopped, resume changes the state file.
	names, err := offline.ResumeSchedules(p.cfg, p.layout)
	if err != nil || len(names) != 1 {
		t.Fatalf("offline resume: %v, %v", names, err)
	}
	off, err := offline.Status(p.cfg, p.layout)
	if err != nil {
		t.Fatal(err)
	}
	if s := scheduleOf(t, &off, "f"); s.State != schedule.Waiting || s.RunsCompleted != 2 || s.RunsFailed != 2 {
		t.Fatalf("offline status after resume %+v", s)
	}
}

// A state file that does not decode, or a link planted in its place, stops
// the daemon at start with an error naming it: its runs are neither
// forgotten (and repeated) nor read through the link.
func TestScheduleStateFileRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"garbage", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(`{"schedules":[{"name":"Bad!","state":"waiting"}]}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is corrupt"},
		{"link", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere.json")
			if err := os.WriteFile(target, []byte(`{"schedules":[]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProjectWith(t, "schedules:\n  - {name: s, to: worker, prompt: p, every: 1h}\n", "  - name: worker\n")
			if err := p.layout.MkdirAll(); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(p.layout.StateDir(), 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(p.layout.StateDir(), project.SchedulesName)
			tc.plant(t, path)
			self, _ := os.Executable()
			d, err := New(p.cfg, p.layout, Options{ShimCommand: []string{self}, ShimEnv: p.shimEnv(), NoCgroup: true})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			err = d.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v; want an error naming %s (%s)", err, path, tc.want)
			}
			select {
			case <-d.Ready():
				t.Fatal("the daemon said it was ready")
			default:
			}
		})
	}
}

// A run to a role with several instances goes through the role's queue, as
// `batty send <role>` does, and finishes with the instance's outcome.
func TestScheduleToARoleGoesThroughItsQueue(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\nschedules:\n  - {name: r, to: eng, prompt: \"to the role\", every: 1h}\n",
		"  - name: eng\n    instances: 2\n")
	r := p.start(inProcessWith(withClock(fakeclock.New(time.Now()))))
	id := r.waitEvent(t, "run started", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunStarted }).Message
	routed := r.waitEvent(t, "routed", func(e eventlog.Event) bool { return e.Type == eventlog.EvRouted && e.Message == id })
	if !strings.HasPrefix(routed.Agent, "eng-") {
		t.Fatalf("routed to %q", routed.Agent)
	}
	e := r.waitEvent(t, "run finished", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunFinished && e.Message == id })
	if e.Detail != "" || payloadOf[eventlog.Schedule](e).RunsCompleted != 1 {
		t.Fatalf("run finished %+v", e)
	}
}

// A daemon stopped while a run is in flight leaves it running: the restarted
// daemon redelivers its message (the inbox's own recovery) and starts no
// second run; the run counts once when its outcome is recorded.
func TestScheduleRunInFlightAcrossARestart(t *testing.T) {
	p := newProjectWith(t, "timeouts:\n  shutdown: 1s\nschedules:\n  - {name: slow, to: worker, prompt: \"scenario:slowfirst:30\", every: 1h}\n",
		"  - name: worker\n")
	t0 := time.Now()
	r := p.start(withClock(fakeclock.New(t0)))
	id := r.waitEvent(t, "run started", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunStarted }).Message
	r.waitEvent(t, "delivered", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == id })
	r.stop(t)
	off, err := offline.Status(p.cfg, p.layout)
	if err != nil {
		t.Fatal(err)
	}
	if s := scheduleOf(t, &off, "slow"); s.State != schedule.Running || s.Running != id {
		t.Fatalf("stopped mid-run: %+v", s)
	}

	r = p.start(withClock(fakeclock.New(t0.Add(time.Minute))))
	e := r.waitEvent(t, "run finished", func(e eventlog.Event) bool { return e.Type == eventlog.EvScheduleRunFinished })
	if e.Message != id || e.Detail != "" {
		t.Fatalf("finished %+v, want run %s completed", e, id)
	}
	if n := r.count(eventlog.EvScheduleRunStarted, ""); n != 0 {
		t.Fatalf("the restarted daemon started %d runs", n)
	}
	s := scheduleOf(t, call(t, p, control.Request{Op: control.OpStatus}).Status, "slow")
	if s.State != schedule.Waiting || s.RunsCompleted != 1 || !s.NextDue.Equal(t0.Add(time.Hour)) {
		t.Fatalf("status %+v", s)
	}
	if n := p.deliveries(id); n != 2 {
		t.Fatalf("the run's message ran %d times, want 2 (cut off, then redelivered)", n)
	}
}

// Without schedules in the team file their state file is not read, by the
// daemon or by the offline commands: a stale or planted one does not make
// `batty status` or `batty resume` of a stopped team fail.
func TestOfflineCommandsIgnoreSchedulesStateWithoutSchedules(t *testing.T) {
	p := newProject(t, "  - name: worker\n")
	if err := p.layout.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.layout.StateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.layout.StateDir(), project.SchedulesName), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := offline.Status(p.cfg, p.layout)
	if err != nil || len(st.Agents) != 1 || st.Schedules == nil || len(st.Schedules) != 0 {
		t.Fatalf("offline.Status = %+v, %v; want the agent and no schedules", st, err)
	}
	if names, err := offline.ResumeSchedules(p.cfg, p.layout); err != nil || names != nil {
		t.Fatalf("offline.ResumeSchedules = %v, %v", names, err)
	}
}
