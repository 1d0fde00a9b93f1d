package orchestrator

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/retry"
)

// retryVerdict is what becomes of a message whose attempt failed in a way
// that may pass.
type retryVerdict struct {
	retry    bool                 // try again after delay
	delay    time.Duration        // the back-off
	record   inbox.TransientRetry // the message's retry record when retried
	failures int                  // failed attempts so far, this one included
	final    string               // the outcome's error when not retried
}

// decideRetry decides for message m, whose attempt ended as e with cause
// (retryCause), under maxAttempts tries: retried with back-off (the nth
// retry waits retry.Backoff(n, base, limit, r)) while tries are left, else
// failed with the last error. It is a pure function.
func decideRetry(m inbox.Message, e protocol.TurnFinished, cause string, maxAttempts int, now time.Time, base, limit time.Duration, r float64) retryVerdict {
	failures := 1
	if m.Transient != nil {
		failures = m.Transient.Failures + 1
	}
	if failures >= maxAttempts {
		final := e.Error
		if failures > 1 {
			final = fmt.Sprintf("failed %d of %d attempts, the last after %s: %s", failures, maxAttempts, cause, e.Error)
		}
		return retryVerdict{failures: failures, final: final}
	}
	delay := retry.Backoff(failures, base, limit, r)
	return retryVerdict{retry: true, delay: delay, failures: failures, record: inbox.TransientRetry{
		Failures: failures, LastError: e.Error, NotBefore: now.Add(delay).UTC(),
		Note: retryNote(failures+1, maxAttempts, cause, e.Error, e.Items > 0),
	}}
}

// retryInflight puts the message in flight back in the queue with its
// retry record; dispatch holds it back until the back-off ends.
func (a *agent) retryInflight(m inbox.Message, e protocol.TurnFinished, v retryVerdict) {
	a.inflight = nil
	if err := a.box.RetryLater(m.ID, v.record); err != nil {
		a.warn("retry "+m.ID, err)
	}
	a.log.Warn("Attempt failed, retrying", "message", m.ID, "failures", v.failures, "max_attempts", a.d.cfg.MaxAttempts,
		"in", v.delay.Round(time.Millisecond), "error", e.Error)
	a.d.events.Append(Event{Type: EvRetryScheduled, Agent: a.def.Name, Message: m.ID, Detail: e.Error, Data: map[string]any{
		"attempt": v.failures + 1, "max_attempts": a.d.cfg.MaxAttempts, "status": e.Status, "failure": e.Failure,
		"delay_ms": v.delay.Milliseconds(), "not_before": v.record.NotBefore, "note": v.record.Note}})
	a.retryIn(v.delay)
}

// backingOff reports whether m waits for its retry back-off, and arms the
// agent's timer to look again when it ends.
func (a *agent) backingOff(m inbox.Message) bool {
	if m.Transient == nil || m.Transient.NotBefore.IsZero() {
		return false
	}
	wait := time.Until(m.Transient.NotBefore)
	if wait <= 0 {
		return false
	}
	a.retryIn(wait)
	return true
}
