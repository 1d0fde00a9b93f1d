package orchestrator

import (
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/protocol"
)

// agentParked is the state status shows for an agent whose Codex cannot
// run: it takes no message until its Codex works again.
const agentParked = "parked"

// parkedPrefix starts the last error of a parked agent.
const parkedPrefix = "parked: "

// syncParked brings the agent in line with its Codex's health: it parks the
// agent (state, last error, one agent_parked alert) when its Codex cannot
// run and releases it (agent_unparked) once it can. Before the first check
// of its health it leaves the agent as it is. Run's goroutine only.
func (a *agent) syncParked() {
	p, known := a.problem()
	if !known {
		return
	}
	switch {
	case p != nil && (a.parked == nil || a.parked.String() != p.String()):
		first := a.parked == nil
		a.parked = p
		a.log.Warn("Agent parked: its messages wait until codex runs", "problem", p.String())
		a.st.SetError(parkedPrefix+p.String(), "", time.Now().UTC())
		a.saveState()
		a.setSnap(func(s *agentSnap) { s.parked = p })
		if first {
			// One alert per parking; a more precise reason found by the
			// check meanwhile shows in status and the log.
			a.emit(eventlog.Event{Type: eventlog.EvAgentParked, Agent: a.def.Name, Detail: p.String(),
				Data: eventlog.AgentParked{Kind: string(p.Kind), Fix: p.Fix}})
		}
	case p == nil && (a.parked != nil || strings.HasPrefix(a.st.LastError, parkedPrefix)):
		// Released, or parked by an earlier daemon and fine now.
		if strings.HasPrefix(a.st.LastError, parkedPrefix) {
			a.st.SetError("", "", time.Time{})
		}
		a.saveState()
		if a.parked != nil {
			a.parked = nil
			a.log.Info("Agent unparked: codex runs again")
			a.setSnap(func(s *agentSnap) { s.parked = nil })
			a.emit(eventlog.Event{Type: eventlog.EvAgentUnparked, Agent: a.def.Name})
		}
	}
}

// spawnFailed handles a turn that could not start codex at all: the message
// goes back to the queue as it was (not consumed, its attempt given back)
// and the agent's Codex is reported unusable, which parks the agent.
func (a *agent) spawnFailed(m inbox.Message, e protocol.TurnFinished) {
	a.inflight = nil
	if err := a.box.Unclaim(m.ID); err != nil {
		a.warn("unclaim "+m.ID, err)
	}
	a.emit(eventlog.Event{Type: eventlog.EvRequeued, Agent: a.def.Name, Message: m.ID, Detail: "codex could not be started: " + e.Error})
	a.setSnap(func(s *agentSnap) { s.inflight = "" })
	a.health.report(e.Error)
	// A probe that never ran tells nothing of the usage limit.
	a.acct.quotaProbeEnded(m.ID, false)
}

// problem is why the agent may take no message: its worktree could not be
// prepared, else its Codex cannot run; nil when it may. known is false
// while that depends on a check of its health not made yet. Run's
// goroutine only.
func (a *agent) problem() (p *preflight.Problem, known bool) {
	if a.wsProblem != nil {
		return a.wsProblem, true
	}
	return a.health.state()
}

// parkedStatus is what status shows of a parked agent, nil when it is not.
func parkedStatus(p *preflight.Problem) *control.ParkedStatus {
	if p == nil {
		return nil
	}
	return &control.ParkedStatus{Kind: string(p.Kind), Detail: p.Detail, Fix: p.Fix}
}

// parkedNow is why an agent whose status line is s is parked: its own
// record, else its Codex's health. Safe from any goroutine.
func parkedNow(s agentSnap) *preflight.Problem {
	if s.parked != nil {
		return s.parked
	}
	return s.health.problem()
}

// loginFix says how to give the agent's Codex, whose health is h, a
// login: its codex's login (preflight.LoginCommand, as the start's check
// says it) with the agent's CODEX_HOME, or a valid API key in codex.env.
func (r *accountRoom) loginFix(h *health) string {
	bin, _ := codex.ResolveBinary(h.target.Bin)
	login := preflight.LoginCommand(h.target.Bin, bin)
	home := h.home()
	if r.placed() {
		home = r.account // the account it was moved to
	}
	if home != "" {
		login = "CODEX_HOME=" + home + " " + login
	}
	return "run: " + login + " (or set a valid OPENAI_API_KEY in codex.env), then `batty resume`"
}
