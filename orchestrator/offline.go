package orchestrator

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/team"
)

// The functions in this file change or read a project's state while no
// daemon runs. Each takes the project's lock first, so they refuse to run
// next to a daemon (which is then the only writer; use Call instead).

// lockWait is how long withLock waits for a lock that is held: a daemon
// killed a moment ago holds it until the kernel has torn it down, which a
// command run right after the kill must not take for a running daemon.
const lockWait = 2 * time.Second

// withLock runs f while holding the daemon lock. A lock held for longer
// than lockWait is ErrAlreadyRunning.
func withLock(l Layout, f func() error) error {
	if err := l.MkdirAll(); err != nil {
		return err
	}
	lock, err := acquireLockWait(l)
	if err != nil {
		return err
	}
	defer releaseLock(lock)
	return f()
}

// acquireLockWait takes the project's daemon lock, waiting up to lockWait
// while it is held; then it is ErrAlreadyRunning (wrapped).
func acquireLockWait(l Layout) (*os.File, error) {
	deadline := time.Now().Add(lockWait)
	lock, err := acquireLock(l)
	for err != nil && errors.Is(err, ErrAlreadyRunning) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		lock, err = acquireLock(l)
	}
	return lock, err
}

// OfflineStatus builds the status of a stopped team from its files: every
// agent is "stopped", with its persisted thread, counters and backlog.
func OfflineStatus(cfg *team.Config, l Layout) (Status, error) {
	var st Status
	err := withLock(l, func() error {
		g, err := newGate(l)
		if err != nil {
			return err
		}
		ds := g.state()
		st = Status{Team: cfg.Name, Dispatch: DispatchStatus{Paused: ds.Paused, Reason: ds.Reason}, Agents: []AgentStatus{}, Queues: map[string]int{}}
		if !ds.ResumeAt.IsZero() {
			t := ds.ResumeAt
			st.Dispatch.ResumeAt = &t
		}
		store, err := l.OpenInboxes()
		if err != nil {
			return err
		}
		backlogs := map[string]int{}
		for _, r := range cfg.Roles {
			if r.Instances < 2 {
				continue
			}
			box, err := store.Box("@" + r.Name)
			if err != nil {
				return err
			}
			if st.Queues[r.Name], _, err = box.Count(); err != nil {
				return err
			}
		}
		for _, a := range cfg.Agents() {
			var as AgentState
			if err := loadJSON(l, agentStateName(a.Name), &as); err != nil {
				return err
			}
			box, err := store.Box(a.Name)
			if err != nil {
				return err
			}
			pending, inflight, err := box.Count()
			if err != nil {
				return err
			}
			backlogs[a.Name] = pending + inflight
			st.Agents = append(st.Agents, AgentStatus{
				Name: a.Name, Role: a.Role, State: agentStopped, ThreadID: as.ThreadID, Backlog: pending + inflight,
				TurnsCompleted: as.TurnsCompleted, InputTokens: as.InputTokens, OutputTokens: as.OutputTokens,
				ContextPct: as.ContextPct, LastError: as.LastError, NoAnswers: as.NoAnswers,
			})
		}
		book, err := newQuotaBook(cfg, l, os.Environ(), retry.QuotaPolicy{}, nil, true)
		if err != nil {
			return err
		}
		st.Accounts = accountStatus(book.views(), func(n string) int { return backlogs[n] })
		st.Schedules = []ScheduleStatus{}
		if len(cfg.Schedules) == 0 {
			// As the daemon does: without schedules their state file,
			// if any, is not read.
			return nil
		}
		states, err := scheduleStore{l}.Load()
		if err != nil {
			return err
		}
		st.Schedules = schedulesStatus(cfg, slices.Collect(maps.Values(states)))
		return nil
	})
	return st, err
}

// OfflineReset archives an agent's thread so its next message starts a
// fresh one.
func OfflineReset(cfg *team.Config, l Layout, agent, reason string) error {
	if _, ok := cfg.Agent(agent); !ok {
		return fmt.Errorf("no agent %q in team %q", agent, cfg.Name)
	}
	if reason == "" {
		reason = "reset by user"
	}
	return withLock(l, func() error {
		var as AgentState
		if err := loadJSON(l, agentStateName(agent), &as); err != nil {
			return err
		}
		as.Name = agent
		as.archive(reason, time.Now().UTC())
		as.UpdatedAt = time.Now().UTC()
		return saveJSON(l, agentStateName(agent), as)
	})
}

// OfflinePause closes (pause) or opens the dispatch gate of a stopped team;
// opening it also ends every account's usage-limit pause. It returns
// whether anything changed (false: it was already paused, or not paused).
func OfflinePause(l Layout, pause bool, reason string) (changed bool, err error) {
	err = withLock(l, func() error {
		if !pause {
			// Resume ends the accounts' usage-limit pauses too.
			var q quotaState
			if err := loadJSON(l, quotaName, &q); err != nil {
				return err
			}
			if len(q.Paused) > 0 {
				if err := saveJSON(l, quotaName, quotaState{Paused: []AccountPause{}}); err != nil {
					return err
				}
				changed = true
			}
		}
		g, err := newGate(l)
		if err != nil {
			return err
		}
		var gateChanged bool
		if pause {
			if reason == "" {
				reason = "paused by user"
			}
			gateChanged, err = g.pause(PauseManual, reason)
		} else {
			gateChanged, err = g.resume()
		}
		changed = changed || gateChanged
		return err
	})
	return changed, err
}
