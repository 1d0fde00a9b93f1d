package orchestrator

import (
	"sync"
	"time"

	"github.com/battyhq/batty/project"
)

// gate is the team-wide dispatch gate: while it is closed no agent starts a
// new turn (messages keep queueing). It is persisted on every change so a
// quota pause keeps its reset time across restarts. Safe for concurrent use.
type gate struct {
	mu      sync.Mutex
	st      project.DispatchState
	layout  project.Layout
	changed chan struct{} // buffered(1): the daemon re-arms its resume timer
	save    func(l project.Layout, name string, v any) error
}

// newGate loads the dispatch state of the project in l.
func newGate(l project.Layout) (*gate, error) {
	g := &gate{layout: l, changed: make(chan struct{}, 1), save: project.SaveJSON}
	if err := project.LoadJSON(l, project.DispatchName, &g.st); err != nil {
		return nil, err
	}
	return g, nil
}

// state returns a copy of the dispatch state.
func (g *gate) state() project.DispatchState {
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

// pause closes the gate. A quota pause never shortens an existing quota
// pause; an auth or manual pause replaces a quota pause (it needs a human).
// It returns whether the state changed.
func (g *gate) pause(kind, reason string, resumeAt time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.st.Paused {
		switch {
		case g.st.Kind == kind && kind == project.PauseQuota && !resumeAt.After(g.st.ResumeAt) && !g.st.ResumeAt.IsZero():
			return false, nil
		case g.st.Kind == project.PauseAuth && kind == project.PauseQuota:
			return false, nil
		case g.st.Kind == kind && kind != project.PauseQuota:
			return false, nil
		}
	}
	g.st = project.DispatchState{Paused: true, Kind: kind, Reason: reason, ResumeAt: resumeAt.UTC(), Since: time.Now().UTC()}
	if resumeAt.IsZero() {
		g.st.ResumeAt = time.Time{}
	}
	err := g.save(g.layout, project.DispatchName, g.st)
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
	g.st = project.DispatchState{}
	err := g.save(g.layout, project.DispatchName, g.st)
	g.notify()
	return true, err
}

func (g *gate) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}
