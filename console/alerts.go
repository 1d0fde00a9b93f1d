package console

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/alerts"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/logtail"
)

// Limits of the alert history.
const (
	// maxAlerts is how many alerts the console keeps, the newest.
	maxAlerts = 500
	// alertHistoryLines is how many of the event log's last lines are
	// read for the history when the console starts.
	alertHistoryLines = 20000
	// maxEventLine bounds an event line kept while it is being written.
	maxEventLine = 1 << 20
)

// alertFeed is the team's alerts (eventlog.AlertFor of every event),
// oldest first: the history read from the event log's end when the
// console starts (load), then each alert the daemon fans out to the
// console's sink (newAlertSink). The pages read it.
type alertFeed struct {
	path string
	log  hclog.Logger

	mu     sync.Mutex
	alerts []eventlog.Alert
	part   []byte
}

// load reads the alerts of the event log's last lines, once; a log not
// written yet has none. It blocks for the read.
func (f *alertFeed) load() {
	t := &logtail.Tail{Path: f.path, Label: "event log", Out: f}
	if err := t.PrintLast(alertHistoryLines); err != nil && !errors.Is(err, logtail.ErrNoFile) {
		f.log.Warn("Console cannot read the event log's alerts", "error", err)
	}
	f.mu.Lock()
	f.part = nil
	f.mu.Unlock()
}

// newAlertSink returns the console's alerts.Sink: its goroutine keeps
// each alert in f, then tells the open pages (notify: the live streams'
// hub, whose SSE clients get the new badge and notes). limit bounds the
// queue (0: alerts.DefaultLimit).
func newAlertSink(f *alertFeed, notify func(context.Context), limit int, log hclog.Logger) *alerts.Queue {
	return alerts.NewQueue(alerts.QueueConfig{Name: "console", Limit: limit, Batch: maxAlerts, Log: log,
		Deliver: func(ctx context.Context, batch []eventlog.Alert) {
			f.mu.Lock()
			for _, a := range batch {
				f.keep(a)
			}
			f.mu.Unlock()
			notify(ctx)
		}})
}

// keep appends a, the newest maxAlerts kept. f.mu is held.
func (f *alertFeed) keep(a eventlog.Alert) {
	f.alerts = append(f.alerts, a)
	if n := len(f.alerts); n > maxAlerts {
		f.alerts = slices.Clone(f.alerts[n-maxAlerts:])
	}
}

// Write implements io.Writer for load's tail: every whole line that is
// an alert is kept. Lines that are not events are skipped.
func (f *alertFeed) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.part = append(f.part, p...)
	for {
		i := bytes.IndexByte(f.part, '\n')
		if i < 0 {
			break
		}
		line := f.part[:i]
		f.part = f.part[i+1:]
		e, err := eventlog.Decode(line)
		if err != nil {
			continue
		}
		if a, ok := eventlog.AlertFor(e); ok {
			f.keep(a)
		}
	}
	if len(f.part) > maxEventLine {
		f.part = nil
	}
	return len(p), nil
}

// latest returns at most n alerts, newest first.
func (f *alertFeed) latest(n int) []eventlog.Alert {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]eventlog.Alert, 0, min(n, len(f.alerts)))
	for i := len(f.alerts) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, f.alerts[i])
	}
	return out
}

// since counts the alerts after t.
func (f *alertFeed) since(t time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := len(f.alerts) - 1; i >= 0 && f.alerts[i].Time.After(t); i-- {
		n++
	}
	return n
}
