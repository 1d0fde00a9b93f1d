package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

// outcomeRecord is a final outcome on its way to disk: the message, its
// outcome, and the reply it owes (see answerFor). Recording it writes the
// reply first, under the id inbox.ReplyID gives, then the outcome; both
// steps are idempotent, so a crash between them, or a write that fails and
// is tried again, ends with exactly one reply and one outcome: a message
// whose outcome is not on disk runs again after a restart, and its second
// reply finds the first.
type outcomeRecord struct {
	m       inbox.Message
	o       inbox.Outcome
	reply   inbox.Message
	owed    bool // a reply is due
	replied bool // the reply is in its box

	// What the agent does once it is recorded (recorded).
	e         protocol.TurnFinished
	turn      bool   // from a turn (not a message refused before one)
	retryable string // retry.Cause of a failure that spent every try, "" when none
	failures  int    // the tries it spent
	announced bool   // an alert event told its failure (message_failed, context_exhausted)

	// While it cannot be written.
	since time.Time
	tries int
	wait  time.Duration
}

// newRecord is the record of m's final outcome o, with the reply it owes.
func (a *agent) newRecord(m inbox.Message, o inbox.Outcome) *outcomeRecord {
	o.FinishedAt = time.Now().UTC()
	if o.Agent == "" {
		o.Agent = a.def.Name
	}
	r := &outcomeRecord{m: m, o: o}
	r.reply, r.owed = answerFor(m, o, a.crew.isAgent)
	return r
}

// write writes what of r is not on disk yet: the reply, then the outcome.
// It reports whether this call wrote the outcome (false when it was on
// disk already); an error leaves r to be written again.
func (a *agent) write(r *outcomeRecord) (bool, error) {
	if r.owed && !r.replied {
		box, err := a.crew.replyBox(r.reply.To)
		if err != nil {
			return false, fmt.Errorf("reply to %s: %w", r.reply.To, err)
		}
		got, fresh, err := box.DeliverReply(r.reply)
		if err != nil {
			return false, fmt.Errorf("reply to %s: %w", r.reply.To, err)
		}
		r.replied = true
		if fresh {
			a.emit(eventlog.Event{Type: eventlog.EvReply, Agent: a.def.Name, Message: got.ID, Data: eventlog.Reply{
				To: got.To, InReplyTo: r.m.ID, Preview: eventlog.ReplyPreview(r.reply.Body), Outcome: string(r.o.Status)}})
		}
	}
	_, err := a.box.Complete(r.m.ID, r.o)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, inbox.ErrAlreadyDone):
		return false, nil
	default:
		return false, err
	}
}

// record writes r now or, when it cannot, holds it: the agent takes no
// other message until it is written (its message stays in cur/, where a
// restart finds it), tries again after a back-off (RecordRetryMin doubling
// to RecordRetryMax), shows the condition in status and raises one alert
// (EvRecordFailed) for the whole condition, and EvRecordRecovered once
// written. It reports whether r is on disk. Only run's goroutine calls it.
func (a *agent) record(r *outcomeRecord) bool {
	wrote, err := a.write(r)
	if err != nil {
		r.tries++
		first := r.since.IsZero()
		if first {
			r.since = time.Now().UTC()
			r.wait = a.opts.RecordRetryMin
		} else {
			r.wait = min(r.wait*2, a.opts.RecordRetryMax)
		}
		a.pending = r
		a.recordRetry = time.NewTimer(r.wait)
		detail := fmt.Sprintf("message %s: %v; trying again in %s", r.m.ID, err, r.wait)
		a.log.Error("Recording an outcome failed", "message", r.m.ID, "tries", r.tries, "retry_in", r.wait, "error", err)
		if first {
			a.emit(eventlog.Event{Type: eventlog.EvRecordFailed, Agent: a.def.Name, Message: r.m.ID, Detail: detail})
		}
		a.setSnap(func(s *agentSnap) {
			s.recording = &control.RecordingStatus{Message: r.m.ID, Since: r.since, Tries: r.tries, Error: err.Error()}
		})
		return false
	}
	if a.pending == r {
		a.pending, a.recordRetry = nil, nil
		a.emit(eventlog.Event{Type: eventlog.EvRecordRecovered, Agent: a.def.Name, Message: r.m.ID,
			Detail: fmt.Sprintf("recorded after %d failed tries since %s", r.tries, r.since.Format(time.RFC3339))})
		a.setSnap(func(s *agentSnap) { s.recording = nil })
	}
	a.recorded(r, wrote)
	return true
}

// retryRecord tries the held record again (its back-off ended), and goes
// on with the inbox once it is written. Only run's goroutine calls it.
func (a *agent) retryRecord() {
	r := a.pending
	a.recordRetry = nil
	if r == nil {
		return
	}
	if !a.record(r) {
		return
	}
	if r.turn {
		a.turnRecorded(r)
		return
	}
	a.updateBacklog()
	a.dispatch()
}

// recorded follows r once it is on disk; wrote says whether this agent
// wrote it now (false: it was on disk already, and counts nothing again).
func (a *agent) recorded(r *outcomeRecord, wrote bool) {
	if wrote {
		// A scheduled run ends with its recorded outcome.
		a.crew.outcomeRecorded(r.m.ID, r.o)
	}
	if a.crew.queues(a.def.Role) {
		// Room for a message the role's queue holds back (backlog_limit).
		a.crew.kickRoute()
	}
	if wrote && r.o.Status == inbox.StatusRejected && !r.turn {
		a.emit(eventlog.Event{Type: eventlog.EvRejected, Agent: a.def.Name, Message: r.m.ID, Detail: r.o.Error})
	}
	if wrote && r.o.Status == inbox.StatusCancelled {
		a.emit(eventlog.Event{Type: eventlog.EvCancelled, Agent: a.def.Name, Message: r.m.ID, Detail: r.o.Error,
			Data: eventlog.Cancelled{From: r.m.From, Interrupted: r.turn}})
	}
	if !wrote || !r.turn {
		return
	}
	e := r.e
	if r.o.Status == inbox.StatusCompleted {
		a.st.TurnsCompleted++
		if r.owed && r.reply.Body == NoAnswer {
			a.st.NoAnswers++
		}
	}
	if r.retryable != "" {
		// Every try spent: an alert, with the last error.
		a.log.Error("Message failed", "message", r.m.ID, "attempts", r.failures, "error", e.Error)
		a.emit(eventlog.Event{Type: eventlog.EvMessageFailed, Agent: a.def.Name, Message: r.m.ID, Detail: r.o.Error, Data: eventlog.MessageFailed{
			Attempts: r.failures, MaxAttempts: a.cfg.MaxAttempts, Status: string(e.Status), Failure: string(e.Failure)}})
		r.announced = true
	}
	if e.Failure == protocol.FailContextWindow && r.o.Status != inbox.StatusCancelled {
		a.contextGaveUp(r.m, e)
		r.announced = true
	}
}
