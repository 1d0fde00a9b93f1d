package console

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/alerts/alertstest"
)

// TestAlertSinkConformance: the console's sink keeps the alerts.Sink
// contract; its consumer, the live streams' hub, gets stuck behind a gate.
func TestAlertSinkConformance(t *testing.T) {
	alertstest.Run(t, func(t *testing.T, limit int, log hclog.Logger) alertstest.Harness {
		feed := &alertFeed{log: log}
		h := newHub(nil, time.Minute, log)
		var mu sync.Mutex
		var gate chan struct{}
		notify := func(ctx context.Context) {
			mu.Lock()
			g := gate
			mu.Unlock()
			if g != nil {
				select {
				case <-g:
				case <-ctx.Done():
					return
				}
			}
			h.notify()
		}
		sink := newAlertSink(feed, notify, limit, log)
		t.Cleanup(func() { sink.Close(context.Background()) })
		return alertstest.Harness{Sink: sink,
			Stick: func() func() {
				mu.Lock()
				g := make(chan struct{})
				gate = g
				mu.Unlock()
				var once sync.Once
				return func() {
					once.Do(func() {
						mu.Lock()
						gate = nil
						mu.Unlock()
						close(g)
					})
				}
			},
			Delivered: func() []string {
				var out []string
				for _, a := range feed.latest(maxAlerts) {
					out = append(out, a.Agent)
				}
				slices.Reverse(out)
				return out
			}}
	})
}
