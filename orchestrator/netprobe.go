package orchestrator

import (
	"time"

	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/protocol"
)

// netRecheck is how often an agent held by another agent's probe looks
// again whether that probe can still be sent. A probe that goes away is
// handed on at once (the account's agents are poked); this only covers an
// agent that stopped being able to probe without a word (parked by a
// check, its messages refused).
const netRecheck = 30 * time.Second

// netWaitChanged applies a shim's NetworkWait: the agent's turn waits for
// the network (its account is held: of its agents only the probe starts a
// turn), or the API answered again (the hold ends and held work goes on by
// itself).
func (a *agent) netWaitChanged(e protocol.NetworkWait) {
	if e.Waiting {
		a.setSnap(func(s *agentSnap) { s.netSince, s.netMessage = e.Since, e.Message })
		a.log.Warn("Codex waits for the network", "message", e.MessageID, "since", e.Since, "notice", e.Message)
		if a.d.net.Wait(a.account, a.def.Name, e.Since, e.Message) {
			// One alert per hold, not per agent, notice or failed message.
			a.d.events.Append(eventlog.Event{Type: eventlog.EvNetworkWaiting, Agent: a.def.Name, Message: e.MessageID, Detail: e.Message,
				Data: eventlog.Network{Account: a.account, Since: e.Since}})
		}
		return
	}
	a.apiAnswered(e.MessageID)
}

// apiAnswered ends the agent's wait and its account's network hold, if
// any: a turn of the account got an answer from the API (msgID's). The
// held agents go on.
func (a *agent) apiAnswered(msgID string) {
	a.setSnap(func(s *agentSnap) { s.netSince, s.netMessage = time.Time{}, "" })
	if since, ok := a.d.net.Restored(a.account); ok {
		a.log.Info("The API answered again", "account", a.account, "held_for", time.Since(since).Round(time.Second))
		a.d.events.Append(eventlog.Event{Type: eventlog.EvNetworkRestored, Agent: a.def.Name, Message: msgID,
			Data: eventlog.Network{Account: a.account, Since: since, HeldMS: time.Since(since).Milliseconds()}})
		a.d.pokeAll()
	}
}

// netTurnEnded applies the end of a turn that did not complete and is not
// retried after a network failure: when the API answered it (see
// turnAnswered) the account's hold ends; else the hold stays, whatever
// became of the message, and the agent stays the probe while it has
// messages to send (netAllows hands the probe on when it has none).
func (a *agent) netTurnEnded(e protocol.TurnFinished) {
	_, since, held := a.d.net.Probe(a.account)
	if held && turnAnswered(e, a.flightAt, since) {
		a.apiAnswered(e.MessageID)
		return
	}
	a.setSnap(func(s *agentSnap) { s.netSince, s.netMessage = time.Time{}, "" })
}

// turnAnswered reports whether turn e, started at started, shows that the
// API answered in a network hold that began at since: it completed, it
// hit a usage limit (only the API says that), or the model did something
// (an item) in a turn started after the hold began. A turn the shim
// stopped for the network never does: what it did came before its wait.
// It is a pure function.
func turnAnswered(e protocol.TurnFinished, started, since time.Time) bool {
	switch {
	case e.Failure == protocol.FailNetwork:
		return false
	case e.Status == protocol.TurnCompleted, e.Failure == protocol.FailQuota:
		return true
	}
	return e.Items > 0 && !started.Before(since)
}

// leaveNetHold takes the agent out of its account's network hold: its shim
// went away or its codex could not start, so it probes no more. The probe
// passes to whichever of the account's agents has a message to send (they
// are poked); the hold stays until the API answers one of them.
func (a *agent) leaveNetHold() {
	a.setSnap(func(s *agentSnap) { s.netSince, s.netMessage = time.Time{}, "" })
	if a.d.net.HandOver(a.account, a.def.Name, "") {
		a.log.Info("Network hold: the probe passes to another agent of the account", "account", a.account)
		a.pokeAccount()
	}
}

// netStep is the agent's step under its account's network hold
// (dispatch.NetGo when there is none), the agent that probes, and whether
// this one could (canProbe). Of a held account's agents only the probe
// may start a turn; the agent takes the probe over when nobody else can
// send one (takeNetProbe), and gives it up when it has nothing to send
// (netWait). Only run's goroutine calls it (dispatch).
func (a *agent) netStep() (step dispatch.NetStep, prober string, mine bool) {
	prober, _, held := a.d.net.Probe(a.account)
	if !held {
		return dispatch.NetGo, prober, false
	}
	mine, theirs := a.canProbe(), false
	if b := a.d.byName[prober]; b != nil && b != a {
		theirs = b.canProbe()
	}
	return dispatch.DecideNetStep(held, a.def.Name, prober, mine, theirs), prober, mine
}

// takeNetProbe takes the probe of the account's network hold over from
// prober, who cannot send one (dispatch.NetTake): granted when the agent
// probes now, refused when another agent took it first or the API
// answered meanwhile (the agent looks again). Only run's goroutine calls
// it.
func (a *agent) takeNetProbe(prober string) tried {
	if a.d.net.HandOver(a.account, prober, a.def.Name) {
		a.log.Info("Network hold: this agent probes now", "account", a.account, "previous_probe", prober)
		return granted
	}
	a.poke()
	return refused
}

// netWait acts on a network hold that lets the agent start no turn, its
// step: the probe passes on when the agent has nothing to send with it
// (dispatch.NetRelease); an agent that could probe looks again after a
// while when another probes (dispatch.NetWait). Only run's goroutine calls
// it.
func (a *agent) netWait(step dispatch.NetStep, mine bool) {
	switch step {
	case dispatch.NetRelease:
		if a.d.net.HandOver(a.account, a.def.Name, "") {
			a.log.Info("Network hold: nothing to probe with, the probe passes on", "account", a.account)
			a.pokeAccount()
		}
	case dispatch.NetWait:
		if mine {
			a.retryIn(netRecheck)
		}
	}
}

// canProbe reports whether the agent could send a probe turn now or once
// its retry back-off ends: it is not failed, stopped or parked, its
// account's usage limit lets it try, and it has a message in flight or
// waiting. Safe from any goroutine.
func (a *agent) canProbe() bool {
	s := a.snapshot()
	if s.state == agentFailed || s.state == agentStopped || a.parkedNow(s) != nil || !a.d.quota.MayTry(a.def.Name) {
		return false
	}
	if s.inflight != "" {
		return true
	}
	pending, inflight, err := a.box.Count()
	return err == nil && pending+inflight > 0
}

// pokeAccount pokes the other agents of the agent's account.
func (a *agent) pokeAccount() {
	for _, b := range a.d.agents {
		if b != a && b.snapshot().account == a.account {
			b.poke()
		}
	}
}
