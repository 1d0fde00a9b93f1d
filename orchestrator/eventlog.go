package orchestrator

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strconv"
	"sync"
	"time"
)

// Event log defaults.
const (
	defaultEventLogMax  = 10 << 20
	defaultEventLogKeep = 3
)

// Event is one line of .batty/events.jsonl.
type Event struct {
	Time    time.Time      `json:"time"`
	Type    string         `json:"type"`
	Agent   string         `json:"agent,omitempty"`
	Message string         `json:"message_id,omitempty"`
	Detail  string         `json:"detail,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
}

// Event types written by the daemon.
const (
	EvDaemonStarted  = "daemon_started"
	EvDaemonStopped  = "daemon_stopped"
	EvShimStarted    = "shim_started"
	EvShimExited     = "shim_exited"
	EvAgentFailed    = "agent_failed" // alert: crash loop, no more respawns
	EvStateChanged   = "state_changed"
	EvThreadChanged  = "thread_changed"
	EvDelivered      = "delivered" // a message was handed to a shim (attempt n)
	EvRouted         = "routed"    // a role message was given to an instance
	EvTurnFinished   = "turn_finished"
	EvRequeued       = "requeued"
	EvRejected       = "rejected"
	EvReply          = "reply" // a reply landed in the human's inbox
	EvPaused         = "dispatch_paused"
	EvResumed        = "dispatch_resumed"
	EvQuotaBlocked   = "quota_blocked" // alert
	EvAuthRequired   = "auth_required" // alert
	EvContextExhaust = "context_exhausted"
	EvThreadReset    = "thread_reset"
	EvWedged         = "shim_wedged" // alert: no pong
	EvWarning        = "warning"
)

// eventLog appends events as JSON lines and rotates the file by size
// (events.jsonl → .1 → .2 …). Safe for concurrent use; a write failure is
// reported to onError and never stops the daemon.
type eventLog struct {
	mu      sync.Mutex
	path    string
	max     int64
	keep    int
	f       *os.File
	size    int64
	onError func(error)
	observe func(Event) // Options.OnEvent
}

func openEventLog(path string, onError func(error)) (*eventLog, error) {
	l := &eventLog{path: path, max: defaultEventLogMax, keep: defaultEventLogKeep, onError: onError}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *eventLog) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open event log %s: %w", l.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat event log %s: %w", l.path, err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Append writes one event (Time defaults to now).
func (l *eventLog) Append(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Data = withoutZeroTimes(e.Data)
	b, err := json.Marshal(e)
	if err != nil {
		l.onError(fmt.Errorf("encode event %s: %w", e.Type, err))
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.observe != nil {
		defer l.observe(e)
	}
	if l.f == nil {
		return
	}
	if l.size+int64(len(b)) > l.max && l.size > 0 {
		if err := l.rotate(); err != nil {
			l.onError(err)
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err != nil {
		l.onError(fmt.Errorf("append to event log %s: %w", l.path, err))
	}
}

func (l *eventLog) rotate() error {
	l.f.Close()
	for i := l.keep - 1; i >= 1; i-- {
		os.Rename(l.path+"."+strconv.Itoa(i), l.path+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		l.open()
		return fmt.Errorf("rotate event log %s: %w", l.path, err)
	}
	return l.open()
}

// Close closes the file; later appends are dropped.
func (l *eventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// withoutZeroTimes returns data without its zero time.Time values: an
// instant that is not known ("resume_at" of a pause that has no end) is left
// out rather than written as 0001-01-01T00:00:00Z. data itself is not
// modified.
func withoutZeroTimes(data map[string]any) map[string]any {
	var out map[string]any
	for k, v := range data {
		if t, ok := v.(time.Time); ok && t.IsZero() {
			if out == nil {
				out = maps.Clone(data)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return data
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
