package orchestrator

import (
	"slices"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// How an agent and the daemon talk: by messages both ways, neither ever
// waiting for the other. The daemon puts a request (agentCtl) in the
// agent's mailbox and goes on; the agent answers through the request's
// answer, which puts the answer in the daemon's mailbox (see
// Daemon.askAgents). The agent's goroutine never runs git or ssh itself:
// a step runs on a goroutine of its own (startStep), and a request that
// comes meanwhile is acknowledged at once as pending, shown by status
// (agentSnap.pending), and applied once the step has ended.

// startStep runs work off run's goroutine: a git or ssh step on the worktree (on
// a host, over ssh). run waits for its end, answering the daemon's
// requests meanwhile, then calls the function work returned, on run's
// goroutine, to apply the step's result. One step runs at a time, and
// none while the worktree is being prepared; work must use nothing of the
// agent's but what its closure was given (the agentWorkspace, copies).
// run does not return while a step runs; each git command of a step has
// its own time limit (gitTimeout), which ends the step's goroutine.
func (a *agent) startStep(work func() func()) {
	done := make(chan func(), 1)
	a.step = done
	go func() { done <- work() }()
}

// takeCtl takes the daemon's requests: applied now, or, while a step runs
// or requests wait for one, acknowledged as pending and deferred. Run's
// goroutine only.
func (a *agent) takeCtl() {
	for _, c := range a.ctl.take() {
		if a.step != nil || len(a.deferred) > 0 {
			a.deferCtl(c)
			continue
		}
		a.applyCtl(c, false)
	}
}

// deferCtl holds c until the step running has ended, answering it at once
// as pending (a retry of an agent that is not failed is answered for
// what it is: there is nothing to apply).
func (a *agent) deferCtl(c agentCtl) {
	if c.op == opRetry && !a.retryable() {
		c.answer(agentAnswer{err: errNotFailed})
		return
	}
	a.deferred = append(a.deferred, c)
	a.addPending(c)
}

// applyDeferred applies the oldest deferred request; once none is left,
// the agent looks at its inbox again (dispatch waited for them).
func (a *agent) applyDeferred() {
	c := a.deferred[0]
	a.deferred = a.deferred[1:]
	a.applyCtl(c, true)
	if len(a.deferred) == 0 {
		a.poke()
	}
}

// applyCtl carries out c. late says it was acknowledged as pending
// already (addPending): its result then goes to the daemon's log and, when
// it did not take effect, to the event log as a warning, and its word
// leaves the pending list once applied.
func (a *agent) applyCtl(c agentCtl, late bool) {
	switch c.op {
	case opReset:
		if !late && a.resetWaits() {
			// Its worktree is committed first, off run's goroutine.
			a.addPending(c)
			late = true
		}
		a.reset(c.reason, func(err error) {
			if !late {
				c.answer(agentAnswer{err: err})
				return
			}
			a.dropPending(c)
			a.lateResult(c, err == nil, errText(err))
		})
	case opSwitch:
		if !late && a.resetWaits() {
			// As a reset: its worktree is committed first.
			a.addPending(c)
			late = true
		}
		a.switchThread(c.sw, func(err error) {
			if !late {
				c.answer(agentAnswer{err: err})
				return
			}
			a.dropPending(c)
			a.lateResult(c, err == nil, errText(err))
		})
	case opCancel:
		res := a.cancel(c.id, c.interrupt)
		if !late {
			c.answer(agentAnswer{cancel: res})
			return
		}
		a.dropPending(c)
		a.lateResult(c, res.Cancelled(), res.Detail)
	case opRetry:
		var err error
		if !a.retryNow() {
			err = errNotFailed
		}
		if !late {
			c.answer(agentAnswer{err: err})
			return
		}
		a.dropPending(c)
	case opStop:
		// run answers by returning: done closes once the shim is gone.
		a.stopping = true
		a.setSnap(func(s *agentSnap) { s.state = agentStopped })
		if a.p == nil {
			a.stopPreparing()
			a.commitWorkspace(nil, true, "work in progress when the team stopped", func() { a.finished = true })
			return
		}
		// The shim's events keep coming here until it exits; the
		// client escalates to a Kill command, then SIGKILL.
		a.p.BeginStop(c.timeout, "daemon stop")
	case opEnd:
		a.end()
	}
}

// lateResult logs what became of c, a request applied after it was
// acknowledged as pending; one that did not take effect is a warning event
// too (detail says why), since its asker has its answer already.
func (a *agent) lateResult(c agentCtl, ok bool, detail string) {
	what := pendingWord(c)
	if ok {
		a.log.Info("Pending request applied", "request", what)
		return
	}
	a.log.Warn("Pending request not applied", "request", what, "detail", detail)
	a.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Message: c.id, Detail: what + " not applied: " + detail})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// retryable reports whether a retry would do anything: the agent is failed,
// or parked by its worktree (see retryNow).
func (a *agent) retryable() bool {
	return a.failed || (a.wsProblem != nil && a.prepDone == nil && a.p == nil)
}

// addPending answers c as pending and adds it to the pending list status
// shows.
func (a *agent) addPending(c agentCtl) {
	if w := pendingWord(c); w != "" {
		a.setSnap(func(s *agentSnap) { s.pending = append(slices.Clip(s.pending), w) })
	}
	if c.answer == nil {
		return
	}
	ans := agentAnswer{pending: true}
	if c.op == opCancel {
		ans.cancel = control.CancelResult{ID: c.id, Box: a.def.Name, Result: control.CancelPending,
			Detail: a.def.Name + " is in a git or ssh step: cancelled once it ends"}
	}
	c.answer(ans)
}

// dropPending takes c, applied, off the pending list.
func (a *agent) dropPending(c agentCtl) {
	w := pendingWord(c)
	a.setSnap(func(s *agentSnap) {
		if i := slices.Index(s.pending, w); i >= 0 {
			s.pending = slices.Delete(slices.Clone(s.pending), i, i+1)
		}
		if len(s.pending) == 0 {
			s.pending = nil
		}
	})
}

// pendingWord is how status names request c while it is pending: "reset",
// "cancel <id>", "resume"; "" for the requests status does not list. It is
// a pure function.
func pendingWord(c agentCtl) string {
	switch c.op {
	case opReset:
		return control.PendingReset
	case opCancel:
		return control.PendingCancel + " " + c.id
	case opRetry:
		return control.PendingResume
	case opSwitch:
		if c.sw.fork {
			return control.PendingFork + " " + c.sw.thread
		}
		return control.PendingRestore + " " + c.sw.thread
	}
	return ""
}

// refuseLeft closes the agent's mailbox as run returns and answers what
// is left in it as from a stopped agent. A deferred request was answered
// (pending) already; one left as run returns is not applied.
func (a *agent) refuseLeft() {
	for _, c := range a.deferred {
		a.log.Warn("Pending request not applied: the agent stopped", "request", pendingWord(c))
	}
	a.deferred = nil
	for _, c := range a.ctl.close() {
		if c.answer == nil {
			continue
		}
		if c.op == opCancel {
			c.answer(agentAnswer{cancel: control.CancelResult{ID: c.id, Box: a.def.Name, Result: control.CancelRefused, Detail: "agent " + a.def.Name + " is stopped"}})
			continue
		}
		c.answer(agentAnswer{err: errAgentStopped})
	}
}
