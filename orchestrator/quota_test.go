package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/protocol"
)

// accountOf returns the status of the account agent belongs to.
func accountOf(t *testing.T, st *control.Status, agent string) control.AccountStatus {
	t.Helper()
	for _, a := range st.Accounts {
		if slices.Contains(a.Agents, agent) {
			return a
		}
	}
	t.Fatalf("no account lists %s: %+v", agent, st.Accounts)
	return control.AccountStatus{}
}

// noJitter makes planned probes exact.
func noJitter(o *Options) { o.QuotaJitter = -1 }

func TestQuotaPausesTheAccountAndSurvivesRestart(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(noJitter)
	// The reset time is derived from now, never a calendar date: codex
	// prints it to the minute, rounded down, so the pause lasts to the end
	// of that minute.
	printed := time.Now().Add(2 * time.Hour).Truncate(time.Minute).UTC()
	want := printed.Add(time.Minute)
	id := p.send("manager", "human", fmt.Sprintf("scenario:quota:%d", printed.Unix()))
	// The quota failure does not consume the message: it goes back to the
	// queue and the account pauses.
	e := r.waitEvent(t, "requeue", func(e eventlog.Event) bool { return e.Type == eventlog.EvRequeued && e.Message == id })
	if !strings.HasPrefix(e.Detail, "quota") {
		t.Fatalf("requeue detail %q", e.Detail)
	}
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	acc := accountOf(t, st, "manager")
	if !acc.Paused || acc.ResumeAt == nil || !acc.ResumeAt.Equal(want) || !strings.Contains(acc.Reason, "usage limit") || acc.Held != 1 || len(acc.Agents) != 4 {
		t.Fatalf("account %+v, want paused until %s holding 1", acc, want)
	}
	if st.Dispatch.Paused {
		t.Fatalf("the team gate closed: %+v", st.Dispatch)
	}
	other := p.send("architect", "human", "not now")
	r.stop(t)
	for _, box := range []string{"manager", "architect"} {
		if pending, _, _ := p.box(box).Count(); pending != 1 {
			t.Fatalf("%s has %d pending, want 1", box, pending)
		}
	}

	// A stopped team's status reads the pause from its state file.
	off, err := offline.Status(p.cfg, p.layout)
	if err != nil {
		t.Fatal(err)
	}
	if acc := accountOf(t, &off, "manager"); !acc.Paused || acc.ResumeAt == nil || !acc.ResumeAt.Equal(want) || acc.Held != 2 {
		t.Fatalf("offline account %+v", acc)
	}

	// A restarted daemon keeps the pause and its probe time.
	r = p.start(noJitter)
	st = call(t, p, control.Request{Op: control.OpStatus}).Status
	if acc := accountOf(t, st, "architect"); !acc.Paused || acc.ResumeAt == nil || !acc.ResumeAt.Equal(want) || acc.Held != 2 {
		t.Fatalf("account after restart %+v", acc)
	}
	if _, where, _ := p.box("architect").Get(other); where != "new" {
		t.Fatalf("message dispatched during a quota pause (%s)", where)
	}
	// Resuming releases both: the quota-failed message runs again (the
	// fake worker succeeds on a redelivery) and the one that waited.
	call(t, p, control.Request{Op: control.OpResume})
	for _, m := range []string{id, other} {
		if st := r.finished(t, m); st != "completed" {
			t.Fatalf("%s: status %s", m, st)
		}
	}
	if n := r.count(eventlog.EvQuotaBlocked, ""); n != 0 {
		t.Fatalf("%d quota alerts after the restart, want 0 (one per pause)", n)
	}
}

// Agents on another account (another CODEX_HOME) keep working while one
// account is paused.
func TestQuotaPausesOnlyTheAccountThatHitIt(t *testing.T) {
	homes := t.TempDir()
	os.MkdirAll(filepath.Join(homes, "a"), 0o700)
	os.MkdirAll(filepath.Join(homes, "b"), 0o700)
	p := newProject(t, fmt.Sprintf(`  - name: left
    codex: {codex_home: %s}
  - name: right
    codex: {codex_home: %s}
`, filepath.Join(homes, "a"), filepath.Join(homes, "b")))
	r := p.start(noJitter)
	reset := time.Now().Add(2 * time.Hour).Unix()
	q := p.send("left", "human", fmt.Sprintf("scenario:quota:%d", reset))
	r.waitEvent(t, "quota alert", func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaBlocked && e.Message == q })
	held := p.send("left", "human", "held")
	if st := r.finished(t, p.send("right", "human", "other account")); st != "completed" {
		t.Fatalf("right: %s", st)
	}
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	if len(st.Accounts) != 2 {
		t.Fatalf("accounts %+v, want 2", st.Accounts)
	}
	left, right := accountOf(t, st, "left"), accountOf(t, st, "right")
	if !left.Paused || left.Held != 2 || left.CodexHome != filepath.Join(homes, "a") || right.Paused || right.Held != 0 {
		t.Fatalf("left %+v, right %+v", left, right)
	}
	if _, where, _ := p.box("left").Get(held); where != "new" {
		t.Fatalf("a paused account's message was dispatched (%s)", where)
	}
}

// One account, two agents: the limit pauses both with one alert; when the
// pause runs out one probe turn goes (the oldest held message), and while
// the account is still exhausted each back-off step costs that one probe,
// not one per agent; its success releases the other agent. The retried
// message's header says why it comes again.
func TestQuotaProbeBacksOffThenReleasesTheAccount(t *testing.T) {
	p := newProject(t, "  - name: eng\n    instances: 2\n")
	r := p.start(func(o *Options) { noJitter(o); o.QuotaBackoffMin = 100 * time.Millisecond })
	until := time.Now().Add(1500 * time.Millisecond)
	q := p.send("eng-1", "human", fmt.Sprintf("scenario:quotauntil:%d", until.UnixNano()))
	r.waitEvent(t, "quota alert", func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaBlocked && e.Message == q })
	other := p.send("eng-2", "human", "held by the pause")
	later := p.send("eng-1", "human", "also held")
	// Every agent looks at its inbox again and again (as the safety-net
	// rescan makes them, at any moment): only the probe may go.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				r.d.pokeAll()
			}
		}
	}()
	for _, id := range []string{q, other, later} {
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
	resumed := slices.IndexFunc(events, func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaResumed })
	if resumed < 0 {
		t.Fatal("no quota_resumed event")
	}
	// While paused only probes reach codex, one at a time: every delivery
	// is a probe that was sent, and each probe but the last hit the limit.
	// (A probe goes with the oldest message held at that moment: a message
	// still being put back after its probe failed is not held yet.)
	// The window ends at the last probe sent: the account resumes in the
	// book as that probe's turn ends, a moment before its quota_resumed
	// event is appended, and another agent poked meanwhile may already
	// deliver (its delivered event then precedes quota_resumed).
	limits, probes, delivered := 0, []string{}, []string{}
	blocked := slices.IndexFunc(events, func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaBlocked })
	lastProbe := resumed
	for i := resumed - 1; i > blocked; i-- {
		if e := events[i]; e.Type == eventlog.EvQuotaProbe && payloadOf[eventlog.QuotaProbe](e).Result == eventlog.ProbeSent {
			lastProbe = i + 1
			break
		}
	}
	for _, e := range events[blocked:lastProbe] {
		switch {
		case e.Type == eventlog.EvDelivered:
			delivered = append(delivered, e.Message)
		case e.Type == eventlog.EvQuotaProbe && payloadOf[eventlog.QuotaProbe](e).Result == eventlog.ProbeSent:
			probes = append(probes, e.Message)
		case e.Type == eventlog.EvQuotaProbe && payloadOf[eventlog.QuotaProbe](e).Result == eventlog.ProbeLimit:
			limits++
		}
	}
	if !slices.Equal(delivered, probes) {
		t.Fatalf("delivered while paused %v, probes sent %v: only probes may go", delivered, probes)
	}
	if limits == 0 || len(probes) != limits+1 {
		t.Fatalf("%d probes, %d of them hit the limit; want at least one back-off, then the probe that completed", len(probes), limits)
	}
	if n := p.deliveries(other); n != 1 {
		t.Fatalf("the other agent's message ran %d times, want 1", n)
	}
	log, _ := os.ReadFile(p.fakeLog)
	if !strings.Contains(string(log), "batty message "+q+" from human (retried after a usage limit, attempt 2; your earlier copy of this message was not answered)") {
		t.Fatalf("the retried message's header does not say why:\n%s", log)
	}
	if strings.Contains(string(log), q+" from human (redelivered") {
		t.Fatalf("a quota retry was called a cut-off delivery:\n%s", log)
	}
}

// No reset time ("try again later"): the probe goes after the team's
// cool-down, not at a fixed time, and the account resumes on its own.
func TestQuotaWithoutResetTimeProbesAfterTheCooldown(t *testing.T) {
	p := newProject(t, "  - name: solo\nquota: {cooldown: 300ms}\n")
	r := p.start(noJitter)
	id := p.send("solo", "human", "scenario:quotaonce")
	e := r.waitEvent(t, "quota alert", func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaBlocked })
	if !payloadOf[eventlog.QuotaBlocked](e).RetryAt.IsZero() {
		t.Fatalf("alert names a reset time codex did not give: %+v", e)
	}
	r.waitEvent(t, "resume", func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaResumed })
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
}

// The header note of a message put back after a usage limit or a failed
// login says the earlier copy was not answered; other requeues add none
// (the shim's header then says the delivery was cut off).
func TestLimitRetryNote(t *testing.T) {
	cases := []struct {
		retry string
		want  string
	}{
		{retryQuota, "retried after a usage limit, attempt 2; your earlier copy of this message was not answered"},
		{retryAuth, "retried after a login failure, attempt 2; your earlier copy of this message was not answered"},
		{"", ""},
		{"other", ""},
	}
	for _, c := range cases {
		if got := limitRetryNote(inbox.Message{Attempt: 2, Retry: c.retry}); got != c.want {
			t.Errorf("limitRetryNote(%q) = %q, want %q", c.retry, got, c.want)
		}
	}
	if retryOf(protocol.FailQuota) != retryQuota || retryOf(protocol.FailAuth) != retryAuth || retryOf(protocol.FailContextWindow) != "" {
		t.Error("retryOf maps the wrong failures")
	}
}
