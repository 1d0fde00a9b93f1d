package orchestrator

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

// serveCancel withdraws the messages of request c (`batty cancel`): one
// result per id, in order. A message waiting in an agent's box is
// cancelled by the agent's goroutine, which owns its inbox's flow (asked,
// see askAgents: the answer comes when it gets to it, pending while it is
// in a git or ssh step); one in flight only with interrupt, and then its outcome
// is recorded when its turn ends. A message waiting in a role's queue is
// cancelled here, on the daemon's goroutine, which routes that queue. Run's
// goroutine only.
func (d *Daemon) serveCancel(c control.Conn) {
	ids, interrupt := c.Req.IDs, c.Req.Interrupt
	out := make([]control.CancelResult, len(ids))
	var asks []agentAsk
	for i, id := range ids {
		res, a := d.cancelOne(id)
		if a == nil {
			out[i] = res
			continue
		}
		asks = append(asks, agentAsk{a: a, c: agentCtl{op: opCancel, id: id, interrupt: interrupt},
			got: func(ans agentAnswer) { out[i] = ans.cancel }})
	}
	d.askAgents(c, asks, func() control.Response {
		for i := range out {
			if out[i].Result == "" {
				out[i] = control.CancelResult{ID: ids[i], Result: control.CancelRefused, Detail: "no answer"}
			}
		}
		return control.Response{OK: true, Cancels: out}
	})
}

// cancelOne cancels message id when a role's queue holds it and returns
// the result; when an agent's box holds it, it returns that agent, whose
// goroutine cancels it.
func (d *Daemon) cancelOne(id string) (control.CancelResult, *agent) {
	for _, a := range d.agents {
		_, _, err := a.box.Get(id)
		if errors.Is(err, inbox.ErrNotFound) {
			continue
		}
		if err != nil {
			return control.CancelResult{ID: id, Box: a.def.Name, Result: control.CancelRefused, Detail: err.Error()}, nil
		}
		return control.CancelResult{}, a
	}
	for _, role := range slices.Sorted(maps.Keys(d.roles)) {
		box := d.roles[role]
		m, where, err := box.Get(id)
		if errors.Is(err, inbox.ErrNotFound) {
			continue
		}
		res := control.CancelResult{ID: id, Box: "@" + role, Result: control.CancelDone}
		switch {
		case err != nil:
			res.Result, res.Detail = control.CancelRefused, err.Error()
		case where == inbox.StateDone:
			res = control.FinishedRefusal(id, res.Box, m.Outcome.Status)
		default:
			if err := d.cancelQueued(role, box, m); err != nil {
				res.Result, res.Detail = control.CancelRefused, err.Error()
			}
		}
		return res, nil
	}
	return control.CancelResult{ID: id, Result: control.CancelNotFound, Detail: "no queue of the team holds it"}, nil
}

// cancelQueued records message m of role's queue as cancelled, then
// sends the note its sender is owed (answerFor) from the role.
func (d *Daemon) cancelQueued(role string, box *inbox.Box, m inbox.Message) error {
	o := inbox.CancelledOutcome(role)
	if _, err := box.Cancel(m.ID, o); err != nil {
		return fmt.Errorf("not cancelled: %w", err)
	}
	d.events.Append(eventlog.Event{Type: eventlog.EvCancelled, Message: m.ID, Detail: o.Error, Data: eventlog.Cancelled{From: m.From, Queue: "@" + role}})
	reply, owed := answerFor(m, o, d.isAgent)
	if !owed {
		return nil
	}
	to, err := d.replyBox(reply.To)
	if err == nil {
		_, _, err = to.DeliverReply(reply)
	}
	if err != nil {
		// The message is cancelled; only its note is lost.
		d.log.Warn("The note of a cancelled message was not delivered", "message", m.ID, "to", reply.To, "error", err)
	}
	return nil
}

// cancel withdraws message id of the agent's box: a pending one is
// recorded as cancelled now (with the note its sender is owed); the one
// in flight, only with interrupt, has its turn interrupted and is recorded
// as cancelled when the turn ends, whatever the end (see turnFinished and
// requeueInflightFor). Only run's goroutine calls it.
func (a *agent) cancel(id string, interrupt bool) control.CancelResult {
	res := control.CancelResult{ID: id, Box: a.def.Name, Result: control.CancelDone}
	refuse := func(why string) control.CancelResult {
		res.Result, res.Detail = control.CancelRefused, why
		return res
	}
	if a.inFlight(id) {
		switch {
		case a.cancelling == id:
			res.Result, res.Detail = control.CancelInterrupting, "its turn is being interrupted already"
			return res
		case !interrupt:
			return refuse(fmt.Sprintf("in flight on %s; `batty cancel --interrupt` ends its turn", a.def.Name))
		case a.p == nil:
			return refuse(a.def.Name + "'s worker is restarting; try again")
		}
		if err := a.p.Send(protocol.Interrupt{Reason: inbox.CancelledByUser}); err != nil {
			return refuse("interrupt the turn: " + err.Error())
		}
		a.cancelling = id
		a.log.Info("Interrupting a turn to cancel its message", "message", id)
		res.Result, res.Detail = control.CancelInterrupting, "recorded as cancelled when the turn ends"
		return res
	}
	if a.pending != nil {
		if a.pending.m.ID == id {
			return control.FinishedRefusal(id, a.def.Name, a.pending.o.Status)
		}
		// record holds one outcome at a time.
		return refuse(fmt.Sprintf("%s's last outcome is not recorded yet (see `batty status`); try again once it is", a.def.Name))
	}
	m, err := a.box.Claim(id)
	switch {
	case errors.Is(err, inbox.ErrAlreadyDone):
		status := "?"
		if done, _, err := a.box.Get(id); err == nil && done.Outcome != nil {
			status = done.Outcome.Status
		}
		return control.FinishedRefusal(id, a.def.Name, status)
	case errors.Is(err, inbox.ErrNotFound):
		return control.CancelResult{ID: id, Result: control.CancelNotFound, Detail: "no queue of the team holds it"}
	case err != nil:
		return refuse(err.Error())
	}
	if !a.record(a.newRecord(m, inbox.CancelledOutcome(a.def.Name))) {
		res.Detail = "recorded once the disk allows (see `batty status`)"
	}
	a.updateBacklog()
	return res
}

// cancelInflight records the message in flight, whose turn was
// interrupted to cancel it, as cancelled: its turn ended without a turn
// end of its own (the shim exited, or refused it). Only run's goroutine
// calls it.
func (a *agent) cancelInflight() {
	m := *a.inflight
	a.inflight, a.cancelling = nil, ""
	a.setSnap(func(s *agentSnap) { s.inflight = "" })
	a.acct.quotaProbeEnded(m.ID, false)
	a.record(a.newRecord(m, inbox.CancelledOutcome(a.def.Name)))
}

// cancelledTurn is the plan of a turn interrupted to cancel its message:
// whatever its end e, the message is recorded as cancelled (with what the
// turn used), never put back; a usage limit it hit still counts. It is a
// pure function.
func cancelledTurn(p turnPlan, e protocol.TurnFinished) turnPlan {
	o := inbox.CancelledOutcome("")
	o.ThreadID, o.InputTokens, o.OutputTokens = e.ThreadID, e.Usage.Input, e.Usage.Output
	net := p.net
	if p.end == turnUnstarted {
		net = netLeave
	}
	return turnPlan{end: turnRecord, net: net, quotaHit: p.quotaHit, outcome: o}
}
