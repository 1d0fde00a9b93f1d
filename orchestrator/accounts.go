package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
)

// Account rotation: an agent whose role lists several accounts runs on the
// one the quota book places it on (dispatch.QuotaBook.HomeOf). The book
// moves agents when an account hits its usage limit or opens again; each
// agent follows at its next idle moment: its shim is stopped and started
// again with the new CODEX_HOME, and the thread's rollout is carried there
// first, so the conversation goes on (followAccount).

// beginAccountSwitch begins the move of an idle agent whose shim runs on
// another account than home, the one the book places it on (dispatch
// decides it: gateFacts.moveTo): the shim is shut down, and shimExited
// starts it again at once, without counting a crash; nothing is
// dispatched meanwhile. Only run's goroutine calls it.
func (a *agent) beginAccountSwitch(home string) {
	a.acct.switching = true
	a.log.Info("Moving to another account", "from", a.acct.account, "to", home)
	a.p.BeginStop(a.cfg.Timeouts.Shutdown, "account switch")
}

// followAccount, before the agent's shim starts: the account the book
// places the agent on becomes the shim's and its health's (followHealth),
// and a thread whose rollout lies in another Codex home is carried there
// (codex.CarryThread). A thread that cannot be carried is handed off: the
// next message opens a fresh thread on the new account with the handoff
// brief, as after a context overflow. Only run's goroutine calls it.
func (a *agent) followAccount() {
	if home, ok := a.acct.follow(); ok {
		a.setSnap(func(s *agentSnap) { s.account = home })
		a.followHealth(home)
	}
	prev := a.st.CodexHome
	if prev == a.acct.account {
		return
	}
	a.st.CodexHome = a.acct.account
	if prev == "" {
		// The first start: nothing to carry; recorded with the state's
		// next save.
		return
	}
	if a.st.ThreadID != "" && a.where().ThreadsPortable() {
		// (An agent on another host keeps its rollouts there, and does
		// not rotate: its home here names nothing to carry.)
		if _, err := codex.CarryThread(prev, a.acct.account, a.st.ThreadID); err != nil {
			a.log.Warn("The thread could not move to the new account: handing off", "thread", a.st.ThreadID, "error", err)
			a.handOff(fmt.Sprintf("the agent moved to account %s, where its thread could not be carried (%v)", a.acct.name(), err), "")
		} else {
			a.log.Info("Thread carried to the new account", "thread", a.st.ThreadID, "from", prev, "to", a.acct.account)
		}
	}
	a.saveState()
}

// followHealth attaches the agent to the health of how it runs Codex on
// account home: it leaves its old health and joins that one (made, and
// checked first, when no agent ran there yet), so that what parks it, and
// what is watched for a fix, is the account it runs on. Its parking follows
// at once (syncParked). Only run's goroutine calls it.
func (a *agent) followHealth(home string) {
	h := a.crew.healthFor(a.def, a.host, home)
	if h == a.health {
		return
	}
	a.health.leave(a)
	h.join(a)
	a.health = h
	a.setSnap(func(s *agentSnap) { s.health = h })
	a.log.Debug("Health follows the account", "home", home)
	a.syncParked()
}

// switchGroup is the agents of one move from one account to another.
type switchGroup struct {
	from, to, fromName, toName string
	agents                     []string
}

// groupMoves groups moves by their accounts, in the order first seen. It
// is a pure function.
func groupMoves(moves []dispatch.Move) []switchGroup {
	var out []switchGroup
	for _, m := range moves {
		i := slices.IndexFunc(out, func(g switchGroup) bool { return g.from == m.From && g.to == m.To })
		if i < 0 {
			out = append(out, switchGroup{from: m.From, to: m.To, fromName: m.FromName, toName: m.ToName})
			i = len(out) - 1
		}
		out[i].agents = append(out[i].agents, m.Agent)
	}
	return out
}

// orHome is an account's name, or its CODEX_HOME when it has none.
func orHome(name, home string) string {
	if name != "" {
		return name
	}
	return home
}

// switched records the book's moves: one account_switched event (an
// alert) per pair of accounts, and a poke of every agent moved, which
// follows at its next idle moment. why is "limit" (the account they ran on
// hit its usage limit) or "return" (they go back to an account they
// prefer).
func (d *Daemon) switched(moves []dispatch.Move, why string, resetBy time.Time) {
	for _, g := range groupMoves(moves) {
		from, to := orHome(g.fromName, g.from), orHome(g.toName, g.to)
		who := strings.Join(g.agents, ", ")
		verb := func(one, many string) string {
			if len(g.agents) == 1 {
				return one
			}
			return many
		}
		detail := fmt.Sprintf("account %s hit its usage limit: %s %s on account %s, conversations kept", from, who, verb("continues", "continue"), to)
		if why == "return" {
			detail = fmt.Sprintf("account %s may be used again: %s %s back to it from account %s", to, who, verb("goes", "go"), from)
		}
		data := eventlog.AccountSwitched{From: from, To: to, Agents: g.agents, Reason: why, RetryAt: resetBy.UTC()}
		d.log.Warn("Agents switch accounts", "from", from, "to", to, "agents", g.agents, "reason", why)
		d.events.Append(eventlog.Event{Type: eventlog.EvAccountSwitched, Detail: detail, Data: data})
		d.pokeNames(g.agents, "")
	}
}

// windowLabel names a rate-limit window by its length ("5h", "7d"), or
// by its name when the length is unknown. It is a pure function.
func windowLabel(w project.RateLimitWindow) string {
	m := w.WindowMinutes
	switch {
	case m <= 0:
		return w.Name
	case m%(24*60) == 0:
		return fmt.Sprintf("%dd", m/(24*60))
	case m%60 == 0:
		return fmt.Sprintf("%dh", m/60)
	}
	return fmt.Sprintf("%dm", m)
}

// checkSpareAccounts checks, once at start, the accounts agents may move
// to but do not start on: one that cannot run (not logged in, say) is
// named in a warning with its fix, so it is fixed before a usage limit
// sends agents there. Agents are not parked for it; run's goroutine calls
// it after checkAll.
func (d *Daemon) checkSpareAccounts(ctx context.Context) {
	checked := map[string]bool{}
	for _, a := range d.agents {
		for _, acc := range a.def.Accounts {
			// An account an agent starts on has its health, checked already.
			t := preflight.TargetFor(a.def, acc.CodexHome)
			if _, key := healthTarget(a.def, a.where(), acc.CodexHome); d.healths.has(key) || checked[t.Key()] {
				continue
			}
			checked[t.Key()] = true
			c := &preflight.Checker{Reaper: d.reaper, Timeout: d.opts.CheckTimeout, BaseEnv: d.opts.ShimEnv,
				FinalEnv: []string{reap.MarkEnv + "=" + d.layout.Dir}}
			if p := c.Check(ctx, t); p != nil && ctx.Err() == nil {
				detail := fmt.Sprintf("account %s (%s), which %s may move to on a usage limit, cannot run codex: %s", acc.Name, acc.CodexHome, a.def.Role, p.String())
				d.log.Warn("An account agents may move to cannot run codex", "account", acc.Name, "problem", p.String())
				d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Detail: detail, Data: eventlog.Warning{Account: acc.Name, Kind: string(p.Kind)}})
			}
		}
	}
}
