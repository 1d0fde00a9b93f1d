// Package eventlog is the team's event log, .batty/events.jsonl: the Event
// a line holds, the event types and the payload each carries (Payload),
// the writer that appends and rotates it, and which events are alerts
// (AlertFor).
package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/schedule"
)

// Event log defaults.
const (
	defaultEventLogMax  = 10 << 20
	defaultEventLogKeep = 3
)

// Event is one line of .batty/events.jsonl. Data is the payload of its
// kind (Payload: one type per kind, e.g. Delivered for EvDelivered), nil
// for a kind that carries none.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Agent   string    `json:"agent,omitempty"`
	Message string    `json:"message_id,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Data    Payload   `json:"data,omitempty"`
}

// Decode reads one line of the event log (without its line break). It is
// the one reader of event lines: the feed, the demo and the daemon's own
// observers see the same shapes. It fails only on a line that is not an
// event's JSON object; data that does not fit its kind's payload is kept
// as Raw. It never panics.
func Decode(line []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	return e, nil
}

// UnmarshalJSON decodes an event's line, its data as the payload of its
// type (see Decode).
func (e *Event) UnmarshalJSON(b []byte) error {
	type envelope Event
	var line struct {
		envelope
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &line); err != nil {
		return err
	}
	*e = Event(line.envelope)
	e.Data = decodeData(e.Type, line.Data)
	return nil
}

// Event types written by the daemon.
const (
	EvDaemonStarted = "daemon_started"
	EvDaemonStopped = "daemon_stopped"
	EvShimStarted   = "shim_started"
	EvShimExited    = "shim_exited"
	EvAgentFailed   = "agent_failed" // alert: crash loop, no more respawns
	EvStateChanged  = "state_changed"
	EvThreadChanged = "thread_changed"
	EvDelivered     = "delivered" // a message was handed to a shim (attempt n)
	EvRouted        = "routed"    // a role message was given to an instance
	// EvSlotGranted: an agent that waited for a slot under the team's
	// limits got one; its next turn goes (Data: waited_ms).
	EvSlotGranted  = "slot_granted"
	EvTurnFinished = "turn_finished"
	EvRequeued     = "requeued"
	EvRejected     = "rejected"
	EvCancelled    = "cancelled" // the user withdrew a message (`batty cancel`); its outcome is recorded as cancelled
	EvReply        = "reply"     // a reply landed in its asker's inbox (Data "to": the human or an agent)
	EvPaused       = "dispatch_paused"
	EvResumed      = "dispatch_resumed"
	EvQuotaBlocked = "quota_blocked" // alert: once per account pause
	EvQuotaProbe   = "quota_probe"   // a paused account's probe turn: start, sent, limit
	EvQuotaResumed = "quota_resumed" // an account's agents released
	// EvAccountSwitched: alert, once per switch: agents moved from one
	// account to another (Data: from, to, agents, reason: "limit" when the
	// account they ran on hit its usage limit, "return" when they go back
	// to one they prefer); their threads go with them.
	EvAccountSwitched = "account_switched"
	// EvQuotaWarning: alert, once per crossing: an account's rate-limit
	// use reached quota.warn_pct (Data: account, window, used_pct,
	// resets_at).
	EvQuotaWarning = "quota_warning"
	// EvBudgetWarning: alert, once per budget window: the use of a
	// budget (team.yaml budgets) reached its warn_at (Data: budget, for,
	// per, used_tokens, budget_tokens, warn_at_pct, window_start, until).
	EvBudgetWarning = "budget_warning"
	// EvBudgetReached: alert, once per budget window: a budget was
	// reached; the agents it covers take no new turn until the window's
	// end (Data as EvBudgetWarning).
	EvBudgetReached = "budget_reached"
	// EvBudgetResumed: `batty resume` let the agents of a reached budget
	// (Agent: the one agent, "" for all of them) go on until the end of
	// its window (Data: budget, until).
	EvBudgetResumed  = "budget_resumed"
	EvAuthRequired   = "auth_required"     // alert
	EvContextExhaust = "context_exhausted" // alert: a message does not fit even a fresh thread; recorded as failed
	EvContextRetry   = "context_retry"     // a turn ran out of context window; its message is retried
	EvHandoff        = "context_handoff"   // the thread was archived; the next message opens a fresh one with a handoff
	EvThreadReset    = "thread_reset"
	EvWedged         = "shim_wedged"    // alert: no pong
	EvAgentParked    = "agent_parked"   // alert: its codex cannot run; its messages wait
	EvAgentUnparked  = "agent_unparked" // its codex runs again
	// EvHostUnreachable: alert, once per outage: a host of the team
	// (Data "host") cannot be reached; its agents show as unreachable and
	// their messages wait. EvHostReachable: it answers again.
	EvHostUnreachable = "host_unreachable"
	EvHostReachable   = "host_reachable"
	EvWarning         = "warning"
	// EvNetworkWaiting: alert, once per hold: an account's API is
	// unreachable (codex waits for the network); no agent of the account
	// starts a new turn until it answers.
	EvNetworkWaiting  = "network_waiting"
	EvNetworkRestored = "network_restored" // the API answered again; the hold ended
	// EvRetryScheduled: an attempt failed in a way that may pass; the
	// message is tried again after a back-off (attempt n of max_attempts).
	EvRetryScheduled = "retry_scheduled"
	// EvMessageFailed: alert: a message failed on its last try
	// (max_attempts spent); its outcome carries the last error.
	EvMessageFailed = "message_failed"
	// EvRecordFailed: alert, once per condition: an outcome (or the reply
	// it owes) could not be written, e.g. on a full disk; the agent takes
	// no new message and tries again with a back-off.
	EvRecordFailed = "record_failed"
	// EvRecordRecovered: the outcome held back by EvRecordFailed is
	// written and its reply delivered; the agent goes on.
	EvRecordRecovered = "record_recovered"
	// EvMemoryLow: alert, once per episode: the memory available on this
	// machine fell below limits.min_free_memory; no new turn here starts
	// until it is back (Data: free, min, in bytes). EvMemoryRecovered:
	// it is back.
	EvMemoryLow       = "memory_low"
	EvMemoryRecovered = "memory_recovered"
	// EvAppServerDied: alert, once per death: a shared app-server
	// (codex.app_server: per-account) died by itself; the daemon starts it
	// again, the turns it cut off are retried and every agent on it
	// resumes its thread on the new process (Detail: how it ended; Data:
	// pid, account, agents).
	EvAppServerDied = "app_server_died"
)

// Event types of the worktrees and the merge queue.
const (
	// EvWorkspaceCreated: an agent's worktree was made (Detail: its path;
	// Data: branch, base).
	EvWorkspaceCreated = "workspace_created"
	// EvWorkspaceCommitted: batty committed an agent's worktree (Data:
	// commit, branch, wip: whether as work in progress).
	EvWorkspaceCommitted = "workspace_committed"
	// EvWorkspaceSynced: the new base was merged into an agent's branch
	// after a landing (Detail: what was merged into what).
	EvWorkspaceSynced = "workspace_synced"
	// EvWorkspaceConflict: the new base does not merge cleanly into an
	// agent's branch; the agent was told (Data: files).
	EvWorkspaceConflict = "workspace_conflict"
	// EvLandingQueued: a branch was queued for landing (Data: request,
	// by).
	EvLandingQueued = "landing_queued"
	// EvLandingWaiting: a landing waits (Detail: why, e.g. the user's
	// checkout of base has uncommitted changes).
	EvLandingWaiting = "landing_waiting"
	// EvLanded: a branch landed on base (Data: commit, base, request).
	EvLanded = "landed"
	// EvLandingFailed: alert: a landing left base unchanged: a conflict
	// (Data: conflicts) or a red verify (Detail: the output's tail).
	EvLandingFailed = "landing_failed"
	// EvReviewWaiting: alert: a landing passed verify and waits for the
	// human's review (workspace.review: human, or batty merge --review),
	// once per request and tip verified (Data: request, branch, base,
	// tip, merged).
	EvReviewWaiting = "review_waiting"
	// EvLandingApproved: the human approved a landing in review; it lands
	// once verified again on the latest base (Data: request, tip).
	EvLandingApproved = "landing_approved"
	// EvLandingRejected: the human rejected a landing in review; base
	// unchanged, the agent told (Detail: the reason; Data: request, tip).
	EvLandingRejected = "landing_rejected"
)

// Event types of the schedules (schedule.Ev*), in events.jsonl.
const (
	EvScheduleRunStarted  = schedule.EvRunStarted
	EvScheduleRunFinished = schedule.EvRunFinished
	EvScheduleStopped     = schedule.EvStopped
	EvScheduleFailed      = schedule.EvFailed
)

// Log appends events as JSON lines and rotates the file by size
// (events.jsonl → .1 → .2 …). Safe for concurrent use; a write failure is
// reported to onError and never stops the daemon.
//
// It holds the state directory open (checked not to be a link, see
// Layout.OpenDir) and opens, renames and removes its files relative to it
// with O_NOFOLLOW: a link planted at events.jsonl is refused at the next
// reopen (reported, events dropped until it is removed), never written
// through, and a link swapped in for .batty later redirects nothing.
type Log struct {
	mu      sync.Mutex
	dir     *atomicfile.Dir // owned; closed by Close
	name    string
	path    string // for messages
	max     int64
	keep    int
	f       *os.File
	size    int64
	onError func(error)
	observe func(Event) // SetObserver
}

// Open opens the event log of the project in l, creating it (0600) if
// needed. The state directory must exist. A write failure is reported to
// onError.
func Open(l project.Layout, onError func(error)) (*Log, error) {
	dir, err := l.OpenDir("", false)
	if err != nil {
		return nil, fmt.Errorf("open event log %s: %w", l.EventsLog(), err)
	}
	el := &Log{dir: dir, name: project.EventsName, path: l.EventsLog(), max: defaultEventLogMax, keep: defaultEventLogKeep, onError: onError}
	if err := el.open(); err != nil {
		dir.Close()
		return nil, err
	}
	return el, nil
}

// open opens (or creates) the log for appending. A log whose last line
// was cut short (power lost mid-append, a hand edit) gets a newline first,
// so the next event starts a line of its own instead of being glued to
// the cut one and lost with it.
func (l *Log) open() error {
	f, err := l.dir.OpenFile(l.name, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open event log %s: %w", l.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat event log %s: %w", l.path, err)
	}
	size := st.Size()
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			f.Close()
			return fmt.Errorf("read the end of event log %s: %w", l.path, err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return fmt.Errorf("end the cut last line of event log %s: %w", l.path, err)
			}
			size++
		}
	}
	l.f, l.size = f, size
	return nil
}

// Chain returns an observer calling each non-nil observer of fs in turn
// (nil when there is none).
func Chain(fs ...func(Event)) func(Event) {
	var set []func(Event)
	for _, f := range fs {
		if f != nil {
			set = append(set, f)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return set[0]
	}
	return func(e Event) {
		for _, f := range set {
			f(e)
		}
	}
}

// SetObserver has every appended event passed to f as well (after it is
// written, or dropped), from the appending goroutine; nil: none.
func (l *Log) SetObserver(f func(Event)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observe = f
}

// Append writes one event (Time defaults to now). If the file could not be
// reopened after a failure, it tries again first.
func (l *Log) Append(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		l.onError(fmt.Errorf("encode event %s: %w", e.Type, err))
		return
	}
	// Observers get the event as every reader of the log gets it: decoded
	// from its line, so its payload is the one its kind decodes to.
	seen, err := Decode(b)
	if err != nil {
		l.onError(fmt.Errorf("decode event %s: %w", e.Type, err))
		return
	}
	if e.Data != nil && reflect.TypeOf(seen.Data) != reflect.TypeOf(e.Data) {
		// Written all the same; its readers get it as its kind's or Raw.
		l.onError(fmt.Errorf("event %s carries data of type %T, which reads back as %T", e.Type, e.Data, seen.Data))
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.observe != nil {
		defer l.observe(seen)
	}
	if l.dir == nil {
		return // closed
	}
	if l.f == nil {
		if err := l.open(); err != nil {
			l.onError(fmt.Errorf("event %s dropped: %w", e.Type, err))
			return
		}
	}
	if l.size+int64(len(b)) > l.max && l.size > 0 {
		if err := l.rotate(); err != nil {
			l.onError(err)
		}
		if l.f == nil {
			return
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err != nil {
		l.onError(fmt.Errorf("append to event log %s: %w", l.path, err))
	}
}

// rotate shifts the generations and opens a fresh file. If the file cannot
// be renamed it keeps appending to it; if no file can be opened, l.f is nil.
func (l *Log) rotate() error {
	l.f.Close()
	l.f = nil
	for i := l.keep - 1; i >= 1; i-- {
		l.dir.Rename(l.name+"."+strconv.Itoa(i), l.name+"."+strconv.Itoa(i+1))
	}
	if err := l.dir.Rename(l.name, l.name+".1"); err != nil {
		return errors.Join(fmt.Errorf("rotate event log %s: %w", l.path, err), l.open())
	}
	return l.open()
}

// Close closes the file and the directory; later appends are dropped. It is
// idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir == nil {
		return nil
	}
	var err error
	if l.f != nil {
		err = l.f.Close()
		l.f = nil
	}
	err = errors.Join(err, l.dir.Close())
	l.dir = nil
	return err
}
