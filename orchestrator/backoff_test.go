package orchestrator

import (
	"testing"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
)

func TestBackoffWait(t *testing.T) {
	now := time.Now()
	const limit = 5 * time.Minute
	cases := []struct {
		name      string
		notBefore time.Time
		want      time.Duration
	}{
		{"no back-off", time.Time{}, 0},
		{"past", now.Add(-time.Second), 0},
		{"now", now, 0},
		{"ahead", now.Add(10 * time.Second), 10 * time.Second},
		{"the longest back-off", now.Add(limit), limit},
		{"beyond the longest back-off", now.Add(limit + time.Nanosecond), 0},
		{"a year ahead (a hand-written file, a clock set back)", now.AddDate(1, 0, 0), 0},
	}
	for _, c := range cases {
		if got := backoffWait(c.notBefore, now, limit); got != c.want {
			t.Errorf("%s: backoffWait = %s, want %s", c.name, got, c.want)
		}
	}
}

// deliverRetry queues body for box with a retry record saying notBefore.
func (p *testProject) deliverRetry(box, body string, notBefore time.Time) string {
	p.t.Helper()
	m, err := p.box(box).Deliver(inbox.Message{From: "human", To: box, Body: body,
		Transient: &inbox.TransientRetry{Failures: 1, LastError: "server error", NotBefore: notBefore}})
	if err != nil {
		p.t.Fatal(err)
	}
	return m.ID
}

// A message whose not_before is a year ahead (written by hand, or the
// clock set back) does not hold up the messages queued behind it: no wait
// is longer than the longest back-off. Without the cap the second message
// is never delivered.
func TestFarNotBeforeDoesNotStallTheQueue(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	far := p.deliverRetry("solo", "held a year", time.Now().AddDate(1, 0, 0))
	behind := p.send("solo", "human", "queued behind it")
	r := p.start(inProcessWith(fastRetries))
	// Far less than the year, and than waitLimit; RetryMax is 80 ms.
	const within = 20 * time.Second
	for _, id := range []string{far, behind} {
		r.waitEventWithin(t, within, "outcome of "+id, func(e eventlog.Event) bool {
			return e.Type == eventlog.EvTurnFinished && e.Message == id && !payloadOf[eventlog.TurnFinished](e).Requeued
		})
	}
}

// A back-off within the longest one is honoured, and the messages behind
// it wait too: they keep their order.
func TestBackoffKeepsTheOrder(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	notBefore := time.Now().Add(time.Second)
	first := p.deliverRetry("solo", "backing off", notBefore)
	second := p.send("solo", "human", "queued behind it")
	r := p.start(inProcessWith(func(o *Options) { o.RetryMax = 5 * time.Second }))
	r.finished(t, second)
	r.finished(t, first)
	var order []string
	r.mu.Lock()
	for _, e := range r.seen {
		if e.Type == eventlog.EvDelivered {
			order = append(order, e.Message)
			if e.Message == first && e.Time.Before(notBefore) {
				t.Errorf("%s delivered at %s, before its not_before %s", first, e.Time, notBefore)
			}
		}
	}
	r.mu.Unlock()
	if len(order) != 2 || order[0] != first || order[1] != second {
		t.Fatalf("deliveries %v, want %s then %s", order, first, second)
	}
}
