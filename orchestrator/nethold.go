package orchestrator

import (
	"sync"
	"time"
)

// netHolds is the daemon's network hold, per account (effectiveCodexHome, the key the quota pauses use too). When a
// turn of an account's agent finds the API unreachable (codex prints
// "Reconnecting... waiting for network"), the account is held: no agent
// of it starts a new turn — each would only wait too. The agents whose
// turns wait (the waiters) are the account's probes: a waiter's retry of a
// message that failed as a network failure may still start. The hold ends
// when the API answers any of them (restored), or when no waiter is left
// (leave: their messages ended otherwise; the next turn finds out afresh).
// It lives in memory only: after a restart the first turn finds out again.
//
// It is separate from the dispatch gate (a pause a human or a quota limit
// sets, persisted). Safe for concurrent use; methods never block.
type netHolds struct {
	mu sync.Mutex
	m  map[string]*netHold
}

// netHold is one held account.
type netHold struct {
	since   time.Time       // the first notice of the hold
	message string          // codex's latest notice
	waiters map[string]bool // agents whose turns wait, or whose retries probe
}

// wait records that agent's turn waits for the network of account since
// since, with codex's notice msg. It reports whether this began a hold.
func (n *netHolds) wait(account, agent string, since time.Time, msg string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]*netHold{}
	}
	h, ok := n.m[account]
	if !ok {
		h = &netHold{since: since, waiters: map[string]bool{}}
		n.m[account] = h
	}
	h.message = msg
	h.waiters[agent] = true
	return !ok
}

// restored ends the hold of account: the API answered. It returns when the
// hold began and whether there was one.
func (n *netHolds) restored(account string) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	if !ok {
		return time.Time{}, false
	}
	delete(n.m, account)
	return h.since, true
}

// leave removes agent from the waiters of account: its message ended
// without the API answering, and it probes no more. It reports whether
// that ended the hold (no waiter left).
func (n *netHolds) leave(account, agent string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	if !ok || !h.waiters[agent] {
		return false
	}
	delete(h.waiters, agent)
	if len(h.waiters) > 0 {
		return false
	}
	delete(n.m, account)
	return true
}

// allows reports whether agent of account may start a turn: the account is
// not held, or agent is one of its probes.
func (n *netHolds) allows(account, agent string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	return !ok || h.waiters[agent]
}

// get returns the hold of account, if any (a copy without the waiters).
func (n *netHolds) get(account string) (since time.Time, message string, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.m[account]
	if !ok {
		return time.Time{}, "", false
	}
	return h.since, h.message, true
}
