package shim

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
)

// eventClass says what one codex event means for the turn's timers.
type eventClass int

const (
	// classOutput is real output: the turn makes progress, so the idle
	// timer starts again (and a wait for the network is over).
	classOutput eventClass = iota
	// classRetryNotice is codex retrying a failed request by itself
	// ("Reconnecting... 2/5 (…)"): worth a warning, not activity.
	classRetryNotice
	// classNetworkWait is codex waiting for the network ("Reconnecting...
	// waiting for network (…)"): not activity; the turn's network wait
	// runs instead of its idle timer.
	classNetworkWait
)

// classifyEvent tells real output from codex's retry notices. It is a
// pure function.
func classifyEvent(ev codex.Event) eventClass {
	switch {
	case ev.Type != codex.TypeError || !codex.IsRetryNotice(ev.Message):
		return classOutput
	case codex.IsNetworkWait(ev.Message):
		return classNetworkWait
	}
	return classRetryNotice
}

// netWait tracks one turn's wait for the network: from codex's first
// "waiting for network" notice until its next real output. Codex itself
// waits forever, so the wait is bounded by limit: a timer the turn's loop
// selects on (C) and that stops the turn as failed with
// protocol.FailNetwork. Owned by the turn's loop; not safe for concurrent
// use.
type netWait struct {
	limit time.Duration
	since time.Time // zero: not waiting
	last  string    // codex's latest notice
	timer *time.Timer
}

// waiting reports whether codex waits for the network now.
func (w *netWait) waiting() bool { return !w.since.IsZero() }

// notice records a network-wait notice at now. It reports whether the
// notice began a wait (the first of a run of notices).
func (w *netWait) notice(now time.Time, msg string) bool {
	w.last = msg
	if w.waiting() {
		return false
	}
	w.since = now
	w.timer = time.NewTimer(w.limit)
	return true
}

// end ends the wait, if any, and returns how long it lasted.
func (w *netWait) end(now time.Time) (time.Duration, bool) {
	if !w.waiting() {
		return 0, false
	}
	d := now.Sub(w.since)
	w.stop()
	w.since, w.last = time.Time{}, ""
	return d, true
}

// stop releases the timer.
func (w *netWait) stop() {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// C fires when the wait exceeded its limit; nil when not waiting.
func (w *netWait) C() <-chan time.Time {
	if w.timer == nil {
		return nil
	}
	return w.timer.C
}

// failure is the error of a turn stopped while it waited, after what
// ("codex waited for the network for 30m0s", or the turn timeout).
func (w *netWait) failure(what string) string {
	return fmt.Sprintf("%s: the API was unreachable since %s; codex's last notice: %s",
		what, w.since.UTC().Format(time.RFC3339), w.last)
}

// networkNotice handles one "waiting for network" notice of turn t: the
// transcript shows every notice; the first of a wait stops the idle timer
// (the wait has its own limit, shimconfig.Config.NetworkWait) and tells the parent
// (NetworkWait), which shows the agent as waiting for the network.
func (s *server) networkNotice(t *turn, w *netWait, msg string, idle *time.Timer) {
	now := time.Now()
	if !w.notice(now, msg) {
		s.tlog.Warning(msg)
		return
	}
	idle.Stop()
	s.tlog.Warning(fmt.Sprintf("waiting for network since %s (the turn may wait %s): %s", now.Format("15:04:05"), s.cfg.NetworkWait, msg))
	s.log.Warn("Codex waits for the network", "message", t.msg.ID, "notice", msg)
	s.emit(protocol.NetworkWait{MessageID: t.msg.ID, Waiting: true, Since: now.UTC(), Message: msg})
}
