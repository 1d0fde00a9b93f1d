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
// pending). When none may any more, the lander is woken to release what
// waited for it. Run's goroutine only.
func (a *agent) publishWork() {
	if a.ws == nil {
		return
	}
	open := a.inflight != nil || a.prepDone != nil
	a.mu.Lock()
	was := a.workOpen
	a.workOpen = open
	a.mu.Unlock()
	if was && !open && a.d.lander != nil {
		a.d.lander.poke()
	}
}

// workPending reports what publishWork published last. Safe from any
// goroutine.
func (a *agent) workPending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.workOpen
}

// turns holds each unfinished request whose agent's turn may still
// commit work, and releases each held one whose agent's may not
// (landing.DecideTurn). Lander's goroutine only.
func (l *lander) turns() {
	for _, r := range l.q.List() {
		a := l.d.byName[r.Agent]
		busy := a != nil && a.workPending()
		var err error
		switch landing.DecideTurn(r, busy) {
		case landing.TurnHold:
			if r, err = l.q.HoldForTurn(r.ID); err == nil {
				l.d.events.Append(eventlog.Event{Type: eventlog.EvLandingWaiting, Agent: r.Agent, Detail: r.Error,
					Data: eventlog.LandingWaiting{Request: r.ID}})
			}
		case landing.TurnRelease:
			_, err = l.q.ReleaseTurn(r.ID)
		}
		if err != nil {
			l.d.log.Warn("Landing request", "request", r.ID, "error", err)
		}
	}
}
