package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/team"
)

// dispatch hands the oldest pending message to the shim when the agent is
// free and nothing holds it: it gathers the facts (gateFacts), decides
// (decideGate) and acts, and shows why it started no turn in status. One
// message is in flight at a time: the durable inbox is the queue, so a
// crash loses nothing that waits. Nothing is dispatched while a step runs
// or requests wait for one (see run): the agent looks again once they are
// done. Only run's goroutine calls it.
func (a *agent) dispatch() {
	defer a.updateBacklog()
	// A slot is held only by a turn in flight: one granted and not used
	// now passes on, unless the agent has just been told to wait for one
	// (a slot granted meanwhile comes with a poke, and the next look uses
	// it or passes it on).
	waitsForSlot := false
	defer func() {
		if a.inflight == nil && !waitsForSlot {
			a.releaseSlot()
		}
	}()
	a.syncParked()
	f := a.gateFacts()
	why := waitNone
	defer func() { a.showWaiting(why, f) }()
	var m inbox.Message
	probe := false
	for {
		d := decideGate(f)
		why = d.why
		switch d.step {
		case stepWait:
			a.held(d.why, f)
			return
		case stepSwitchAccount:
			a.beginAccountSwitch(f.moveTo)
			return
		case stepSyncWorkspace:
			// The agent looks again once the merge has ended.
			a.syncWorkspace()
			return
		case stepTakeNetProbe:
			f.netTake = a.acct.takeNetProbe(f.netProber)
			if f.netTake == refused {
				a.poke()
			}
		case stepReadHead:
			// The oldest message only: the cost of a dispatch does not
			// grow with the backlog.
			var ok bool
			m, ok = a.oldest()
			f.gateHead = gateHead{headRead: true}
			if ok {
				f.head, f.refusal = m.ID, a.refuse(m)
				if m.Transient != nil {
					f.backoff = backoffWait(m.Transient.NotBefore, time.Now(), a.opts.RetryMax)
				}
			}
		case stepReject:
			if _, err := a.box.Claim(m.ID); err != nil {
				a.warn("claim "+m.ID, err)
				why = waitNone
				return
			}
			if !a.record(a.newRecord(m, inbox.Outcome{Status: inbox.StatusRejected, Error: f.refusal})) {
				// Held until it can be written (retryRecord goes on).
				why = waitRecording
				return
			}
			f.headRead = false
		case stepTakeSlot:
			// The team's cap on turns at once: the agent waits its turn
			// for a slot, first asked first served (see takeSlot).
			f.slot = granted
			if !a.takeSlot() {
				f.slot, waitsForSlot = refused, true
			}
		case stepAdmit:
			// A paused account sends one probe turn once its pause ran out.
			var ok bool
			ok, probe = a.acct.admit(m.ID)
			f.admit = granted
			if !ok {
				f.admit = refused
			}
		case stepSend:
			if a.send(m, probe) {
				// Claimed meanwhile (cancelled): the next message.
				f.headRead = false
				continue
			}
			return
		}
	}
}

// gateFacts gathers what decideGate decides on, but the oldest message and
// what the actions learn (dispatch reads and takes those). Only run's
// goroutine calls it.
func (a *agent) gateFacts() gateFacts {
	var f gateFacts
	f.gateSelf = gateSelf{
		recordHeld: a.pending != nil, shimDown: a.p == nil, shimBusy: !a.ready, inflight: a.inflight != nil,
		stopping: a.stopping, stepRuns: a.step != nil, ctlDeferred: len(a.deferred) > 0,
		switching: a.acct.switching, parked: a.parked,
	}
	f.moveTo = a.acct.moveTo()
	_, checked := a.health.state()
	f.healthUnknown = !checked
	a.mu.Lock()
	wantSync := a.syncReq != ""
	a.mu.Unlock()
	if wantSync && a.ws != nil {
		f.syncBase = a.ws.base
	}
	gs := a.gate.State()
	f.paused, f.pauseReason = gs.Paused, gs.Reason
	f.net, f.netProber, f.netMine = a.acct.netStep(a.canProbe)
	f.quotaHeld = !a.acct.mayTry()
	f.budget = a.budgets.holds(a.def.Name, a.def.Role)
	return f
}

// oldest reads the oldest pending message of the agent's inbox: false when
// there is none ready. A file still being written makes the agent look
// again when its grace ends.
func (a *agent) oldest() (inbox.Message, bool) {
	m, ok, errs := a.box.Next("")
	for _, err := range errs {
		var nr *inbox.NotReadyError
		if errors.As(err, &nr) {
			// Maybe still being written: look again when its grace ends.
			a.log.Debug("Inbox file not ready yet", "error", err)
			a.retryIn(nr.Retry)
			continue
		}
		a.warn("pending message", err)
	}
	return m, ok
}

// held acts on a decision to start no turn for reason why: the agent looks
// again when what holds it may have ended, and gives up what it may not
// use meanwhile.
func (a *agent) held(why waitReason, f gateFacts) {
	switch why {
	case waitNetwork:
		if a.acct.netWait(f.net, f.netMine) {
			a.retryIn(netRecheck)
		}
	case waitNothing:
		// Nothing to probe with: another agent of the account may.
		a.acct.quotaRelease("")
		// Nothing to run: no place in the slots' queue either.
		a.crew.turnSlots().Leave(a.def.Name)
	case waitBackoff:
		// Look again when its back-off ends.
		a.retryIn(f.backoff)
	}
}

// send claims m and sends it to the shim (probe: as its account's probe
// turn). It reports whether m was claimed meanwhile: the agent looks at
// the next message then.
func (a *agent) send(m inbox.Message, probe bool) (again bool) {
	cm, err := a.box.Claim(m.ID)
	if err != nil && probe {
		a.acct.quotaRelease(m.ID)
	}
	if errors.Is(err, inbox.ErrNotPending) {
		return true
	}
	if err != nil {
		a.warn("claim "+m.ID, err)
		return false
	}
	if err := a.p.Send(a.outgoing(cm)); err != nil {
		// The shim is going away; its exit puts the message back.
		a.log.Warn("Sending to the shim failed", "message", cm.ID, "error", err)
	}
	a.inflight, a.flightAt, a.ready = &cm, time.Now(), false
	a.turnsSent++
	data := eventlog.Delivered{From: cm.From, Attempt: cm.Attempt, InReplyTo: cm.InReplyTo, SentAt: cm.CreatedAt}
	a.emit(eventlog.Event{Type: eventlog.EvDelivered, Agent: a.def.Name, Message: cm.ID, Data: data})
	if probe {
		a.emit(eventlog.Event{Type: eventlog.EvQuotaProbe, Agent: a.def.Name, Message: cm.ID, Detail: "probe turn sent", Data: eventlog.QuotaProbe{Result: eventlog.ProbeSent}})
	}
	a.setSnap(func(s *agentSnap) { s.inflight, s.flightAt, s.ended = cm.ID, a.flightAt, false })
	return false
}

// showWaiting shows in status why the agent's last look started no turn
// (nothing for waitNone).
func (a *agent) showWaiting(why waitReason, f gateFacts) {
	var w *control.WaitingStatus
	if why != waitNone {
		w = &control.WaitingStatus{Reason: string(why), Detail: waitDetail(why, f)}
	}
	a.setSnap(func(s *agentSnap) { s.waiting = w })
}

// refuse says why a message may not be delivered ("" = it may): talks_to
// is enforced here too, so a file dropped into an inbox by hand cannot get
// around it.
func (a *agent) refuse(m inbox.Message) string {
	if m.From == team.Human || a.isReply(m) {
		return ""
	}
	if _, ok := a.cfg.Agent(m.From); !ok {
		return fmt.Sprintf("unknown sender %q", m.From)
	}
	if !a.cfg.MayTalk(m.From, a.def.Name) {
		return fmt.Sprintf("%s may not message %s (talks_to)", m.From, a.def.Name)
	}
	return ""
}

func (a *agent) updateBacklog() {
	pending, inflight, err := a.box.Count()
	if err != nil {
		return
	}
	a.setSnap(func(s *agentSnap) { s.backlog = pending + inflight })
}

// handle applies one event from the shim.
func (a *agent) handle(m protocol.Message) {
	switch e := m.(type) {
	case protocol.StateChanged:
		a.setSnap(func(s *agentSnap) { s.state = string(e.To) })
		a.emit(eventlog.Event{Type: eventlog.EvStateChanged, Agent: a.def.Name, Detail: fmt.Sprintf("%s→%s %s", e.From, e.To, e.Reason)})
	case protocol.ThreadChanged:
		a.threadChanged(e)
	case protocol.Rejected:
		a.log.Warn("Shim rejected a message", "message", e.ID, "reason", e.Reason, "detail", e.Detail)
		if a.inFlight(e.ID) {
			a.releaseSlot()
			a.requeueInflight("rejected by the shim: " + string(e.Reason))
			a.ready = true
		}
	case protocol.TurnStarted:
		a.health.started()
	case protocol.TurnFinished:
		a.turnFinished(e)
	case protocol.QuotaBlocked:
		a.acct.quotaHit(e.MessageID, e.Message, e.RetryAt)
	case protocol.AuthRequired:
		fix := a.acct.loginFix(a.health)
		a.emit(eventlog.Event{Type: eventlog.EvAuthRequired, Agent: a.def.Name, Message: e.MessageID, Detail: e.Message + " — " + fix,
			Data: eventlog.AuthRequired{Fix: fix}})
		a.crew.pause(project.PauseAuth, fmt.Sprintf("codex needs a login (reported by %s): %s — %s", a.def.Name, e.Message, fix))
	case protocol.ContextExhausted:
		// Acted on with the turn's end (turnFinished): retried, handed off
		// or failed with one alert.
		a.log.Info("Context window exhausted", "message", e.MessageID, "thread", e.ThreadID)
	case protocol.ContextPressure:
		if e.ThreadID == a.st.ThreadID {
			// Not for a thread handed off already (afterTurn).
			a.st.ContextPct = e.Pct
		}
	case protocol.Pong:
		a.ponged(e)
	case protocol.Warning:
		a.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Message: e.MessageID, Detail: e.Message})
	case protocol.Outgoing:
		a.relayed(e)
	case protocol.NetworkWait:
		a.showNet(a.acct.netWaitChanged(e))
	case protocol.RateLimits:
		a.ledgerLimits(e)
		a.acct.rateLimits(e)
	case protocol.Error:
		a.log.Warn("Shim reported an error", "command", e.Command, "error", e.Message)
	}
}

func (a *agent) threadChanged(e protocol.ThreadChanged) {
	now := time.Now().UTC()
	switch e.Reason {
	case protocol.ThreadReset:
		// Archived by reset (or set aside for a fork) already; the turn
		// that ran meanwhile named its thread again (countTurn).
		if e.Previous != "" && a.st.ThreadID == e.Previous {
			a.st.SetThread("", protocol.Usage{})
		}
	case protocol.ThreadForked:
		a.st.ForkFrom = ""
	case protocol.ThreadResumeFailed, protocol.ThreadResumeChanged:
		if e.Previous != "" && a.st.ThreadID == e.Previous {
			a.st.Archive(string(e.Reason)+": "+e.Detail, now)
		}
	}
	if e.Reason == protocol.ThreadRestored && e.ThreadID == a.st.ThreadID {
		// Restored by the daemon already, with its usage baseline.
	} else if e.ThreadID != "" || e.Reason != protocol.ThreadReset {
		// A changed thread starts its running total afresh.
		a.st.SetThread(e.ThreadID, protocol.Usage{})
	}
	a.saveState()
	a.emit(eventlog.Event{Type: eventlog.EvThreadChanged, Agent: a.def.Name, Detail: string(e.Reason),
		Data: eventlog.ThreadChanged{ThreadID: e.ThreadID, Previous: e.Previous}})
}

// turnFinished applies the end of the message in flight's turn as
// planTurn decides: its outcome recorded — durably, before anything else
// happens — or the message put back in the queue when it must run again
// (quota, auth, interrupted, context window, a failure that may pass).
func (a *agent) turnFinished(e protocol.TurnFinished) {
	if !a.inFlight(e.MessageID) {
		a.log.Warn("Turn finished for a message not in flight", "message", e.MessageID)
		return
	}
	// The slot is given back at the turn's end, before the commit of its
	// edits: git holds no slot.
	a.endTurn()
	m := *a.inflight
	p := planTurn(m, e, a.turnFacts(m))
	if a.cancelling == m.ID {
		// Interrupted by `batty cancel --interrupt`.
		a.cancelling = ""
		p = cancelledTurn(p, e)
	}
	if p.end == turnUnstarted {
		a.turnUnstarted(m, e, p)
		return
	}
	// Its usage is in the ledger before anything of it is recorded.
	a.ledgerTurn(m, e, p.end != turnRecord)
	// The turn's edits are committed before its outcome is told anyone: a
	// completed turn's as its work, any other's as work in progress. The
	// commit runs off run's goroutine; turnCommitted goes on once it has
	// ended.
	a.commitWorkspace(&m, e.Status != protocol.TurnCompleted, "", func() { a.turnCommitted(m, e, p) })
}

// turnCommitted goes on with the end of m's turn e, planned as p, once
// the turn's edits are committed (turnFinished).
func (a *agent) turnCommitted(m inbox.Message, e protocol.TurnFinished, p turnPlan) {
	a.journalTurn(m, e, p.end != turnRecord)
	a.countTurn(e)
	if p.quotaHit {
		a.acct.quotaHit(m.ID, e.Error, time.Time{})
	}
	if p.context != 0 {
		a.contextRetry(m, e, p.context)
	}
	if p.lastError != "" {
		a.st.TurnsFailed++
		a.st.SetError(p.lastError, m.ID, time.Now().UTC())
	}
	a.turnNet(p.net, e)
	switch p.end {
	case turnRequeue:
		a.requeueInflightFor(p.requeue, p.retryKind)
		a.afterTurn(m, e, "", true)
	case turnRetryLater:
		a.retryInflight(m, e, p.verdict)
		a.afterTurn(m, e, "", true)
		// A probe that failed this way tells nothing of the usage limit.
		a.acct.quotaProbeEnded(m.ID, false)
	default:
		a.recordTurn(m, e, p)
		return
	}
	a.turnRequeued(m, e, p)
}

// turnFacts gathers what planTurn needs to know of the agent when m's
// turn ends.
func (a *agent) turnFacts(m inbox.Message) turnFacts {
	return turnFacts{
		contextStep: contextStep(a.st.ContextRetry, m.ID, a.freshTurn || a.carried),
		maxAttempts: a.cfg.MaxAttempts, now: time.Now(),
		retryBase: a.opts.RetryBase, retryMax: a.opts.RetryMax, jitter: a.opts.Rand(),
	}
}

// turnUnstarted applies the end of a turn whose codex could not start: the
// message goes back as it was, the agent parks, and the next message is
// looked at (dispatch holds it while the agent is parked).
func (a *agent) turnUnstarted(m inbox.Message, e protocol.TurnFinished, p turnPlan) {
	a.turnNet(p.net, e)
	a.spawnFailed(m, e)
	a.ready = true
	a.updateBacklog()
	a.emit(eventlog.Event{Type: eventlog.EvTurnFinished, Agent: a.def.Name, Message: e.MessageID, Detail: e.Error, Data: eventlog.TurnFinished{
		Status: string(e.Status), Failure: string(e.Failure), Attempt: m.Attempt, Requeued: true}})
	a.dispatch()
}

// countTurn adds what turn e used to the agent's state: its tokens, its
// share of the context window (when known) and its thread.
func (a *agent) countTurn(e protocol.TurnFinished) {
	a.st.InputTokens += e.Usage.Input
	a.st.OutputTokens += e.Usage.Output
	if e.ContextPct >= 0 {
		a.st.ContextPct = e.ContextPct
	}
	if e.ThreadID != "" {
		a.st.SetThread(e.ThreadID, e.Thread)
	}
}

// turnNet applies effect, the end of turn e, to the account's network hold.
func (a *agent) turnNet(effect netEffect, e protocol.TurnFinished) {
	switch effect {
	case netLeave:
		a.showNet(a.acct.leaveNetHold())
	case netStillProbing:
		a.showNet(netShown{})
	case netAnswered:
		a.showNet(a.acct.apiAnswered(e.MessageID))
	case netTurnEnded:
		a.showNet(a.acct.netTurnEnded(e, a.flightAt))
	}
}

// recordTurn records m's final outcome as p says, with the whole reply of
// turn e, and ends the turn (turnRecorded) once it is on disk; when it
// cannot be written yet, the agent holds it and retryRecord ends the turn.
func (a *agent) recordTurn(m inbox.Message, e protocol.TurnFinished, p turnPlan) {
	// The whole reply, however long (the worker's client joined it):
	// held once, written whole into the record and the asker's inbox.
	reply := e.Reply
	o := p.outcome
	o.Reply, o.Agent = reply, a.def.Name
	r := a.newRecord(m, o)
	r.e, r.turn, r.retryable, r.failures = e, true, p.retryable, p.verdict.failures
	a.afterTurn(m, e, reply, false)
	a.inflight = nil
	if e.Status == protocol.TurnCompleted {
		// The failure that set the last error is over (saved with the
		// outcome below).
		a.st.Completed(m.ID)
	}
	a.acct.quotaProbeEnded(m.ID, p.probeCompleted)
	a.ready = true
	if !a.record(r) {
		// Held until it can be written (retryRecord ends the turn).
		a.saveState()
		return
	}
	a.turnRecorded(r)
}

// turnRequeued ends a turn whose message m is back in the queue (or
// waits for its back-off there): the state saved, the turn announced once
// the requeue is on disk, and the next message taken.
func (a *agent) turnRequeued(m inbox.Message, e protocol.TurnFinished, p turnPlan) {
	a.saveState()
	a.ready = true
	a.setSnap(func(s *agentSnap) { s.inflight = "" })
	a.updateBacklog()
	a.turnEvent(m, e, p.requeue != "", false, false)
	a.dispatch()
}

// turnRecorded ends a turn whose outcome r is on disk: the state saved,
// the turn announced, and the next message taken.
func (a *agent) turnRecorded(r *outcomeRecord) {
	a.saveState()
	a.setSnap(func(s *agentSnap) { s.inflight = "" })
	a.updateBacklog()
	a.turnEvent(r.m, r.e, false, r.announced, r.o.Status == inbox.StatusCancelled)
	a.dispatch()
}

// turnEvent announces the end of m's turn e: requeued says whether m went
// back to the queue, alerted whether an alert event told a failure
// (message_failed, context_exhausted), cancelled whether the turn was
// interrupted to cancel m (the cancelled event tells it).
func (a *agent) turnEvent(m inbox.Message, e protocol.TurnFinished, requeued, alerted, cancelled bool) {
	a.emit(eventlog.Event{Type: eventlog.EvTurnFinished, Agent: a.def.Name, Message: e.MessageID, Detail: e.Error, Data: eventlog.TurnFinished{
		Status: string(e.Status), Failure: string(e.Failure), InputTokens: e.Usage.Input, OutputTokens: e.Usage.Output,
		DurationMS: e.Duration.Milliseconds(), ThreadID: e.ThreadID, Attempt: m.Attempt, Requeued: requeued,
		Alerted: alerted, Cancelled: cancelled}})
}

// requeueInflight puts the message in flight back in the queue: it was cut
// off.
func (a *agent) requeueInflight(why string) { a.requeueInflightFor(why, "") }

// requeueInflightFor puts the message in flight back in the queue,
// recording retry (a protocol.Retry* reason, "" when it was cut off) for
// the header of its next delivery. A probe turn put back tells nothing of
// the limit, so the account's probe may go again.
func (a *agent) requeueInflightFor(why, retry string) {
	if a.inflight == nil {
		return
	}
	if a.cancelling == a.inflight.ID {
		// Its turn was interrupted to cancel it: it does not run again.
		a.cancelInflight()
		return
	}
	id := a.inflight.ID
	a.inflight = nil
	if err := a.box.RequeueFor(id, retry); err != nil {
		a.warn("requeue "+id, err)
	}
	a.emit(eventlog.Event{Type: eventlog.EvRequeued, Agent: a.def.Name, Message: id, Detail: why})
	a.setSnap(func(s *agentSnap) { s.inflight = "" })
	a.acct.quotaProbeEnded(id, false)
}

// canProbe reports whether the agent could send a probe turn now or once
// its retry back-off ends: it is not failed, stopped or parked, its
// account's usage limit lets it try, and it has a message in flight or
// waiting. Safe from any goroutine.
func (a *agent) canProbe() bool {
	s := a.snapshot()
	if s.state == agentFailed || s.state == agentStopped || parkedNow(s) != nil || !a.acct.mayTry() {
		return false
	}
	if s.inflight != "" {
		return true
	}
	pending, inflight, err := a.box.Count()
	return err == nil && pending+inflight > 0
}
