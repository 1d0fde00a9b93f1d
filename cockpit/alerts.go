package cockpit

import (
	"context"

	"github.com/battyhq/batty/alerts"
	"github.com/battyhq/batty/eventlog"
)

// maxShown is how many alerts one display-message joins at most.
const maxShown = 8

// NewAlertSink returns the cockpit's alerts.Sink: the alerts it shows
// (Shown), worded by alertText, displayed on the clients attached to u's
// session (Updater.ShowAlerts), a few joined per display, from the sink's
// own goroutine. It is held: call Start once tmux answers (the daemon is
// ready). limit bounds the queue (0: alerts.DefaultLimit).
func NewAlertSink(u *Updater, limit int) *alerts.Queue {
	return alerts.NewHeldQueue(alerts.QueueConfig{Name: "cockpit", Limit: limit, Batch: maxShown, Log: u.log, Keep: Shown,
		Deliver: func(ctx context.Context, batch []eventlog.Alert) {
			texts := make([]string, len(batch))
			for i, a := range batch {
				texts[i] = alertText(a)
			}
			u.ShowAlerts(ctx, texts)
		}})
}
