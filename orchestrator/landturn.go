package orchestrator

import (
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/landing"
)

// A landing asked for while its agent's turn runs (the agent's own
// `batty merge`, run in the turn that wrote the work, or the human's)
// waits for that turn's commit: the branch holds the turn's work only
// once batty has committed it after the turn. The agent says whether work
// of a turn may still come into its worktree (publishWork); the lander
// holds such a request (state waiting_turn) and releases it once none may
// (landing.DecideTurn), then lands it as usual. The request is durable in
// the queue's state file: a daemon killed meanwhile holds or releases it
// again at its next start, once the agent has committed what the earlier
// run left.

// publishWork lets the merge queue see whether work of a turn may still
// come into the agent's worktree: a turn is in flight (until its commit
// has ended and its message is recorded or back in the queue), or the
// worktree is being prepared (its commit of what an earlier run left
// pending), and how many turns it has been sent. When the turn that was
// open has ended, the lander is woken to release what waited for it. Run's
// goroutine only.
func (a *agent) publishWork() {
	if a.ws == nil {
		return
	}
	open := a.inflight != nil || a.prepDone != nil
	a.mu.Lock()
	was, turns := a.workOpen, a.workTurns
	a.workOpen, a.workTurns = open, a.turnsSent
	a.mu.Unlock()
	if was && (!open || turns != a.turnsSent) {
		// The turn a landing may wait for has ended (and another may
		// have begun).
		a.crew.landed()
	}
}

// workPending reports what publishWork published last: whether work of
// a turn may still come, and how many turns the agent had been sent then.
// Safe from any goroutine.
func (a *agent) workPending() (open bool, turns uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.workOpen, a.workTurns
}

// turns holds each unfinished request whose agent's turn may still
// commit work, and releases each held one whose agent's may not
// (landing.DecideTurn, waitsForTurn). Lander's goroutine only.
func (l *lander) turns() {
	for _, r := range l.q.List() {
		id := r.ID
		var open bool
		var sent uint64
		if a := l.d.byName[r.Agent]; a != nil {
			open, sent = a.workPending()
		}
		at, seen := l.heldAt[r.ID]
		busy := waitsForTurn(open, sent, at, seen)
		var err error
		switch landing.DecideTurn(r, busy) {
		case landing.TurnHold:
			if r, err = l.q.HoldForTurn(r.ID); err == nil {
				l.d.events.Append(eventlog.Event{Type: eventlog.EvLandingWaiting, Agent: r.Agent, Detail: r.Error,
					Data: eventlog.LandingWaiting{Request: r.ID}})
			}
		case landing.TurnRelease:
			r, err = l.q.ReleaseTurn(r.ID)
		}
		if err != nil {
			l.d.log.Warn("Landing request", "request", id, "error", err)
			continue
		}
		if r.State == landing.WaitingTurn && !seen {
			// The turn it waits for: the one in flight now (after a
			// restart, the first this daemon saw).
			l.heldAt[r.ID] = sent
		}
		if r.State != landing.WaitingTurn {
			delete(l.heldAt, r.ID)
		}
	}
}

// waitsForTurn reports whether a landing of an agent still waits for a
// turn: open and sent are what the agent published (work of a turn may
// still come; the turns it had been sent), heldAt the turns it had been
// sent when the request was held (seen: the request is held and heldAt
// known). A held request waits for that turn alone: once a later one has
// been sent, the turn it waited for has ended and its commit is done, so
// an agent whose messages keep it busy does not hold its landing for
// ever. It is a pure function.
func waitsForTurn(open bool, sent, heldAt uint64, seen bool) bool {
	return open && (!seen || sent == heldAt)
}
