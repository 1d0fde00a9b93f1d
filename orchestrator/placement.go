package orchestrator

import "github.com/battyhq/batty/preflight"

// placement is the agent's room for where it runs: the host (this
// machine or another) and the host of its worktree before, the health of
// the target it runs (its account's: see accountRoom), and what parks
// it. Run's goroutine owns it; snap mirrors what status shows.
type placement struct {
	// health is the health of the target the agent runs on: of the
	// account it is placed on (followHealth). snap.health mirrors it for
	// other goroutines.
	health *health
	host   reach // where the agent runs: here, or a *remoteHost
	// prevHost is the host whose clone held the agent's worktree before
	// (the team file moved it), to be retired at its next preparation;
	// nil when none.
	prevHost *remoteHost
	parked   *preflight.Problem // why the agent takes no message, nil when it does
}
