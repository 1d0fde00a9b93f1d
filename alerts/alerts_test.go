package alerts

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/eventlog"
)

// recorder is a sink that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	got    []eventlog.Alert
	closed bool
}

func (r *recorder) Alert(a eventlog.Alert) {
	r.mu.Lock()
	r.got = append(r.got, a)
	r.mu.Unlock()
}

func (r *recorder) Close(context.Context) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// TestFanoutGivesEachAlertToEverySink: AlertFor decides which events go
// out; every sink, given at New or added later, gets them, with the team
// and a time; Close closes them all.
func TestFanoutGivesEachAlertToEverySink(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := &recorder{}, &recorder{}
	f := NewFanout("crew", func() time.Time { return now }, a)
	f.Add(b)
	f.Event(eventlog.Event{Type: eventlog.EvDelivered, Agent: "eng"}) // no alert
	f.Event(eventlog.Event{Type: eventlog.EvAgentFailed, Agent: "eng", Detail: "boom"})
	f.Close(context.Background())
	for _, r := range []*recorder{a, b} {
		if len(r.got) != 1 || r.got[0].Kind != eventlog.AlertAgentFailed || r.got[0].Team != "crew" || !r.got[0].Time.Equal(now) || !r.closed {
			t.Fatalf("sink got %+v, closed %v", r.got, r.closed)
		}
	}
}

// TestHeldQueueDeliversFromStart: a held queue keeps alerts until Start,
// then delivers them in order, in batches of at most Batch.
func TestHeldQueueDeliversFromStart(t *testing.T) {
	var batches [][]string
	q := NewHeldQueue(QueueConfig{Batch: 2, Deliver: func(_ context.Context, b []eventlog.Alert) {
		var ids []string
		for _, a := range b {
			ids = append(ids, a.Agent)
		}
		batches = append(batches, ids)
	}})
	for _, id := range []string{"a", "b", "c"} {
		q.Alert(eventlog.Alert{Agent: id})
	}
	if len(batches) != 0 {
		t.Fatalf("delivered before Start: %q", batches)
	}
	q.Start()
	q.Close(context.Background())
	if want := [][]string{{"a", "b"}, {"c"}}; !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("batches %q, want %q", batches, want)
	}
}
