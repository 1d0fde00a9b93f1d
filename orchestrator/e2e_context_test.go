package orchestrator

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/threads"
)

// End to end with the real Codex CLI, on exec and on the app-server: a
// message the model answers with context_length_exceeded every time is
// retried once on its thread, then once on a fresh thread that opens with
// a handoff, and then fails: one outcome, one alert. The agent completes
// the next message on a fresh thread (on exec, what the model received is
// checked request by request: modelSawHandoffs). The catalogue of threads
// lists the one left by the hand-off, and the current one.
func TestE2EMessageOverflowingContextWindow(t *testing.T) {
	for _, rt := range []string{"exec", "app-server"} {
		t.Run(rt, func(t *testing.T) { messageOverflowingContextWindow(t, rt) })
	}
}

func messageOverflowingContextWindow(t *testing.T, runtime string) {
	srv := codextest.NewServer(t)
	p := newRealProject(t, srv.WriteHome(t), "timeouts:\n  shutdown: 5s\n", "  - name: solo\n    codex:\n      runtime: "+runtime+"\n")
	r := p.start(nil)

	first := p.send("solo", "human", "first task [[mock:reply FIRST-DONE]]")
	if st := r.finished(t, first); st != "completed" {
		t.Fatalf("first message: %s", st)
	}
	thread := r.d.status().Agents[0].ThreadID
	before := len(srv.Requests())

	big := p.send("solo", "human", "enormous material [[mock:context]]")
	if st := r.finished(t, big); st != "failed" {
		t.Fatalf("overflowing message: %s; want failed", st)
	}
	done, _, _ := p.box("solo").Get(big)
	if done.Outcome == nil || done.Outcome.Failure != "context_window" || done.Attempt != 3 {
		t.Fatalf("outcome %+v after %d attempts; want context_window after 3", done.Outcome, done.Attempt)
	}
	next := p.send("solo", "human", "small task [[mock:reply NEXT-DONE]]")
	if st := r.finished(t, next); st != "completed" {
		t.Fatalf("next message: %s; want completed", st)
	}
	if n := r.count(eventlog.EvContextExhaust, ""); n != 1 {
		t.Fatalf("%d context alerts; want 1", n)
	}
	if n := r.count(eventlog.EvContextRetry, big); n != 2 {
		t.Fatalf("%d context retries; want 2 (same thread, fresh thread)", n)
	}

	current := r.d.status().Agents[0].ThreadID
	if current == thread {
		t.Fatalf("the agent is still on its first thread %s", thread)
	}
	if runtime == "exec" {
		modelSawHandoffs(t, srv.Requests()[before:], thread, big, current)
	}

	// Every thread stays in reach: `batty threads` lists the first one as
	// left by a hand-off, with its turn from the journal, and the one the
	// agent is on now.
	ld, err := threads.Load(p.layout, map[string]string{"solo": "solo"})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]threads.Thread{}
	for _, th := range threads.Build(ld.Records) {
		byID[th.ID] = th
	}
	if th := byID[thread]; th.State != threads.StateArchived || th.Ended != threads.EndHandoff || th.FirstMessageID != first {
		t.Errorf("the first thread in the catalogue: %+v", th)
	}
	if th := byID[current]; th.State != threads.StateCurrent {
		t.Errorf("the current thread in the catalogue: %+v", th)
	}
}

// modelSawHandoffs checks what the model received (requests, after the
// first message) with exec: the overflowing message big retried once on
// thread (compacted first), then on a fresh thread opening with a
// handoff; the next message on another fresh thread, current, with a
// handoff saying what happened.
func modelSawHandoffs(t *testing.T, requests []codextest.Request, thread, big, current string) {
	t.Helper()
	var turns, compactions []codextest.Request
	for _, q := range requests {
		if q.Kind == "compaction" {
			compactions = append(compactions, q)
		} else {
			turns = append(turns, q)
		}
	}
	if len(compactions) != 1 || compactions[0].ThreadID != thread {
		t.Errorf("%d compaction requests; want one, on %s (codex compacts the thread the retry resumes)", len(compactions), thread)
	}
	if len(turns) != 4 {
		for _, q := range requests {
			t.Logf("request %d kind %s thread %s: %.200q", q.Seq, q.Kind, q.ThreadID, q.LastUserText())
		}
		t.Fatalf("%d turn requests after the first message; want 4 (overflow ×3, next)", len(turns))
	}
	if turns[0].ThreadID != thread || turns[1].ThreadID != thread {
		t.Fatalf("first two attempts on threads %s, %s; want both on %s", turns[0].ThreadID, turns[1].ThreadID, thread)
	}
	if !strings.Contains(turns[1].LastUserText(), "(retried, attempt 2: the earlier attempt ran out of context window") {
		t.Fatalf("same-thread retry header: %.300q", turns[1].LastUserText())
	}
	fresh := turns[2]
	if fresh.ThreadID == thread || !strings.HasPrefix(fresh.LastUserText(), "--- batty handoff") ||
		!strings.Contains(fresh.LastUserText(), "You replied: FIRST-DONE") ||
		!strings.Contains(fresh.LastUserText(), "(retried on a fresh thread, attempt 3") {
		t.Fatalf("fresh-thread attempt on %s: %q", fresh.ThreadID, fresh.LastUserText())
	}
	last := turns[3]
	if last.ThreadID == thread || last.ThreadID == fresh.ThreadID || !strings.HasPrefix(last.LastUserText(), "--- batty handoff") ||
		!strings.Contains(last.LastUserText(), "message "+big+" from human was too large for the context window") {
		t.Fatalf("next message on %s: %q", last.ThreadID, last.LastUserText())
	}
	if last.ThreadID != current {
		t.Fatalf("agent on thread %s; want %s", current, last.ThreadID)
	}
}
