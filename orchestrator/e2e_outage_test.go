package orchestrator

import (
	"os"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
)

// The real CLI against an API that refuses connections, then comes back:
// the agent shows as waiting for the network (in codex's words) while the
// account's other agent is held, and both messages complete by themselves
// once the API answers — without a retry: the waiting turn itself goes on.
func TestE2EUnreachableAPIComesBack(t *testing.T) {
	srv := codextest.NewServer(t)
	p := newRealProject(t, srv.WriteHome(t), "", "  - name: a\n  - name: b\n")
	r := p.start(fastRetries)
	if err := srv.Refuse(); err != nil {
		t.Fatal(err)
	}
	ida := p.send("a", "human", "first [[mock:reply BACK-A]]")
	r.waitEvent(t, "network_waiting", func(e eventlog.Event) bool { return e.Type == eventlog.EvNetworkWaiting && e.Agent == "a" })
	idb := p.send("b", "human", "second [[mock:reply BACK-B]]")
	waitFor(t, "b's backlog", func() bool { return agentStatusOf(r.d.status(), "b").Backlog == 1 })

	st := r.d.status()
	sa, sb := agentStatusOf(st, "a"), agentStatusOf(st, "b")
	if sa.State != control.AgentWaitingForNetwork || sa.Network == nil || sa.Network.State != "waiting" ||
		!strings.HasPrefix(sa.Network.Message, "Reconnecting... waiting for network") || sa.Network.Since.IsZero() {
		t.Fatalf("a while the API is down: %+v %+v", sa, sa.Network)
	}
	if sb.Network == nil || sb.Network.State != "held" || sb.InFlight != nil {
		t.Fatalf("b while the API is down: %+v %+v", sb, sb.Network)
	}
	transcript, _ := os.ReadFile(p.layout.Transcript("a"))
	if !strings.Contains(string(transcript), "waiting for network since") {
		t.Errorf("a's transcript lacks the wait:\n%s", transcript)
	}
	if len(srv.Requests()) != 0 {
		t.Fatalf("requests reached a refusing server: %d", len(srv.Requests()))
	}

	if err := srv.Accept(); err != nil {
		t.Fatal(err)
	}
	if r.finished(t, ida) != "completed" || r.finished(t, idb) != "completed" {
		t.Fatal("not completed")
	}
	restored := r.waitEvent(t, "network_restored", func(e eventlog.Event) bool { return e.Type == eventlog.EvNetworkRestored })
	delivered := r.waitEvent(t, "b's delivery", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == idb })
	if delivered.Time.Before(restored.Time) {
		t.Fatalf("b started at %v, before the API answered at %v", delivered.Time, restored.Time)
	}
	if n, w := r.count(eventlog.EvRetryScheduled, ""), r.count(eventlog.EvNetworkWaiting, ""); n != 0 || w != 1 {
		t.Fatalf("%d retries, %d network alerts; want 0, 1", n, w)
	}
	if o := p.recorded("a", ida); o.Reply != "BACK-A" {
		t.Fatalf("a's outcome %+v", o)
	}
	t.Logf("held for %v ms; %d model requests", payloadOf[eventlog.Network](restored).HeldMS, len(srv.Requests()))
}

// The real CLI against a stream cut twice. With codex's own stream retries
// off (stream_max_retries = 0) every cut fails the turn, and batty retries
// it with back-off: it completes on the third attempt, whose header says
// why. With them on (2), codex retries the stream itself within one turn:
// batty only warns.
func TestE2EStreamDropsTwice(t *testing.T) {
	t.Run("batty retries", func(t *testing.T) {
		srv := codextest.NewServer(t)
		p := newRealProject(t, srv.WriteHome(t), "max_attempts: 3\n", "  - name: solo\n")
		r := p.start(fastRetries)
		srv.DropStreams(2)
		id := p.send("solo", "human", "build it [[mock:reply BUILT]]")
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("status %s", st)
		}
		if n := r.count(eventlog.EvRetryScheduled, id); n != 2 {
			t.Fatalf("%d retries scheduled, want 2", n)
		}
		e := r.waitEvent(t, "the first failure", func(e eventlog.Event) bool { return e.Type == eventlog.EvTurnFinished && e.Message == id })
		if payloadOf[eventlog.TurnFinished](e).Failure != "stream" || !strings.Contains(e.Detail, "stream disconnected before completion") {
			t.Fatalf("first attempt %+v", e)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d model requests, want 3", len(reqs))
		}
		last := reqs[2].LastUserText()
		if !strings.Contains(last, "retry 3 of 3 after a dropped stream: stream disconnected before completion") || strings.Contains(last, "cut off") {
			t.Fatalf("third prompt %q", last)
		}
		// What the model receives: codex keeps each failed prompt in the
		// thread, so the third request holds the message three times —
		// the header of the last one says why.
		n := 0
		for _, u := range reqs[2].UserTexts {
			if strings.Contains(u, "batty message "+id) {
				n++
			}
		}
		t.Logf("the third request holds the message %d times", n)
		if n != 3 {
			t.Errorf("the third request holds the message %d times, want 3 (codex keeps failed prompts)", n)
		}
		if o := p.recorded("solo", id); o.Status != inbox.StatusCompleted || o.Reply != "BUILT" {
			t.Fatalf("outcome %+v", o)
		}
	})
	t.Run("codex retries", func(t *testing.T) {
		srv := codextest.NewServer(t)
		p := newRealProject(t, srv.WriteHomeWith(t, codextest.HomeConfig{StreamMaxRetries: 2}), "", "  - name: solo\n")
		r := p.start(fastRetries)
		srv.DropStreams(2)
		id := p.send("solo", "human", "build it [[mock:reply BUILT]]")
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("status %s", st)
		}
		if n := r.count(eventlog.EvRetryScheduled, id); n != 0 {
			t.Fatalf("%d batty retries, want 0", n)
		}
		for _, want := range []string{"Reconnecting... 1/2 (stream disconnected", "Reconnecting... 2/2 (stream disconnected"} {
			r.waitEvent(t, "warning "+want, func(e eventlog.Event) bool { return e.Type == eventlog.EvWarning && strings.Contains(e.Detail, want) })
		}
		if n := len(srv.Requests()); n != 3 {
			t.Fatalf("%d model requests, want 3", n)
		}
	})
}
