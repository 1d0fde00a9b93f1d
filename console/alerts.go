package console

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

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
// console starts, then each one as it is appended. follow feeds it; the
// pages read it.
type alertFeed struct {
	path    string
	log     hclog.Logger
	changed func()

	mu     sync.Mutex
	alerts []eventlog.Alert
	part   []byte
}

// follow reads the event log until ctx ends: its last lines, then every
// line appended, through rotations. It blocks.
func (f *alertFeed) follow(ctx context.Context, rescan time.Duration) {
	t := &logtail.Tail{Path: f.path, Label: "event log", Out: f}
	if err := t.Follow(ctx, alertHistoryLines, rescan); err != nil && ctx.Err() == nil {
		f.log.Warn("Console cannot follow the event log", "error", err)
	}
}

// Write implements io.Writer for the tail: every whole line that is an
// alert is kept. Lines that are not events are skipped.
func (f *alertFeed) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.part = append(f.part, p...)
	added := false
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
			f.alerts = append(f.alerts, a)
			added = true
		}
	}
	if len(f.part) > maxEventLine {
		f.part = nil
	}
	if n := len(f.alerts); n > maxAlerts {
		f.alerts = slices.Clone(f.alerts[n-maxAlerts:])
	}
	f.mu.Unlock()
	if added && f.changed != nil {
		f.changed()
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
