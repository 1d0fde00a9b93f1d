// Package dispatch decides whether an agent may start a turn, by the team's
// two persisted gates: the team-wide dispatch gate (a manual or login pause,
// state/dispatch.json) and the accounts' usage-limit pauses with their probe
// turns (state/quota.json), grouping agents into accounts by the quota scope.
package dispatch

import (
	"sync"
	"time"

	"github.com/battyhq/batty/project"
)

// Gate is the team-wide dispatch gate: while it is closed no agent starts a
// new turn (messages keep queueing). It is persisted on every change so a
// quota pause keeps its reset time across restarts. Safe for concurrent use.
type Gate struct {
	mu      sync.Mutex
	st      project.DispatchState
	layout  project.Layout
	changed chan struct{} // buffered(1): the daemon pokes its agents when it opens
	save    func(l project.Layout, name string, v any) error
}

// NewGate loads the dispatch state of the project in l.
func NewGate(l project.Layout) (*Gate, error) {
	g := &Gate{layout: l, changed: make(chan struct{}, 1), save: project.SaveJSON}
	if err := project.LoadJSON(l, project.DispatchName, &g.st); err != nil {
		return nil, err
	}
	return g, nil
}

// State returns a copy of the dispatch state.
func (g *Gate) State() project.DispatchState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st
}

// Open reports whether agents may start turns now.
func (g *Gate) Open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.st.Paused
}

// Pause closes the gate for kind (project.PauseManual or PauseAuth: usage
// limits pause accounts, not the gate; a quota pause an earlier version
// left is migrated at start). A pause of another kind is replaced; one of
// the same kind is kept. It returns whether the state changed.
func (g *Gate) Pause(kind, reason string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.st.Paused && g.st.Kind == kind {
		return false, nil
	}
	g.st = project.DispatchState{Paused: true, Kind: kind, Reason: reason, Since: time.Now().UTC()}
	err := g.save(g.layout, project.DispatchName, g.st)
	g.notify()
	return true, err
}

// Resume opens the gate. It returns whether it was closed.
func (g *Gate) Resume() (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.st.Paused {
		return false, nil
	}
	g.st = project.DispatchState{}
	err := g.save(g.layout, project.DispatchName, g.st)
	g.notify()
	return true, err
}

// Changed is told (buffered, coalesced) every time the gate pauses or
// resumes: the daemon re-arms its resume timer.
func (g *Gate) Changed() <-chan struct{} { return g.changed }

func (g *Gate) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}
