package orchestrator

import (
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/retry"
)

// turnEnd is what becomes of the message in flight when its turn ends.
type turnEnd int

const (
	// turnUnstarted: codex could not start. The message goes back to the
	// queue as it was (its attempt given back) and the agent parks.
	turnUnstarted turnEnd = iota + 1
	// turnRequeue: the message goes back to the queue now — its turn was
	// interrupted, hit a usage limit or a failed login, or ran out of
	// context window with a step left to take.
	turnRequeue
	// turnRetryLater: the message goes back to the queue with its retry
	// record, and waits for the back-off: the failure may pass and tries
	// are left.
	turnRetryLater
	// turnRecord: the message has its final outcome, recorded with the
	// reply it owes.
	turnRecord
)

// netEffect is what the end of a turn does to its account's network hold
// (see nethold.go).
type netEffect int

const (
	// netLeave: the agent leaves the hold; its codex could not start, so
	// it probes no more (leaveNetHold).
	netLeave netEffect = iota + 1
	// netStillProbing: the message is retried after a network failure; the
	// agent keeps probing the held account, and its turn no longer waits.
	netStillProbing
	// netAnswered: the turn completed, so the API answered: the hold ends
	// (apiAnswered).
	netAnswered
	// netTurnEnded: any other end; netTurnEnded tells from the hold
	// whether the API answered the turn.
	netTurnEnded
)

// turnFacts is what planTurn needs to know besides the message and its
// turn's end.
type turnFacts struct {
	// contextStep is contextStep's answer for the message now: what
	// follows should its turn have run out of context window.
	contextStep contextAction
	// maxAttempts is how many tries a message gets (the team's
	// max_attempts).
	maxAttempts int
	// now is when the turn ended.
	now time.Time
	// retryBase and retryMax bound the back-off (the RetryBase and
	// RetryMax options), jitter is a random number in [0, 1) that spreads
	// it (see retry.Backoff).
	retryBase, retryMax time.Duration
	jitter              float64
}

// turnPlan is what follows the end of a turn of the message in flight,
// decided by planTurn and applied by the agent (turnFinished).
type turnPlan struct {
	end turnEnd
	net netEffect
	// quotaHit: the turn hit a usage limit, reported for the message with
	// its error (normally announced by QuotaBlocked already, then a no-op).
	quotaHit bool
	// context is the step taken after the turn ran out of context window
	// (contextRetrySame or contextHandoff); 0 when none.
	context contextAction
	// lastError is the agent's last error after a turn that did not
	// complete and said why (then the agent counts a failed turn); "" when
	// the turn did not fail that way.
	lastError string
	// requeue says why the message goes back to the queue (turnRequeue:
	// the requeued event's detail; turnRetryLater: the retry record's
	// note), "" when it does not; the turn_finished event says it was
	// requeued when it is set.
	requeue string
	// retryKind is the protocol.Retry* reason recorded with a message put
	// back for a usage limit or a failed login (turnRequeue).
	retryKind string
	// verdict is decideRetry's verdict on a failure that may pass: the
	// back-off (turnRetryLater), or the tries spent and the final error
	// when none are left (turnRecord). The zero value for any other end.
	verdict retryVerdict
	// retryable is retry.Cause of a failure that spent every try (its
	// record raises message_failed), "" when none.
	retryable string
	// outcome is the final outcome to record (turnRecord), but for the
	// reply and the agent's name, which the agent fills in.
	outcome inbox.Outcome
	// probeCompleted says how the message ends as the account's quota
	// probe, if it is one (turnRecord; a message put back never completes
	// a probe).
	probeCompleted bool
}

// planTurn decides what follows the end e of message m's turn, m being the
// message in flight: put back at once, retried after a back-off, or
// recorded as its final outcome — and what goes with it (the network
// hold, a usage limit, the context window's next step, the agent's last
// error). It is a pure function.
func planTurn(m inbox.Message, e protocol.TurnFinished, f turnFacts) turnPlan {
	if e.Failure == protocol.FailSpawn {
		// Codex never ran: nothing to record but the parking. A parked
		// agent probes no network hold.
		return turnPlan{end: turnUnstarted, net: netLeave}
	}
	var p turnPlan
	switch {
	case e.Status == protocol.TurnInterrupted:
		p.requeue = "interrupted: " + e.Error
	case e.Failure == protocol.FailQuota, e.Failure == protocol.FailAuth:
		p.requeue, p.retryKind = string(e.Failure)+": waits for the pause to end", retryOf(e.Failure)
		p.quotaHit = e.Failure == protocol.FailQuota
	case e.Failure == protocol.FailContextWindow:
		// Retried on the same thread, then on a fresh one with a
		// handoff; recorded when it does not fit even there.
		switch f.contextStep {
		case contextRetrySame:
			p.context, p.requeue = contextRetrySame, "context window exhausted: retried on the same thread, which codex compacts first"
		case contextHandoff:
			p.context, p.requeue = contextHandoff, "context window exhausted again: retried on a fresh thread with a handoff"
		}
	}
	if e.Status != protocol.TurnCompleted && e.Error != "" {
		p.lastError = turnError(string(e.Status), string(e.Failure), e.Error)
	}
	if p.requeue == "" {
		if p.retryable = retry.Cause(e); p.retryable != "" {
			p.verdict = decideRetry(m, e, p.retryable, f.maxAttempts, f.now, f.retryBase, f.retryMax, f.jitter)
		}
	}
	switch {
	case p.verdict.retry && e.Failure == protocol.FailNetwork:
		p.net = netStillProbing
	case e.Status == protocol.TurnCompleted:
		// A probe that completed got its answer, whether or not it
		// waited first.
		p.net = netAnswered
	default:
		p.net = netTurnEnded
	}
	switch {
	case p.requeue != "":
		p.end = turnRequeue
	case p.verdict.retry:
		p.end, p.requeue, p.retryable = turnRetryLater, p.verdict.record.Note, ""
	default:
		p.end = turnRecord
		errText := e.Error
		if p.retryable != "" {
			errText = p.verdict.final
		}
		p.outcome = inbox.Outcome{
			Status: string(e.Status), Failure: string(e.Failure), Error: errText,
			ThreadID: e.ThreadID, InputTokens: e.Usage.Input, OutputTokens: e.Usage.Output,
		}
		p.probeCompleted = e.Status == protocol.TurnCompleted
	}
	return p
}
