package orchestrator

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// Two agents on one account, the real Codex CLI, and a mock that answers
// usage_limit_reached with resets_at 20 s ahead: both pause with one alert;
// while paused no request reaches the model but the probes (the first
// probe finds the account still exhausted and backs off); both resume by
// themselves and every held message completes. The model is told why it
// sees the retried message again.
func TestE2EQuotaPausesTheAccountAndProbes(t *testing.T) {
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	p := newRealProject(t, home, "timeouts:\n  shutdown: 5s\n", "  - name: eng\n    instances: 2\n")

	var mu sync.Mutex
	var resetAt time.Time
	first := make(chan struct{}) // closed when both first turns are at the mock
	arrived, lateQuota := 0, 0
	srv.Handle(func(req codextest.Request) codextest.Reply {
		mu.Lock()
		if resetAt.IsZero() {
			resetAt = time.Now().Add(20 * time.Second)
		}
		arrived++
		if arrived == 2 {
			close(first)
		}
		n, at := arrived, resetAt
		exhausted := time.Now().Before(at)
		if !exhausted && lateQuota == 0 {
			// The account is still exhausted at the first probe after the
			// reset: codex names the reset time, now past.
			lateQuota++
			exhausted = true
		}
		mu.Unlock()
		if n <= 2 {
			// Both agents' first turns hit the limit together.
			select {
			case <-first:
			case <-time.After(30 * time.Second):
			}
		}
		if exhausted {
			return codextest.QuotaReply(at)
		}
		return srv.Scripted(req)
	})

	r := p.start(func(o *Options) {
		o.QuotaJitter = -1
		o.QuotaBackoffMin = time.Second
	})
	a1 := p.send("eng-1", "human", "first for one [[mock:reply ONE-1]]")
	b1 := p.send("eng-2", "human", "first for two [[mock:reply TWO-1]]")
	alert := r.waitEvent(t, "quota alert", func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaBlocked })
	if !strings.Contains(alert.Detail, "usage limit") || !strings.Contains(alert.Detail, "try again at") {
		t.Fatalf("alert %+v", alert)
	}
	for _, id := range []string{a1, b1} {
		r.waitEvent(t, "requeue of "+id, func(e eventlog.Event) bool { return e.Type == eventlog.EvRequeued && e.Message == id })
	}
	a2 := p.send("eng-1", "human", "second for one [[mock:reply ONE-2]]")
	b2 := p.send("eng-2", "human", "second for two [[mock:reply TWO-2]]")
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	acc := accountOf(t, st, "eng-1")
	if !acc.Paused || acc.ResumeAt == nil || acc.Held != 4 || len(acc.Agents) != 2 || acc.CodexHome != home {
		t.Fatalf("account while paused: %+v", acc)
	}
	// Codex printed the minute of the reset, rounded down: the pause lasts
	// to the end of that minute.
	mu.Lock()
	wantResume := resetAt.Truncate(time.Minute).Add(time.Minute)
	mu.Unlock()
	if !acc.ResumeAt.Equal(wantResume) {
		t.Fatalf("resume at %s, want the end of the printed minute %s", acc.ResumeAt, wantResume)
	}

	// The pause lasts up to 80 s (20 s to the reset, then up to the end of
	// its minute).
	r.waitEventWithin(t, 3*time.Minute, "the account's release", func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaResumed })
	for _, id := range []string{a1, b1, a2, b2} {
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("%s: %s", id, st)
		}
	}
	if n := r.count(eventlog.EvQuotaBlocked, ""); n != 1 {
		t.Fatalf("%d quota alerts, want 1", n)
	}

	r.mu.Lock()
	events := slices.Clone(r.seen)
	r.mu.Unlock()
	var pausedAt, resumedAt time.Time
	probes := map[string]bool{}
	sent := 0
	for _, e := range events {
		switch {
		case e.Type == eventlog.EvQuotaBlocked:
			pausedAt = e.Time
		case e.Type == eventlog.EvQuotaResumed:
			resumedAt = e.Time
		case e.Type == eventlog.EvQuotaProbe && payloadOf[eventlog.QuotaProbe](e).Result == eventlog.ProbeSent:
			probes[e.Message] = true
			sent++
		}
	}
	if resumedAt.IsZero() || sent != 2 {
		t.Fatalf("resumed at %s after %d probes of %v; want 2 (one that hit the limit again, one that completed)", resumedAt, sent, probes)
	}
	// While paused only the probes reach the mock, each one request.
	var during []codextest.Request
	for _, req := range srv.Requests() {
		if req.Time.After(pausedAt) && req.Time.Before(resumedAt) {
			during = append(during, req)
		}
	}
	if len(during) != sent {
		t.Fatalf("%d requests while paused, want %d (the probes)", len(during), sent)
	}
	for _, req := range during {
		if !probes[messageIn(req.LastUserText())] {
			t.Fatalf("request %d while paused is not the probe: %q", req.Seq, req.LastUserText())
		}
		if req.Time.Before(wantResume) {
			t.Fatalf("probe at %s, before the end of the printed minute %s", req.Time, wantResume)
		}
	}

	// The retried message: Codex keeps the unanswered copy in the thread,
	// so the model sees the message again — each later copy says why.
	for _, id := range []string{a1, b1} {
		var last codextest.Request
		for _, req := range srv.Requests() {
			if messageIn(req.LastUserText()) == id {
				last = req
			}
		}
		var copies []string
		for _, u := range last.UserTexts {
			if strings.Contains(u, "batty message "+id+" ") {
				copies = append(copies, u)
			}
		}
		if len(copies) < 2 {
			t.Fatalf("%s: the completed request holds %d copies of the message, want the unanswered one and the retry: %q", id, len(copies), last.UserTexts)
		}
		for _, c := range copies[1:] {
			header, _, _ := strings.Cut(c, "\n")
			if !strings.Contains(header, "(retried after a usage limit") || !strings.Contains(header, "your earlier copy of this message was not answered") {
				t.Fatalf("%s: a repeated copy does not say why: %q", id, header)
			}
		}
	}
}

// messageIn returns the id of the batty message whose header starts text.
func messageIn(text string) string {
	const head = "--- batty message "
	i := strings.Index(text, head)
	if i < 0 {
		return ""
	}
	id, _, _ := strings.Cut(text[i+len(head):], " ")
	return id
}
