package dispatch

import (
	"sync"
	"time"
)

// NetHolds is the daemon's network hold, per account (EffectiveCodexHome,
// the key the quota pauses use too). When a turn of an account's agent
// finds the API unreachable (codex prints "Reconnecting... waiting for
// network"), the account is held: of its agents only one, the probe, may
// start a turn — every other would only wait too. The hold ends only when
// the API answers a turn of the account (restored): a turn that ends
// without an answer, even the one that began the hold, leaves it in place,
// so one outage is one hold (one alert) however many messages fail in it.
// Which agent probes is decided by the agents (orchestrator's netAllows): the agent whose
// turn began the hold first, then whoever takes it over when the probe has
// nothing to send or cannot send it.
// It lives in memory only: after a restart the first turn finds out again.
//
// It is separate from the dispatch gate (a pause a human or a quota limit
// sets, persisted). Safe for concurrent use; methods never block.
type NetHolds struct {
	mu sync.Mutex
	m  map[string]*netHold
}

// netHold is one held account.
type netHold struct {
	since   time.Time // the first notice of the hold
	message string    // codex's latest notice
	prober  string    // the agent that may start a turn, "" when none
}

// Wait records that agent's turn waits for the network of account since
// since, with codex's notice msg. It reports whether this began a hold.
// The agent that began it probes; so does a waiting agent while no agent
// probes (its turn probes already).
func (n *NetHolds) Wait(account, agent string, since time.Time, msg string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]*netHold{}
	}
	h, ok := n.m[account]
	if !ok {
		h = &netHold{since: since}
		n.m[account] = h
	}
	h.message = msg
	if h.prober == "" {
		h.prober = agent
	}
	return !ok
}

// Restored ends the hold of account: the API answered. It returns when the
// hold began and whether there was one.
func (n *NetHolds) Restored(account string) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	if !ok {
		return time.Time{}, false
	}
	delete(n.m, account)
	return h.since, true
}

// Probe returns the agent that may start a turn in the hold of account
// ("" when none does), when the hold began, and whether account is held.
func (n *NetHolds) Probe(account string) (prober string, since time.Time, held bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	if !ok {
		return "", time.Time{}, false
	}
	return h.prober, h.since, true
}

// HandOver makes to the probe of account's hold ("" : nobody) if from
// still is. It reports whether it did: false when the hold ended or
// another agent changed the probe meanwhile.
func (n *NetHolds) HandOver(account, from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	if !ok || h.prober != from {
		return false
	}
	h.prober = to
	return true
}

// Get returns the hold of account, if any.
func (n *NetHolds) Get(account string) (since time.Time, message string, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	if !ok {
		return time.Time{}, "", false
	}
	return h.since, h.message, true
}

// NetStep is what an agent does about its account's network hold when it
// looks for a message to start.
type NetStep int

const (
	NetGo      NetStep = iota // not held, or the agent probes: it may start a turn
	NetWait                   // another agent probes: wait for the API to answer it
	NetTake                   // nobody probes and the agent has a message: it takes the probe over
	NetRelease                // the agent probes but cannot send: it gives the probe up
	NetIdle                   // nobody probes and the agent has nothing to send either
)

// DecideNetStep decides for agent me, in an account held (or not) whose
// Probe is prober ("" = none), given whether me could probe now (it has a
// message and nothing else holds it back: mine) and whether the prober
// could (theirs; only asked when prober is another agent). It is a pure
// function.
func DecideNetStep(held bool, me, prober string, mine, theirs bool) NetStep {
	switch {
	case !held:
		return NetGo
	case prober == me && mine:
		return NetGo
	case prober == me:
		return NetRelease
	case prober != "" && theirs:
		return NetWait
	case mine:
		return NetTake
	}
	return NetIdle
}
