package orchestrator

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/workspaces"
)

// A crash is respawned after the back-off, doubled each time up to its
// most; the crash that makes MaxCrashes within the window, or any crash
// on probation, fails the agent with its cool-down.
func TestSupervisionCrashed(t *testing.T) {
	o := &Supervision{CrashWindow: time.Minute, MaxCrashes: 3, RespawnMax: 4 * time.Second,
		FailedRetryMin: time.Minute, FailedRetryMax: time.Hour}
	now := time.Unix(1_800_000_000, 0)
	s := supervision{backoff: time.Second}
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if f := s.crashed(now.Add(time.Duration(i)*time.Second), o); f != nil {
			t.Fatalf("crash %d failed the agent: %+v", i+1, f)
		}
		if s.respawnIn != want || s.respawn == nil {
			t.Fatalf("crash %d: respawn in %s, want %s", i+1, s.respawnIn, want)
		}
	}
	f := s.crashed(now.Add(2*time.Second), o)
	if f == nil || f.wait != time.Minute || !f.at.Equal(now.Add(2*time.Second+time.Minute)) || !strings.Contains(f.why, "3 crashes") {
		t.Fatalf("the third crash: %+v", f)
	}
	if !s.failed || s.failures != 1 || len(s.crashes) != 0 {
		t.Fatalf("after the crash loop: %+v", s)
	}
	s = supervision{backoff: time.Second, probation: true, failures: 1}
	f = s.crashed(now, o)
	if f == nil || f.wait != 2*time.Minute || !strings.Contains(f.why, "after its retry") || s.probation {
		t.Fatalf("a crash on probation: %+v, %+v", f, s)
	}
}

// The end of a worktree's preparation: ready (its events appended, what
// parked the agent cleared), failed (the agent parks with the problem),
// or its clone's host down (tried again, nothing parks it); a merge left
// with conflict markers is remembered whatever the outcome.
func TestWorktreePrepared(t *testing.T) {
	for _, c := range []struct {
		name   string
		p      prepared
		want   prepOutcome
		events []string
		parked bool
	}{
		{"made", prepared{Prepared: workspaces.Prepared{Made: true, Created: true, Leftover: "abc"}}, prepReady,
			[]string{eventlog.EvWorkspaceCreated, eventlog.EvWorkspaceCommitted}, false},
		{"setup failed", prepared{err: &workspaces.SetupError{Err: errors.New("exit status 1")}}, prepFailed, nil, true},
		{"host down", prepared{err: fmt.Errorf("clone: %w", clones.ErrHost)}, prepHostDown, nil, false},
		{"left host down", prepared{err: &retireError{host: "b", err: clones.ErrHost}}, prepFailed, nil, true},
		{"merge left", prepared{Prepared: workspaces.Prepared{Unresolved: []string{"a.go"}}}, prepReady,
			[]string{eventlog.EvWarning}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			w := worktree{agent: "eng", log: hclog.NewNullLogger(), events: func(e eventlog.Event) { got = append(got, e.Type) },
				tell: func(string, string) {}, ws: &agentWorkspace{agent: "eng", base: "main", ws: workspaces.Local{Repo: &workspaces.Repo{}, Agent: "eng", Base: "main"}},
				wsProblem: nil}
			w.prepDone = make(chan prepared)
			if out := w.prepared(c.p); out != c.want {
				t.Fatalf("outcome %d, want %d", out, c.want)
			}
			if w.prepDone != nil || (w.wsProblem != nil) != c.parked {
				t.Fatalf("prepDone %v, problem %v", w.prepDone, w.wsProblem)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.events) {
				t.Fatalf("events %v, want %v", got, c.events)
			}
			if (len(w.unresolved) > 0) != (len(c.p.Unresolved) > 0) {
				t.Fatalf("unresolved %v", w.unresolved)
			}
		})
	}
}

// A commit's end: a commit made is announced with its message and shown;
// nested repositories are told once; a failure is a warning; a merge left
// with markers waits for the agent, no failure.
func TestWorktreeCommitted(t *testing.T) {
	var evs []eventlog.Event
	var told []string
	w := worktree{agent: "eng", log: hclog.NewNullLogger(), events: func(e eventlog.Event) { evs = append(evs, e) },
		tell: func(req, body string) { told = append(told, req) }, ws: &agentWorkspace{agent: "eng", base: "main"}}
	m := &inbox.Message{ID: "m1"}
	if !w.committed(m, false, "turn", workspaces.Committed{Made: true, Head: "h1", Nested: []string{"vendor/x"}}, nil) {
		t.Fatal("a commit made is not shown")
	}
	if w.committed(m, false, "turn", workspaces.Committed{Made: true, Head: "h2", Nested: []string{"vendor/x"}}, nil) != true || len(told) != 1 {
		t.Fatalf("nested told %d times", len(told))
	}
	if w.committed(nil, true, "wip", workspaces.Committed{}, errors.New("disk full")) {
		t.Fatal("a failed commit is shown")
	}
	types := []string{}
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := []string{eventlog.EvWarning, eventlog.EvWorkspaceCommitted, eventlog.EvWorkspaceCommitted, eventlog.EvWarning}
	if fmt.Sprint(types) != fmt.Sprint(want) || evs[1].Message != "m1" {
		t.Fatalf("events %v", evs)
	}
}
