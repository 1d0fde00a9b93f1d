package cockpit

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/alerts/alertstest"
	"github.com/battyhq/batty/eventlog"
)

// stuckTmux is a tmux with one attached client that records the alerts it
// displays and, while stuck, does not answer until released or its
// context ends.
type stuckTmux struct {
	mu    sync.Mutex
	shown []string
	gate  chan struct{} // nil: answers
}

func (s *stuckTmux) Run(ctx context.Context, args ...string) (string, error) {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if args[0] == "list-clients" {
		return "/dev/pts/1\n", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i+5 < len(args); i++ {
		if args[i] == "display-message" {
			s.shown = append(s.shown, args[i+5])
		}
	}
	return "", nil
}

var shownAgent = regexp.MustCompile(`batty: (\S+) failed`)

// TestAlertSinkConformance: the cockpit's sink keeps the alerts.Sink
// contract against a tmux that gets stuck.
func TestAlertSinkConformance(t *testing.T) {
	alertstest.Run(t, func(t *testing.T, limit int, log hclog.Logger) alertstest.Harness {
		tm := &stuckTmux{}
		u := NewUpdater(Server{Run: tm}, "s", newFlipSource(1).snapshot, UpdaterOptions{Logger: log})
		sink := NewAlertSink(u, limit)
		sink.Start()
		t.Cleanup(func() { sink.Close(context.Background()) })
		return alertstest.Harness{Sink: sink,
			Stick: func() func() {
				tm.mu.Lock()
				gate := make(chan struct{})
				tm.gate = gate
				tm.mu.Unlock()
				var once sync.Once
				return func() {
					once.Do(func() {
						tm.mu.Lock()
						tm.gate = nil
						tm.mu.Unlock()
						close(gate)
					})
				}
			},
			Delivered: func() []string {
				tm.mu.Lock()
				defer tm.mu.Unlock()
				var out []string
				for _, msg := range tm.shown {
					for _, part := range strings.Split(msg, " | ") {
						if m := shownAgent.FindStringSubmatch(part); m != nil {
							out = append(out, m[1])
						}
					}
				}
				return out
			}}
	})
}

// TestAlertSinkShowsItsKinds: the sink shows the kinds Shown keeps, worded
// as AlertText words their events.
func TestAlertSinkShowsItsKinds(t *testing.T) {
	tm := &stuckTmux{}
	u := NewUpdater(Server{Run: tm}, "s", newFlipSource(1).snapshot, UpdaterOptions{})
	sink := NewAlertSink(u, 0)
	sink.Start()
	failed := eventlog.Event{Type: eventlog.EvAgentFailed, Agent: "c", Detail: "5 crashes"}
	reply := eventlog.Event{Type: eventlog.EvReply, Agent: "c", Data: eventlog.Reply{To: "human"}}
	for _, e := range []eventlog.Event{reply, failed} {
		if a, ok := eventlog.AlertFor(e); ok {
			sink.Alert(a)
		}
	}
	sink.Close(context.Background())
	if want := AlertText(failed); len(tm.shown) != 1 || tm.shown[0] != want {
		t.Fatalf("shown %q, want only %q", tm.shown, want)
	}
}
