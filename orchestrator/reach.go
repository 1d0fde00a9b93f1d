package orchestrator

import (
	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/host"
)

// reach is where an agent runs as the daemon reaches it: the one Host
// interface, and what reaching it has found, shared by the agents there.
// Two implementations: here (this machine) and *remoteHost (another of
// the team's hosts); the agent never asks which. Its methods are safe
// from any goroutine; probe blocks for the host's answer.
type reach interface {
	// on is the host behind the one Host interface.
	on() host.Host
	// probe asks whether the host answers, and records the answer (an
	// outage's first failure and the first success after it are events
	// naming agent).
	probe(agent string) bool
	// isDown reports whether the last probe failed and no shim started
	// there since.
	isDown() bool
	// reached records that the host answered: a shim started there.
	reached()
	// ready reports whether a shim can start there now (batty is
	// installed there).
	ready() bool
	// attach is w, a worker started there, as the agent sees every
	// worker: the events a shim here gives, its transcript written to
	// transcript here (under root).
	attach(w Worker, transcript, root string, log hclog.Logger) Worker
}

// here is this machine: it always answers, a shim starts at once and
// writes its own transcript. local gives this machine's Host when it is
// asked for (Daemon.localHost: its check starts codex with the daemon's
// reaper, which is set only once the daemon runs).
type here struct{ local func() host.Local }

var (
	_ reach = here{}
	_ reach = (*remoteHost)(nil)
)

func (h here) on() host.Host                                     { return h.local() }
func (here) probe(string) bool                                   { return true }
func (here) isDown() bool                                        { return false }
func (here) reached()                                            {}
func (h here) ready() bool                                       { return h.local().Ready() }
func (here) attach(w Worker, _, _ string, _ hclog.Logger) Worker { return w }
