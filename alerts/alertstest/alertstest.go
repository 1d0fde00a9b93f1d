// Package alertstest is the conformance suite of alerts.Sink: every alert
// channel runs Run against its real sink.
package alertstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/alerts"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/syncbuf"
)

// Harness is one sink under test and its consumer.
type Harness struct {
	Sink alerts.Sink
	// Stick makes the sink's consumer hang (the command does not end, tmux
	// does not answer, the page stream does not move) until release is
	// called or the delivery's context ends.
	Stick func() (release func())
	// Delivered is the Agent of every alert the consumer got so far, in
	// the order it got them.
	Delivered func() []string
}

// New makes a sink whose queue holds limit alerts and logs to log.
type New func(t *testing.T, limit int, log hclog.Logger) Harness

// Alert is the suite's alert number i: an agent failure (a kind every
// channel tells of) from the agent ID(i).
func Alert(i int) eventlog.Alert {
	e := eventlog.Event{Type: eventlog.EvAgentFailed, Agent: ID(i), Detail: "boom",
		Time: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}
	a, _ := eventlog.AlertFor(e)
	a.Team = "suite"
	return a
}

// ID is the agent of the suite's alert number i.
func ID(i int) string { return fmt.Sprintf("a%03d", i) }

// limit is the queue bound the suite asks for.
const limit = 4

// bounded fails t if f does not return soon: a sink must never block.
func bounded(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func newLog() (*syncbuf.Buffer, hclog.Logger) {
	b := &syncbuf.Buffer{}
	return b, hclog.New(&hclog.LoggerOptions{Output: b, Level: hclog.Debug})
}

// Run checks that the sinks newSink makes keep the alerts.Sink contract.
func Run(t *testing.T, newSink New) {
	t.Run("DeliversInOrder", func(t *testing.T) {
		_, log := newLog()
		h := newSink(t, limit, log)
		var want []string
		for i := range limit {
			h.Sink.Alert(Alert(i))
			want = append(want, ID(i))
		}
		bounded(t, "Close", func() { h.Sink.Close(context.Background()) })
		if got := h.Delivered(); !slices.Equal(got, want) {
			t.Fatalf("delivered %q, want %q", got, want)
		}
	})
	t.Run("NeverBlocksAndDropsTheOldest", func(t *testing.T) {
		buf, log := newLog()
		h := newSink(t, limit, log)
		release := h.Stick()
		const n = 5 * limit
		bounded(t, "Alert with its consumer stuck", func() {
			for i := range n {
				h.Sink.Alert(Alert(i))
			}
		})
		release()
		bounded(t, "Close", func() { h.Sink.Close(context.Background()) })
		got := h.Delivered()
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("delivered %q: not in order", got)
		}
		for i := n - limit; i < n; i++ {
			if !slices.Contains(got, ID(i)) {
				t.Fatalf("delivered %q: the newest %d must all be there, %s is not", got, limit, ID(i))
			}
		}
		if len(got) >= n {
			t.Fatalf("delivered all %d alerts past a bound of %d", n, limit)
		}
		if !strings.Contains(buf.String(), "oldest alerts dropped") {
			t.Fatalf("dropped alerts not logged; log:\n%s", buf.String())
		}
	})
	t.Run("StopsOnClose", func(t *testing.T) {
		_, log := newLog()
		h := newSink(t, limit, log)
		release := h.Stick()
		defer release()
		for i := range limit {
			h.Sink.Alert(Alert(i))
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		bounded(t, "Close with its consumer stuck", func() { h.Sink.Close(ctx) })
		h.Sink.Alert(Alert(limit))
		bounded(t, "Close again", func() { h.Sink.Close(context.Background()) })
		if got := h.Delivered(); slices.Contains(got, ID(limit)) {
			t.Fatalf("delivered %q: an alert given after Close went out", got)
		}
	})
}
