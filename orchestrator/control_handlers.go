package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/battyhq/batty/budget"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/teamstatus"
)

// serve answers control request c, every one but stop: at once, or, when
// it asks agents (reset, cancel, resume), once each has answered (see
// askAgents). It never waits for an agent. Run's goroutine only.
func (d *Daemon) serve(c control.Conn) {
	switch c.Req.Op {
	case control.OpReset:
		d.serveReset(c)
	case control.OpCancel:
		d.serveCancel(c)
	case control.OpRestore, control.OpFork:
		d.serveSwitch(c)
	case control.OpResume:
		d.serveResume(c)
	default:
		c.Reply(d.control(c.Req))
	}
}

// control answers the requests that ask no agent.
func (d *Daemon) control(req control.Request) control.Response {
	switch req.Op {
	case control.OpPing:
		return control.Response{OK: true, PID: os.Getpid()}
	case control.OpStatus:
		st := d.status()
		return control.Response{OK: true, Status: &st, PID: os.Getpid()}
	case control.OpTrusted:
		return control.Response{OK: true, Trusted: d.trusted, PID: os.Getpid()}
	case control.OpPause:
		reason := req.Reason
		if reason == "" {
			reason = "paused by user"
		}
		return control.Response{OK: true, Changed: d.pause(project.PauseManual, reason)}
	case control.OpApprove, control.OpReject:
		return d.reviewControl(req)
	case control.OpConsole:
		if d.opts.Console == nil {
			return control.Response{Error: "the team has no console (console: off in the team file)"}
		}
		info := *d.opts.Console
		return control.Response{OK: true, Console: &info}
	}
	return control.Response{Error: fmt.Sprintf("unknown operation %q", req.Op)}
}

// serveReset asks the agent to reset its thread (see agent.reset).
func (d *Daemon) serveReset(c control.Conn) {
	req := c.Req
	a, ok := d.byName[req.Agent]
	if !ok {
		c.Reply(control.Response{Error: fmt.Sprintf("no agent %q in team %q", req.Agent, d.cfg.Name)})
		return
	}
	var got agentAnswer
	d.askAgents(c, []agentAsk{{a: a, c: agentCtl{op: opReset, reason: req.Reason}, got: func(ans agentAnswer) { got = ans }}},
		func() control.Response { return resetResponse(req.Agent, got) })
}

// resetResponse answers a reset of agent by its answer ans. It is a pure
// function.
func resetResponse(agent string, ans agentAnswer) control.Response {
	switch {
	case errors.Is(ans.err, errAgentStopped):
		return control.Response{Error: "agent " + agent + " is stopped"}
	case ans.err != nil:
		return control.Response{Error: ans.err.Error()}
	case ans.pending:
		return control.Response{OK: true, Pending: []string{agent}}
	}
	return control.Response{OK: true}
}

// serveResume ends pauses and failures (`batty resume`): the team's, or
// one agent's.
func (d *Daemon) serveResume(c control.Conn) {
	req := c.Req
	if req.Agent != "" {
		// One agent: tried again at once if failed, checked again if
		// parked; the dispatch gate is left as it is.
		a, ok := d.byName[req.Agent]
		if !ok {
			c.Reply(control.Response{Error: fmt.Sprintf("no agent %q in team %q; `batty status` lists the agents", req.Agent, d.cfg.Name)})
			return
		}
		// A budget's hold of it ends for the rest of the window.
		resp := control.Response{OK: true, Ended: d.resumeBudgets(a)}
		resp.Changed = len(resp.Ended) > 0
		if h := a.snapshot().health; h != nil && h.problem() != nil {
			h.recheck()
			resp.Rechecked = []string{a.def.Name}
		}
		var got agentAnswer
		d.askAgents(c, []agentAsk{{a: a, c: agentCtl{op: opRetry}, got: func(ans agentAnswer) { got = ans }}}, func() control.Response {
			resp.Retried, resp.Pending = retryWords([]*agent{a}, []agentAnswer{got})
			return resp
		})
		return
	}
	gs := d.gate.State()
	var ended []string
	changed := d.resume("resumed by user")
	if changed {
		ended = append(ended, dispatchPauseWords(gs))
	}
	for _, k := range d.resumeAccounts("resumed by user") {
		changed = true
		ended = append(ended, "usage-limit pause of account "+k)
	}
	if b := d.resumeBudgets(nil); len(b) > 0 {
		changed = true
		ended = append(ended, b...)
	}
	resp := control.Response{OK: true, Changed: changed, Ended: ended, Rechecked: d.recheckAll()}
	if d.sched != nil {
		resp.Schedules = d.sched.Resume()
	}
	answers := make([]agentAnswer, len(d.agents))
	asks := make([]agentAsk, len(d.agents))
	for i, a := range d.agents {
		asks[i] = agentAsk{a: a, c: agentCtl{op: opRetry}, got: func(ans agentAnswer) { answers[i] = ans }}
	}
	d.askAgents(c, asks, func() control.Response {
		resp.Retried, resp.Pending = retryWords(d.agents, answers)
		return resp
	})
}

// retryWords names, in the agents' order, those of agents whose answer to
// a retry says it was tried again, and those whose retry is pending. It is
// a pure function.
func retryWords(agents []*agent, answers []agentAnswer) (retried, pending []string) {
	for i, a := range agents {
		switch {
		case answers[i].pending:
			pending = append(pending, a.def.Name)
		case answers[i].err == nil:
			retried = append(retried, a.def.Name)
		}
	}
	return retried, pending
}

// agentAsk is one agent's part of a control request: what it is asked,
// and got, which takes its answer on the daemon's goroutine.
type agentAsk struct {
	a   *agent
	c   agentCtl
	got func(agentAnswer)
}

// asking is a control request waiting for its agents' answers.
type asking struct {
	conn   control.Conn
	left   int // answers still due
	finish func() control.Response
}

// pendingAsks are the control requests that wait for their agents' answers.
// Run's goroutine owns it; the agents' goroutines only put answers.
type pendingAsks struct {
	// answers are the agents' answers to control requests (see
	// askAgents), applied on Run's goroutine; asking are the requests
	// waiting for them.
	answers *mailbox[func()]
	asking  map[*asking]struct{}
}

// askAgents puts each ask's request in its agent's mailbox and answers
// conn with finish() once every agent has answered (each answer given to
// its ask's got first, on the daemon's goroutine, as it comes: see
// pendingAsks.answers). An agent that has stopped answers errAgentStopped
// at once. It never blocks. Run's goroutine only.
func (q *pendingAsks) askAgents(conn control.Conn, asks []agentAsk, finish func() control.Response) {
	w := &asking{conn: conn, finish: finish}
	q.asking[w] = struct{}{}
	for _, ask := range asks {
		c := ask.c
		got := ask.got
		c.answer = func(ans agentAnswer) {
			// On the agent's goroutine: the answer goes to the daemon's.
			q.answers.put(func() {
				got(ans)
				w.left--
				q.askAnswered(w)
			})
		}
		w.left++
		if !ask.a.ctl.put(c) {
			w.left--
			got(stoppedAnswer(c, ask.a.def.Name))
		}
	}
	q.askAnswered(w)
}

// askAnswered replies to w once no answer is due.
func (q *pendingAsks) askAnswered(w *asking) {
	if w.left > 0 {
		return
	}
	if _, waiting := q.asking[w]; !waiting {
		return
	}
	delete(q.asking, w)
	w.conn.Reply(w.finish())
}

// takeAnswers applies the agents' answers waiting in the daemon's mailbox.
// Run's goroutine only.
func (q *pendingAsks) takeAnswers() {
	for _, f := range q.answers.take() {
		f()
	}
}

// endAsking answers, as Run returns (every agent stopped), what the agents
// answered last, then every request still waiting, as refused by a
// stopping daemon.
func (q *pendingAsks) endAsking() {
	q.takeAnswers()
	for w := range q.asking {
		delete(q.asking, w)
		w.conn.Reply(control.Response{Error: "daemon is shutting down"})
	}
}

// stoppedAnswer is the answer to c of agent, stopped.
func stoppedAnswer(c agentCtl, agent string) agentAnswer {
	if c.op == opCancel {
		return agentAnswer{cancel: control.CancelResult{ID: c.id, Box: agent, Result: control.CancelRefused, Detail: "agent " + agent + " is stopped"}}
	}
	return agentAnswer{err: errAgentStopped}
}

// dispatchPauseWords names the dispatch pause gs in words for `batty
// resume`: "dispatch pause (manual: paused by user)". It is a pure
// function.
func dispatchPauseWords(gs project.DispatchState) string {
	kind := gs.Kind
	if kind == "" {
		kind = project.PauseManual
	}
	if gs.Reason == "" {
		return "dispatch pause (" + kind + ")"
	}
	return "dispatch pause (" + kind + ": " + gs.Reason + ")"
}

// status collects the documented status shape.
func (d *Daemon) status() control.Status {
	gs := d.gate.State()
	st := control.Status{
		Team:     d.cfg.Name,
		Daemon:   control.DaemonStatus{PID: os.Getpid(), UptimeS: int64(time.Since(d.started).Seconds())},
		Dispatch: control.DispatchStatus{Paused: gs.Paused, Reason: gs.Reason},
		Agents:   []control.AgentStatus{},
		Queues:   map[string]int{},
	}
	for role, box := range d.roles {
		if n, _, err := box.CountOnDisk(); err == nil {
			st.Queues[role] = n
		}
	}
	if !gs.ResumeAt.IsZero() {
		t := gs.ResumeAt
		st.Dispatch.ResumeAt = &t
	}
	st.Budgets = d.budgets.status()
	views := d.quota.Views()
	quotaHeld := map[string]bool{}
	for _, v := range views {
		if v.Pause != nil {
			for _, n := range v.Agents {
				quotaHeld[n] = true
			}
		}
	}
	for _, a := range d.agents {
		s := a.snapshot()
		as := control.AgentStatus{
			Name: a.def.Name, Role: a.def.Role, Host: a.def.Host, State: s.state, ThreadID: s.st.ThreadID, Backlog: s.backlog,
			TurnsCompleted: s.st.TurnsCompleted, InputTokens: s.st.InputTokens, OutputTokens: s.st.OutputTokens,
			ContextPct: s.st.ContextPct, LastError: s.st.LastError, ShimPID: s.shimPID, Restarts: s.restarts,
		}
		if s.saveErr != "" {
			as.LastError = s.saveErr
		}
		as.NoAnswers = s.st.NoAnswers
		as.AppServer = d.appServerStatus(a.def.Name)
		as.Workspace = workspaceStatus(d.base, s.workspace)
		as.Pending = s.pending
		if s.waiting != nil && s.inflight == "" && s.backlog > 0 {
			// Why its last look at its inbox started no turn.
			w := *s.waiting
			as.Waiting = &w
		}
		if s.recording != nil {
			rs := *s.recording
			as.Recording = &rs
			as.LastError = fmt.Sprintf("outcome of %s not recorded (%d tries since %s): %s", rs.Message, rs.Tries, rs.Since.Local().Format("15:04:05"), rs.Error)
		}
		if p := parkedNow(s); p != nil && s.state != agentFailed && s.state != agentStopped {
			// From the health itself too: status is right before the
			// agent's goroutine has caught up.
			as.State, as.Parked = agentParked, parkedStatus(p)
			as.LastError = parkedPrefix + p.String()
		} else if since, msg, held := d.net.Get(s.account); held || !s.netSince.IsZero() {
			as.Network = &control.NetworkStatus{State: "held", Account: s.account, Since: since, Message: msg}
			if !s.netSince.IsZero() {
				as.State = control.AgentWaitingForNetwork
				as.Network.State, as.Network.Since, as.Network.Message = "waiting", s.netSince, s.netMessage
			}
		}
		as.State = heldState(as.State, s.inflight != "", quotaHeld[a.def.Name])
		as.Budget = budgetHoldStatus(d.budgets.holds(a.def.Name, a.def.Role))
		as.BudgetPct = budgetPct(st.Budgets, a.def.Name, a.def.Role)
		as.State = budgetHeldState(as.State, s.inflight != "", as.Budget != nil)
		as.State, as.Slot = slotState(as.State, s.inflight != "", d.slots.Holds(a.def.Name), d.slots.Waiting(a.def.Name))
		as.State = flightState(as.State, s.inflight != "", s.ended)
		if s.inflight != "" {
			id := s.inflight
			as.InFlight = &id
			as.InFlightAgeS = int64(time.Since(s.flightAt).Seconds())
		}
		st.Agents = append(st.Agents, as)
	}
	// Held messages are counted on disk: an agent's snapshot of its backlog
	// is only as fresh as its last look at its inbox.
	st.Accounts = teamstatus.Accounts(views, func(n string) int {
		pending, inflight, _ := d.byName[n].box.CountOnDisk()
		return pending + inflight
	})
	teamstatus.Place(&st)
	st.Schedules = d.scheduleStatus()
	st.TeamFileChanged = d.teamFileChanged()
	st.Landings = []control.LandingStatus{}
	if d.lander != nil {
		st.Landings = d.lander.status()
	}
	return st
}

// budgetHoldStatus is the hold status shows of an agent held by holds:
// the one whose window ends last (when the agent goes on); nil for none.
// It is a pure function.
func budgetHoldStatus(holds []budget.Hold) *control.BudgetHoldStatus {
	var s *control.BudgetHoldStatus
	for _, h := range holds {
		if s == nil || h.Until.After(s.Until) {
			s = &control.BudgetHoldStatus{Budget: h.Budget, Used: h.Used, Tokens: h.Tokens, Until: h.Until}
		}
	}
	return s
}

// budgetHeldState is the state status shows for an agent in state held by
// a token budget or not: an idle agent a budget holds is
// control.AgentBudgetHeld; a turn in flight finishes first, and every
// other state is kept. It is a pure function.
func budgetHeldState(state string, inflight, held bool) string {
	if held && !inflight && state == string(protocol.StateIdle) {
		return control.AgentBudgetHeld
	}
	return state
}

// heldState is the state status shows for an agent in state with a turn
// in flight or not, whose account is paused by a usage limit or not: an
// idle agent its account's pause holds is control.AgentQuotaPaused; every
// other state (a probe turn in flight, parked, failed …) is kept. It is a
// pure function.
func heldState(state string, inflight, quotaPaused bool) string {
	if quotaPaused && !inflight && state == string(protocol.StateIdle) {
		return control.AgentQuotaPaused
	}
	return state
}
