package orchestrator

import "github.com/battyhq/batty/preflight"

// placement is the agent's room for where it runs: the host (nil for this
// machine) and the host of its worktree before, the account it is placed
// on and the health of that target, a switch of account under way, and
// what parks it. Run's goroutine owns it; snap mirrors what status shows.
type placement struct {
	// health is the health of the target the agent runs on: of the
	// account it is placed on (followHealth). snap.health mirrors it for
	// other goroutines.
	health *health
	host   *remoteHost // the host the agent runs on, nil for this machine
	// prevHost is the host whose clone held the agent's worktree before
	// (the team file moved it), to be retired at its next preparation;
	// nil when none.
	prevHost *remoteHost
	parked   *preflight.Problem // why the agent takes no message, nil when it does
	// account is its account key (dispatch.AgentHome: the CODEX_HOME,
	// host-qualified on another host), the key of its network hold;
	// snap.account mirrors it.
	account   string
	switching bool // the worker is being stopped to start again on another account (accountSwitch)
}

// remote reports whether the agent runs on another host: its worker
// starts over ssh (off run's goroutine, as a step) and an end of it may
// be the host's, not a crash.
func (p *placement) remote() bool { return p.host != nil }

// onDownHost reports whether the agent runs on a host whose last probe
// failed, with no worker started there since.
func (p *placement) onDownHost() bool { return p.host != nil && p.host.isDown() }

// reachedHost records that the agent's host answered (a worker started
// there); nothing for this machine.
func (p *placement) reachedHost() {
	if p.host != nil {
		p.host.reached()
	}
}
