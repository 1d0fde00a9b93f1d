package orchestrator

import (
	"sync"
	"time"
)

// gate is the team-wide dispatch gate: while it is closed no agent starts a
// new turn (messages keep queueing). It is persisted on every change so a
// quota pause keeps its reset time across restarts. Safe for concurrent use.
type gate struct {
	mu      sync.Mutex
	st      DispatchState
	layout  Layout
	changed chan struct{} // buffered(1): the daemon pokes its agents when it opens
	save    func(l Layout, name string, v any) error
}

// newGate loads the dispatch state of the project in l.
func newGate(l Layout) (*gate, error) {
	g := &gate{layout: l, changed: make(chan struct{}, 1), save: saveJSON}
	if err := loadJSON(l, dispatchName, &g.st); err != nil {
		return nil, err
	}
	return g, nil
}

// state returns a copy of the dispatch state.
func (g *gate) state() DispatchState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st
}

// open reports whether agents may start turns now.
func (g *gate) open() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.st.Paused
}

// pause closes the gate for kind (PauseManual or PauseAuth: usage limits
// pause accounts, not the gate; a quota pause an earlier version left is
// migrated at start). A pause of another kind is replaced; one of the same
// kind is kept. It returns whether the state changed.
func (g *gate) pause(kind, reason string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.st.Paused && g.st.Kind == kind {
		return false, nil
	}
	g.st = DispatchState{Paused: true, Kind: kind, Reason: reason, Since: time.Now().UTC()}
	err := g.save(g.layout, dispatchName, g.st)
	g.notify()
	return true, err
}

// resume opens the gate. It returns whether it was closed.
func (g *gate) resume() (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.st.Paused {
		return false, nil
	}
	g.st = DispatchState{}
	err := g.save(g.layout, dispatchName, g.st)
	g.notify()
	return true, err
}

func (g *gate) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}
