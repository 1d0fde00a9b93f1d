package orchestrator

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

// netRecheck is how often an agent held by another agent's probe looks
// again whether that probe can still be sent. A probe that goes away is
// handed on at once (the account's agents are poked); this only covers an
// agent that stopped being able to probe without a word (parked by a
// check, its messages refused).
const netRecheck = 30 * time.Second

// accountRoom is an agent's room for its account: the account it runs on,
// a switch to another under way, and the holds of the account it takes
// part in — a usage limit's pause and probe (dispatch.QuotaBook), a wait
// for the network and its probe (dispatch.NetHolds). It decides with the
// books and tells the crew (events, pokes of the account's other agents);
// what the agent itself must do (show a wait, look at its inbox again) it
// returns. The agent's run goroutine owns it; its env is safe from any
// goroutine.
type accountRoom struct {
	agent string
	log   hclog.Logger // the agent's
	env   accountEnv
	// account is the account key (dispatch.AgentHome: the CODEX_HOME,
	// host-qualified on another host), the key of its network hold;
	// agentSnap.account mirrors it.
	account string
	// switching: the worker is being stopped to start again on another
	// account (agent.beginAccountSwitch).
	switching bool
}

// accountEnv is what an account room reaches: the books it decides with,
// the crew it tells, the event log and the daemon's log.
type accountEnv struct {
	quota *dispatch.QuotaBook
	net   *dispatch.NetHolds
	crew  crew
	emit  func(eventlog.Event)
	log   hclog.Logger
}

// crew is the agents of the team as one agent's rooms reach them (the
// daemon implements it): pokes that never block, and what another agent
// could do. Safe from any goroutine.
type crew interface {
	// pokeNames pokes the named agents but skip.
	pokeNames(names []string, skip string)
	// pokeAll pokes every agent.
	pokeAll()
	// pokeAccount pokes the agents on account but skip.
	pokeAccount(account, skip string)
	// canProbe reports whether agent could send a probe turn now
	// (agent.canProbe); false for no such agent.
	canProbe(agent string) bool
	// kickRoute has the router look at the outboxes again.
	kickRoute()
	// switched records the quota book's moves (Daemon.switched).
	switched(moves []dispatch.Move, why string, resetBy time.Time)
}

// netShown is what status shows of the agent's wait for the network:
// the zero value when it does not wait.
type netShown struct {
	since   time.Time
	message string
}

// follow moves the room to the account the book places the agent on, if
// any: that account, and whether the book places it.
func (r *accountRoom) follow() (string, bool) {
	home, ok := r.env.quota.HomeOf(r.agent)
	if ok {
		r.account = home
	}
	return home, ok
}

// moveTo is the account the book places the agent on when it is not the
// one it runs on ("" when it is, or the book places it nowhere).
func (r *accountRoom) moveTo() string {
	if home, ok := r.env.quota.HomeOf(r.agent); ok && home != r.account {
		return home
	}
	return ""
}

// placed reports whether the book places the agent (its role lists
// accounts): its shim then runs on r.account, not the role's first.
func (r *accountRoom) placed() bool {
	_, ok := r.env.quota.HomeOf(r.agent)
	return ok
}

// mayTry reports whether the agent's account lets it try a turn now
// (dispatch.QuotaBook.MayTry).
func (r *accountRoom) mayTry() bool { return r.env.quota.MayTry(r.agent) }

// admit asks the book to let message id start a turn on the agent's
// account: ok when it may, probe when it goes as the account's probe
// (dispatch.QuotaBook.Admit).
func (r *accountRoom) admit(id string) (ok, probe bool) { return r.env.quota.Admit(r.agent, id) }

// name is the name (or CODEX_HOME) of the account the agent runs on.
func (r *accountRoom) name() string {
	if n := r.env.quota.NameOf(r.agent); n != "" {
		return n
	}
	return r.account
}

// netWaitChanged applies a shim's NetworkWait: the agent's turn waits for
// the network (its account is held: of its agents only the probe starts a
// turn), or the API answered again (the hold ends and held work goes on by
// itself). It returns what status shows.
func (r *accountRoom) netWaitChanged(e protocol.NetworkWait) netShown {
	if !e.Waiting {
		return r.apiAnswered(e.MessageID)
	}
	r.log.Warn("Codex waits for the network", "message", e.MessageID, "since", e.Since, "notice", e.Message)
	if r.env.net.Wait(r.account, r.agent, e.Since, e.Message) {
		// One alert per hold, not per agent, notice or failed message.
		r.env.emit(eventlog.Event{Type: eventlog.EvNetworkWaiting, Agent: r.agent, Message: e.MessageID, Detail: e.Message,
			Data: eventlog.Network{Account: r.account, Since: e.Since}})
	}
	return netShown{since: e.Since, message: e.Message}
}

// apiAnswered ends the agent's wait and its account's network hold, if
// any: a turn of the account got an answer from the API (msgID's). The
// held agents go on. It returns what status shows: no wait.
func (r *accountRoom) apiAnswered(msgID string) netShown {
	if since, ok := r.env.net.Restored(r.account); ok {
		r.log.Info("The API answered again", "account", r.account, "held_for", time.Since(since).Round(time.Second))
		r.env.emit(eventlog.Event{Type: eventlog.EvNetworkRestored, Agent: r.agent, Message: msgID,
			Data: eventlog.Network{Account: r.account, Since: since, HeldMS: time.Since(since).Milliseconds()}})
		r.env.crew.pokeAll()
	}
	return netShown{}
}

// netTurnEnded applies the end of a turn, started at started, that did
// not complete and is not retried after a network failure: when the API
// answered it (turnAnswered) the account's hold ends; else the hold stays,
// whatever became of the message, and the agent stays the probe while it
// has messages to send (netWait hands the probe on when it has none). It
// returns what status shows: no wait.
func (r *accountRoom) netTurnEnded(e protocol.TurnFinished, started time.Time) netShown {
	_, since, held := r.env.net.Probe(r.account)
	if held && turnAnswered(e, started, since) {
		return r.apiAnswered(e.MessageID)
	}
	return netShown{}
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
// are poked); the hold stays until the API answers one of them. It returns
// what status shows: no wait.
func (r *accountRoom) leaveNetHold() netShown {
	if r.env.net.HandOver(r.account, r.agent, "") {
		r.log.Info("Network hold: the probe passes to another agent of the account", "account", r.account)
		r.env.crew.pokeAccount(r.account, r.agent)
	}
	return netShown{}
}

// netStep is the agent's step under its account's network hold
// (dispatch.NetGo when there is none), the agent that probes, and whether
// this one could (mine, asked only under a hold). Of a held account's
// agents only the probe may start a turn; the agent takes the probe over
// when nobody else can send one (takeNetProbe), and gives it up when it
// has nothing to send (netWait).
func (r *accountRoom) netStep(mine func() bool) (step dispatch.NetStep, prober string, could bool) {
	prober, _, held := r.env.net.Probe(r.account)
	if !held {
		return dispatch.NetGo, prober, false
	}
	could, theirs := mine(), false
	if prober != r.agent {
		theirs = r.env.crew.canProbe(prober)
	}
	return dispatch.DecideNetStep(held, r.agent, prober, could, theirs), prober, could
}

// takeNetProbe takes the probe of the account's network hold over from
// prober, who cannot send one (dispatch.NetTake): granted when the agent
// probes now, refused when another agent took it first or the API
// answered meanwhile (the agent must look again).
func (r *accountRoom) takeNetProbe(prober string) tried {
	if r.env.net.HandOver(r.account, prober, r.agent) {
		r.log.Info("Network hold: this agent probes now", "account", r.account, "previous_probe", prober)
		return granted
	}
	return refused
}

// netWait acts on a network hold that lets the agent start no turn, its
// step: the probe passes on when the agent has nothing to send with it
// (dispatch.NetRelease). It reports whether the agent must look again
// after netRecheck: it could probe (mine) while another probes
// (dispatch.NetWait).
func (r *accountRoom) netWait(step dispatch.NetStep, mine bool) bool {
	switch step {
	case dispatch.NetRelease:
		if r.env.net.HandOver(r.account, r.agent, "") {
			r.log.Info("Network hold: nothing to probe with, the probe passes on", "account", r.account)
			r.env.crew.pokeAccount(r.account, r.agent)
		}
	case dispatch.NetWait:
		return mine
	}
	return false
}

// quotaHit handles a usage limit that the agent's message id hit: the
// first for an open account pauses all its agents, with one alert; the
// account's probe backs off; any other is held quietly.
func (r *accountRoom) quotaHit(id, reason string, resetBy time.Time) {
	h, err := r.env.quota.Hit(r.agent, r.account, id, reason, resetBy, time.Now())
	if err != nil {
		r.env.log.Error("Saving the quota state failed", "error", err)
		r.env.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: r.agent, Detail: "quota state not saved: " + err.Error()})
	}
	switch {
	case h.Alert:
		r.env.log.Warn("Usage limit: account paused", "account", h.Pause.Account, "agents", h.Agents, "probe_at", h.Pause.ProbeAt)
		// Switched: every agent went on on another account, the switch is
		// the alert.
		data := eventlog.QuotaBlocked{Account: h.Pause.Account, Agents: h.Agents, ResumeAt: h.Pause.ProbeAt, RetryAt: resetBy.UTC(),
			Switched: len(h.Agents) == 0 && len(h.Moves) > 0}
		r.env.emit(eventlog.Event{Type: eventlog.EvQuotaBlocked, Agent: r.agent, Message: id, Detail: reason, Data: data})
	case h.ProbeFailed:
		r.env.log.Info("Probe hit the usage limit again", "account", h.Pause.Account, "probe_at", h.Pause.ProbeAt, "failed_probes", h.Pause.Probes)
		r.env.emit(eventlog.Event{Type: eventlog.EvQuotaProbe, Agent: r.agent, Message: id,
			Detail: fmt.Sprintf("the limit holds: next probe at %s", h.Pause.ProbeAt.Format(time.RFC3339)),
			Data:   eventlog.QuotaProbe{Account: h.Pause.Account, Result: eventlog.ProbeLimit, ResumeAt: h.Pause.ProbeAt, FailedProbes: h.Pause.Probes}})
	default:
		r.env.log.Debug("Usage limit while the account is paused", "agent", r.agent, "message", id)
	}
	r.env.crew.switched(h.Moves, "limit", resetBy)
}

// quotaProbeEnded tells the book how the agent's message id ended; when
// it was the account's probe, a completed probe releases the account's
// agents and anything else (but a limit) lets another probe go.
func (r *accountRoom) quotaProbeEnded(id string, completed bool) {
	wake, resumed, moves, err := r.env.quota.ProbeEnded(r.agent, id, completed)
	if err != nil {
		r.env.log.Error("Saving the quota state failed", "error", err)
	}
	r.env.crew.switched(moves, "return", time.Time{})
	if resumed {
		r.env.log.Info("Probe completed: account resumed", "agents", wake)
		r.env.emit(eventlog.Event{Type: eventlog.EvQuotaResumed, Agent: r.agent, Message: id, Detail: "probe turn completed",
			Data: eventlog.QuotaResumed{Agents: wake}})
		r.env.crew.kickRoute()
	}
	r.env.crew.pokeNames(wake, r.agent)
}

// quotaRelease gives back a probe the agent did not send (id "" when it
// has nothing to send) and wakes the account's other agents to send it.
func (r *accountRoom) quotaRelease(id string) {
	r.env.crew.pokeNames(r.env.quota.Release(r.agent, id), r.agent)
}

// rateLimits records a rate-limit snapshot the agent's codex reported for
// the account it runs on; the first crossing of quota.warn_pct raises one
// quota_warning alert.
func (r *accountRoom) rateLimits(e protocol.RateLimits) {
	windows := make([]project.RateLimitWindow, 0, len(e.Windows))
	for _, w := range e.Windows {
		windows = append(windows, project.RateLimitWindow{Name: w.Name, UsedPct: w.UsedPct, WindowMinutes: w.WindowMinutes, ResetsAt: w.ResetsAt.UTC()})
	}
	seen := e.SeenAt
	if seen.IsZero() {
		seen = time.Now()
	}
	w, err := r.env.quota.Usage(r.agent, r.account, windows, seen)
	if err != nil {
		r.env.log.Error("Saving the quota state failed", "error", err)
	}
	if w == nil {
		return
	}
	name := orHome(w.Name, w.Account)
	detail := fmt.Sprintf("account %s has used %.0f%% of its %s rate-limit window", name, w.Window.UsedPct, windowLabel(w.Window))
	if !w.Window.ResetsAt.IsZero() {
		detail += ", which resets at " + w.Window.ResetsAt.Local().Format("2006-01-02 15:04 MST")
	}
	data := eventlog.QuotaWarning{Account: name, Window: w.Window.Name, UsedPct: w.Window.UsedPct, WarnPct: w.Pct, Agents: w.Agents, ResetsAt: w.Window.ResetsAt}
	r.env.log.Warn("Account near its rate limit", "account", name, "used_pct", w.Window.UsedPct)
	r.env.emit(eventlog.Event{Type: eventlog.EvQuotaWarning, Agent: r.agent, Detail: detail, Data: data})
}
