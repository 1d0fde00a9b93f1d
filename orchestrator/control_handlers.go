package orchestrator

import (
	"fmt"
	"os"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

// control answers every request but stop.
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
	case control.OpResume:
		if req.Agent != "" {
			// One agent: tried again at once if failed, checked again if
			// parked; the dispatch gate is left as it is.
			a, ok := d.byName[req.Agent]
			if !ok {
				return control.Response{Error: fmt.Sprintf("no agent %q in team %q; `batty status` lists the agents", req.Agent, d.cfg.Name)}
			}
			resp := control.Response{OK: true}
			if d.retryFailed(a) {
				resp.Retried = []string{a.def.Name}
			}
			if h := a.snapshot().health; h != nil && h.problem() != nil {
				h.recheck()
				resp.Rechecked = []string{a.def.Name}
			}
			return resp
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
		var retried []string
		for _, a := range d.agents {
			if d.retryFailed(a) {
				retried = append(retried, a.def.Name)
			}
		}
		resp := control.Response{OK: true, Changed: changed, Ended: ended, Rechecked: d.recheckAll(), Retried: retried}
		if d.sched != nil {
			resp.Schedules = d.sched.Resume()
		}
		return resp
	case control.OpCancel:
		return control.Response{OK: true, Cancels: d.cancel(req.IDs, req.Interrupt)}
	case control.OpApprove, control.OpReject:
		return d.reviewControl(req)
	case control.OpReset:
		a, ok := d.byName[req.Agent]
		if !ok {
			return control.Response{Error: fmt.Sprintf("no agent %q in team %q", req.Agent, d.cfg.Name)}
		}
		c := agentCtl{op: opReset, reason: req.Reason, done: make(chan error, 1)}
		select {
		case a.ctl <- c:
		case <-a.done:
			return control.Response{Error: "agent " + req.Agent + " is stopped"}
		}
		if err := <-c.done; err != nil {
			return control.Response{Error: err.Error()}
		}
		return control.Response{OK: true}
	}
	return control.Response{Error: fmt.Sprintf("unknown operation %q", req.Op)}
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

// retryFailed has a failed agent try again now, ending its cool-down. It
// reports whether the agent was failed; it blocks until the agent's
// goroutine has answered.
func (d *Daemon) retryFailed(a *agent) bool {
	c := agentCtl{op: opRetry, done: make(chan error, 1)}
	select {
	case a.ctl <- c:
	case <-a.done:
		return false
	}
	return <-c.done == nil
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
		as.Workspace = workspaceStatus(d.base, s.workspace)
		if s.recording != nil {
			rs := *s.recording
			as.Recording = &rs
			as.LastError = fmt.Sprintf("outcome of %s not recorded (%d tries since %s): %s", rs.Message, rs.Tries, rs.Since.Local().Format("15:04:05"), rs.Error)
		}
		if p := a.parkedNow(s); p != nil && s.state != agentFailed && s.state != agentStopped {
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
		if s.inflight != "" {
			id := s.inflight
			as.InFlight = &id
			as.InFlightAgeS = int64(time.Since(s.flightAt).Seconds())
		}
		st.Agents = append(st.Agents, as)
	}
	// Held messages are counted on disk: an agent's snapshot of its backlog
	// is only as fresh as its last look at its inbox.
	st.Accounts = control.AccountStatuses(views, func(n string) int {
		pending, inflight, _ := d.byName[n].box.CountOnDisk()
		return pending + inflight
	})
	control.PlaceAgents(&st)
	st.Schedules = d.scheduleStatus()
	st.TeamFileChanged = d.teamFileChanged()
	st.Landings = []control.LandingStatus{}
	if d.lander != nil {
		st.Landings = d.lander.status()
	}
	return st
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
