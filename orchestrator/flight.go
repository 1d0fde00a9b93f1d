package orchestrator

import (
	"time"

	"github.com/battyhq/batty/inbox"
)

// flight is the agent's room for its turn: the message in flight and how
// it was sent, the outcome waiting to be written, and the timers that look at the inbox again. Run's goroutine
// owns it.
type flight struct {
	ready    bool // the worker is up and has no turn of ours in flight
	inflight *inbox.Message
	flightAt time.Time
	// carried: the message in flight opens a fresh thread with a handoff;
	// freshTurn: it was sent without a thread to resume.
	carried, freshTurn bool
	// cancelling is the id of the message in flight whose turn is being
	// interrupted to cancel it (`batty cancel --interrupt`), "" when none.
	cancelling string
	// pending is an outcome that could not be written yet (see record):
	// nothing else is dispatched until it is; recordRetry tries again.
	pending     *outcomeRecord
	recordRetry *time.Timer
	retry       *time.Timer // looks at the inbox again when a file's grace or a back-off ends
	retryAt     time.Time
}

// inFlight reports whether message id is the one in flight.
func (f *flight) inFlight(id string) bool { return f.inflight != nil && f.inflight.ID == id }

// retryIn makes the agent look at its inbox again after delay (or sooner).
// Only run's goroutine calls it.
func (f *flight) retryIn(delay time.Duration) {
	at := time.Now().Add(delay)
	if f.retry != nil && !f.retryAt.After(at) {
		return
	}
	if f.retry != nil {
		f.retry.Stop()
	}
	f.retry, f.retryAt = time.NewTimer(delay), at
}
