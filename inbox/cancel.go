package inbox

import (
	"fmt"
)

// Cancel withdraws the pending message id: it claims it (new/ → cur/) and
// records o, whose Status must be StatusCancelled, as its outcome (cur/ →
// done/), and returns the message as recorded. Errors are Claim's and
// Complete's: ErrNotPending (with ErrAlreadyDone once it has an outcome)
// when the message is in flight or finished, ErrNotFound when the box has
// no such message. A crash between the two steps leaves the message in
// cur/, where the next daemon's Recover finds it and puts it back in the
// queue: a cancel is then lost, never a message. Only the daemon, or a
// command holding the project's lock while no daemon runs, cancels.
func (b *Box) Cancel(id string, o Outcome) (Message, error) {
	if o.Status != StatusCancelled {
		return Message{}, fmt.Errorf("cancel %s in %s: outcome status %q, want %q", trim(id), b.Dir, trim(o.Status), StatusCancelled)
	}
	if _, err := b.Claim(id); err != nil {
		return Message{}, err
	}
	return b.Complete(id, o)
}

// CancelledByUser is the error a cancelled message's outcome records.
const CancelledByUser = "cancelled by the user (batty cancel)"

// CancelledOutcome is the outcome a message withdrawn by `batty cancel` is
// recorded with; agent is who would have run it (an agent, or the role of
// a role queue). It is a pure function.
func CancelledOutcome(agent string) Outcome {
	return Outcome{Status: StatusCancelled, Error: CancelledByUser, Agent: agent}
}
