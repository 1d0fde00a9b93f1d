package orchestrator

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/eventlog"
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
	a.log.Warn("Attempt failed, retrying", "message", m.ID, "failures", v.failures, "max_attempts", a.cfg.MaxAttempts,
		"in", v.delay.Round(time.Millisecond), "error", e.Error)
	a.emit(eventlog.Event{Type: eventlog.EvRetryScheduled, Agent: a.def.Name, Message: m.ID, Detail: e.Error, Data: eventlog.RetryScheduled{
		Attempt: v.failures + 1, MaxAttempts: a.cfg.MaxAttempts, Status: string(e.Status), Failure: string(e.Failure),
		DelayMS: v.delay.Milliseconds(), NotBefore: v.record.NotBefore, Note: v.record.Note}})
	a.retryIn(v.delay)
}

// backoffWait returns how long a message whose retry record says
// notBefore still waits at now, when no back-off is longer than limit (the
// RetryMax option): until notBefore, or not at all when notBefore is zero,
// past, or more than limit ahead. The messages behind a waiting one wait
// too (they keep their order), so no wait may be longer than a back-off
// can be: a not_before written by a back-off was at most limit ahead when
// it was written, hence is never more than limit ahead later while the
// clock runs forward; one further ahead was written by hand (or an agent),
// or the clock was set back since, and holding it would stall the agent's
// queue for as long — it is not honoured. It is a pure function.
func backoffWait(notBefore, now time.Time, limit time.Duration) time.Duration {
	if notBefore.IsZero() {
		return 0
	}
	wait := notBefore.Sub(now)
	if wait <= 0 || wait > limit {
		return 0
	}
	return wait
}
