package orchestrator

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

// fastRetries makes back-offs short: no test sleeps through a real one.
func fastRetries(o *Options) {
	o.RetryBase, o.RetryMax = 20*time.Millisecond, 80*time.Millisecond
	o.Rand = func() float64 { return 0.5 }
}

// recorded returns the outcome recorded for id in box.
func (p *testProject) recorded(box, id string) inbox.Outcome {
	p.t.Helper()
	m, state, err := p.box(box).Get(id)
	if err != nil || state != inbox.StateDone || m.Outcome == nil {
		p.t.Fatalf("%s: %+v in %q, %v", id, m, state, err)
	}
	return *m.Outcome
}

// headers returns the first prompt line of every fake codex run of id.
func (p *testProject) headers(id string) []string {
	b, _ := os.ReadFile(p.fakeLog)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, "--- batty message "+id+" "); i >= 0 {
			out = append(out, l[i:])
		}
	}
	return out
}

// runSolo starts a team of one agent, solo, with fast retries and top
// (top-level YAML lines) and sends body to solo with p.sendAndWait. It
// returns the project, the running daemon and the message id.
func runSolo(t *testing.T, top, body, want string) (*testProject, *running, string) {
	t.Helper()
	p := newProjectWith(t, top, "  - name: solo\n")
	r := p.start(fastRetries)
	return p, r, p.sendAndWait(r, "solo", body, want)
}

// A server error is retried with back-off; every attempt is in the event
// log, the retry's header says why, and the message completes.
func TestTransientFailureIsRetried(t *testing.T) {
	p, r, id := runSolo(t, "max_attempts: 3\n", "scenario:flaky:2", "completed")
	if n := r.count(eventlog.EvRetryScheduled, id); n != 2 {
		t.Fatalf("%d retries scheduled, want 2", n)
	}
	h := p.headers(id)
	if len(h) != 3 {
		t.Fatalf("%d runs, want 3: %q", len(h), h)
	}
	for i, want := range []string{"", "retry 2 of 3 after a server error: We’re currently experiencing high demand", "retry 3 of 3 after a server error"} {
		if want == "" {
			if strings.Contains(h[i], "retry") || strings.Contains(h[i], "redelivered") {
				t.Errorf("first header %q", h[i])
			}
			continue
		}
		if !strings.Contains(h[i], want) || strings.Contains(h[i], "cut off") {
			t.Errorf("header %d = %q, want %q", i+1, h[i], want)
		}
	}
	if o := p.recorded("solo", id); o.Status != inbox.StatusCompleted {
		t.Fatalf("outcome %+v", o)
	}
}

// A failure that persists fails the message after max_attempts tries,
// with one alert and the last error.
func TestRetriesExhaustedFailWithAnAlert(t *testing.T) {
	p, r, id := runSolo(t, "max_attempts: 3\n", "scenario:servererror", "failed")
	if n, a := r.count(eventlog.EvRetryScheduled, id), r.count(eventlog.EvMessageFailed, id); n != 2 || a != 1 {
		t.Fatalf("%d retries, %d alerts; want 2, 1", n, a)
	}
	o := p.recorded("solo", id)
	if o.Failure != "stream" || !strings.Contains(o.Error, "failed 3 of 3 attempts") || !strings.Contains(o.Error, "experiencing high demand") {
		t.Fatalf("outcome %+v", o)
	}
	if p.deliveries(id) != 3 {
		t.Fatalf("%d runs, want 3", p.deliveries(id))
	}
	// A failure that cannot pass by itself is not retried.
	id2 := p.send("solo", "human", "scenario:crash")
	if st := r.finished(t, id2); st != "failed" || r.count(eventlog.EvRetryScheduled, id2) != 0 || r.count(eventlog.EvMessageFailed, id2) != 0 {
		t.Fatalf("crash: status %s, retried", st)
	}
}

// A codex killed mid-turn by a signal batty did not send (SIGKILL, as the
// OOM killer sends) is retried on the same thread, the retry saying the
// last attempt was cut off; a message whose every try is killed fails with
// an alert, and its sender — the human too — hears why.
func TestKilledCodexIsRetriedAndAFinalFailureIsAnswered(t *testing.T) {
	p, r, id := runSolo(t, "max_attempts: 2\n", "scenario:flakykill:1", "completed")
	if n := r.count(eventlog.EvRetryScheduled, id); n != 1 {
		t.Fatalf("%d retries scheduled, want 1", n)
	}
	h := p.headers(id)
	if len(h) != 2 || !strings.Contains(h[1], "retry 2 of 2 after a cut-off attempt (codex killed from outside): codex was killed by a signal") {
		t.Fatalf("headers %q", h)
	}
	log, _ := os.ReadFile(p.fakeLog)
	var runs []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "--- batty message "+id+" ") {
			runs = append(runs, strings.Fields(l)[1])
		}
	}
	if len(runs) != 2 || runs[1] == "new" {
		t.Fatalf("runs (resumed thread or new) %q: the retry did not keep the thread", runs)
	}

	failed := p.send("solo", "human", "scenario:selfkill")
	if st := r.finished(t, failed); st != "failed" {
		t.Fatalf("status %s", st)
	}
	if n, a := r.count(eventlog.EvRetryScheduled, failed), r.count(eventlog.EvMessageFailed, failed); n != 1 || a != 1 {
		t.Fatalf("%d retries, %d alerts; want 1, 1", n, a)
	}
	o := p.recorded("solo", failed)
	if o.Failure != string(protocol.FailKilled) || !strings.Contains(o.Error, "failed 2 of 2 attempts") {
		t.Fatalf("outcome %+v", o)
	}
	r.waitEvent(t, "the failure's word to the human", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvReply && payloadOf[eventlog.Reply](e).InReplyTo == failed && payloadOf[eventlog.Reply](e).To == "human"
	})
	ev := r.waitEvent(t, "turn_finished", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvTurnFinished && e.Message == failed && !payloadOf[eventlog.TurnFinished](e).Requeued
	})
	if !payloadOf[eventlog.TurnFinished](ev).Alerted {
		t.Fatalf("turn_finished %+v: not alerted", ev.Data)
	}
	replies, errs := p.box("human").Pending()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var word string
	for _, m := range replies {
		if m.InReplyTo == failed {
			word = m.Body
		}
	}
	if !strings.Contains(word, "ended failed (killed) without an answer") || !strings.Contains(word, "codex was killed by a signal") {
		t.Fatalf("the human's word of the failure: %q (in %d messages)", word, len(replies))
	}
}

// A hung turn is timed out and retried; a long command is not silence.
func TestHungTurnIsRetried(t *testing.T) {
	p, r, id := runSolo(t, "max_attempts: 2\ntimeouts:\n  idle: 400ms\n  shutdown: 5s\n", "scenario:flakyhang:1", "completed")
	h := p.headers(id)
	if len(h) != 2 || !strings.Contains(h[1], "retry 2 of 2 after a timeout: codex printed nothing for 400ms (idle timeout)") {
		t.Fatalf("headers %q", h)
	}
	long := p.send("solo", "human", "scenario:longcmd:1500")
	if st := r.finished(t, long); st != "completed" || r.count(eventlog.EvRetryScheduled, long) != 0 {
		t.Fatalf("a long command: %s", st)
	}
}

// While a turn waits for the network, its account is held: a message to
// another agent of the account waits, and goes through by itself once the
// API answers. Status shows both meanwhile.
func TestNetworkHoldHoldsTheAccount(t *testing.T) {
	p := newProject(t, "  - name: a\n  - name: b\n")
	r := p.start(nil)
	ida := p.send("a", "human", "scenario:netwait:20")
	r.waitEvent(t, "network_waiting", func(e eventlog.Event) bool { return e.Type == eventlog.EvNetworkWaiting && e.Agent == "a" })
	idb := p.send("b", "human", "hello from b")
	// b's inbox is watched: it is seen at once, and held.
	waitFor(t, "b's backlog", func() bool { return agentStatusOf(r.d.status(), "b").Backlog == 1 })
	st := r.d.status()
	sa, sb := agentStatusOf(st, "a"), agentStatusOf(st, "b")
	if sa.State != control.AgentWaitingForNetwork || sa.Network == nil || sa.Network.State != "waiting" || !strings.Contains(sa.Network.Message, "waiting for network") {
		t.Fatalf("a: %+v %+v", sa, sa.Network)
	}
	if sb.Network == nil || sb.Network.State != "held" || sb.InFlight != nil {
		t.Fatalf("b: %+v %+v", sb, sb.Network)
	}
	if r.finished(t, ida) != "completed" || r.finished(t, idb) != "completed" {
		t.Fatal("not completed")
	}
	restored := r.waitEvent(t, "network_restored", func(e eventlog.Event) bool { return e.Type == eventlog.EvNetworkRestored })
	delivered := r.waitEvent(t, "b's delivery", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == idb })
	if delivered.Time.Before(restored.Time) {
		t.Fatalf("b started at %v, before the API answered at %v", delivered.Time, restored.Time)
	}
	if n := r.count(eventlog.EvNetworkWaiting, ""); n != 1 {
		t.Fatalf("%d network alerts, want 1", n)
	}
	if st := r.d.status(); agentStatusOf(st, "a").Network != nil || agentStatusOf(st, "b").Network != nil {
		t.Fatalf("network still shown: %+v", st.Agents)
	}
}

// A turn that waits for the network longer than network_wait fails as
// network and is retried; the retry completes once the API is back.
func TestNetworkFailureIsRetried(t *testing.T) {
	p, r, id := runSolo(t, "timeouts:\n  network_wait: 300ms\n  shutdown: 5s\n", "scenario:flakynet:1", "completed")
	h := p.headers(id)
	if len(h) != 2 || !strings.Contains(h[1], "retry 2 of 3 after an unreachable API") {
		t.Fatalf("headers %q", h)
	}
	e := r.waitEvent(t, "the failed attempt", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvTurnFinished && e.Message == id && payloadOf[eventlog.TurnFinished](e).Requeued
	})
	if w, b := r.count(eventlog.EvNetworkWaiting, ""), r.count(eventlog.EvNetworkRestored, ""); w != 1 || b != 1 {
		t.Fatalf("%d network alerts, %d restored; want 1, 1 (the retry probes the same hold)", w, b)
	}
	if sa := agentStatusOf(r.d.status(), "solo"); sa.Network != nil || sa.State == control.AgentWaitingForNetwork {
		t.Fatalf("still shown waiting: %+v %+v", sa, sa.Network)
	}
	if payloadOf[eventlog.TurnFinished](e).Failure != "network" || !strings.Contains(e.Detail, "network_wait") {
		t.Fatalf("first attempt %+v", e)
	}
}

func agentStatusOf(st control.Status, name string) control.AgentStatus {
	for _, a := range st.Agents {
		if a.Name == name {
			return a
		}
	}
	return control.AgentStatus{}
}

// waitFor waits for cond, checking it every few milliseconds, up to
// waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
