// Package offline is what batty's commands do to a team whose daemon is
// not running: its status read from the files, a reset, a pause, the
// resumption of schedules, the cancel of queued messages. Each takes the
// project's lock first, so it refuses to run beside a daemon (then the
// only writer, reached through package control instead).
package offline

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/schedule"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/teamstatus"
)

// The functions in this file change or read a project's state while no
// daemon runs. Each takes the project's lock first, so they refuse to run
// next to a daemon (which is then the only writer; use Call instead).

// Status builds the status of a stopped team from its files: every
// agent is "stopped", with its persisted thread, counters and backlog. A
// team never started (no state directory) has the status of its team file
// alone, and the state directory is not created.
func Status(cfg *team.Config, l project.Layout) (control.Status, error) {
	d, err := l.OpenDir("", false)
	if errors.Is(err, os.ErrNotExist) {
		return offlineStatus(cfg, l, nil)
	}
	if err != nil {
		return control.Status{}, err
	}
	d.Close()
	var st control.Status
	err = project.WithLock(l, func() error {
		store, err := l.OpenInboxes()
		if err != nil {
			return err
		}
		st, err = offlineStatus(cfg, l, store)
		return err
	})
	return st, err
}

// offlineStatus reads the status of a stopped team, with the project's lock
// held, or of a team never started: store is the project's message store,
// nil when there is none (every backlog and queue is then empty).
func offlineStatus(cfg *team.Config, l project.Layout, store *inbox.Store) (control.Status, error) {
	var st control.Status
	err := func() error {
		g, err := dispatch.NewGate(l)
		if err != nil {
			return err
		}
		ds := g.State()
		st = control.Status{Team: cfg.Name, Dispatch: control.DispatchStatus{Paused: ds.Paused, Reason: ds.Reason}, Agents: []control.AgentStatus{}, Queues: map[string]int{}}
		if !ds.ResumeAt.IsZero() {
			t := ds.ResumeAt
			st.Dispatch.ResumeAt = &t
		}
		count := func(name string) (pending, inflight int, err error) {
			if store == nil {
				return 0, 0, nil
			}
			box, err := store.Box(name)
			if err != nil {
				return 0, 0, err
			}
			return box.Count()
		}
		backlogs := map[string]int{}
		for _, r := range cfg.Roles {
			if r.Instances < 2 {
				continue
			}
			if st.Queues[r.Name], _, err = count("@" + r.Name); err != nil {
				return err
			}
		}
		for _, a := range cfg.Agents() {
			var as project.AgentState
			if err := project.LoadJSON(l, project.AgentStateName(a.Name), &as); err != nil {
				return err
			}
			pending, inflight, err := count(a.Name)
			if err != nil {
				return err
			}
			backlogs[a.Name] = pending + inflight
			st.Agents = append(st.Agents, control.AgentStatus{
				Name: a.Name, Role: a.Role, State: control.AgentStopped, ThreadID: as.ThreadID, Backlog: pending + inflight,
				TurnsCompleted: as.TurnsCompleted, InputTokens: as.InputTokens, OutputTokens: as.OutputTokens,
				ContextPct: as.ContextPct, LastError: as.LastError, NoAnswers: as.NoAnswers,
			})
		}
		book, err := dispatch.NewQuotaBook(cfg, l, os.Environ(), retry.QuotaPolicy{}, nil, true)
		if err != nil {
			return err
		}
		st.Accounts = teamstatus.Accounts(book.Views(), func(n string) int { return backlogs[n] })
		teamstatus.Place(&st)
		st.Landings = []control.LandingStatus{}
		st.Budgets = []control.BudgetStatus{}
		offlineWorkspaces(cfg, l, &st)
		st.Schedules = []control.ScheduleStatus{}
		if len(cfg.Schedules) == 0 {
			// As the daemon does: without schedules their state file,
			// if any, is not read.
			return nil
		}
		states, err := project.ScheduleStore{Layout: l}.Load()
		if err != nil {
			return err
		}
		st.Schedules = teamstatus.Schedules(cfg, slices.Collect(maps.Values(states)))
		return nil
	}()
	return st, err
}

// Reset archives an agent's thread so its next message starts a
// fresh one.
func Reset(cfg *team.Config, l project.Layout, agent, reason string) error {
	if _, ok := cfg.Agent(agent); !ok {
		return fmt.Errorf("no agent %q in team %q", agent, cfg.Name)
	}
	if reason == "" {
		reason = "reset by user"
	}
	return project.WithLock(l, func() error {
		var as project.AgentState
		if err := project.LoadJSON(l, project.AgentStateName(agent), &as); err != nil {
			return err
		}
		as.Name = agent
		as.Archive(reason, time.Now().UTC())
		as.UpdatedAt = time.Now().UTC()
		return project.SaveJSON(l, project.AgentStateName(agent), as)
	})
}

// Pause closes (pause) or opens the dispatch gate of a stopped team;
// opening it also ends every account's usage-limit pause. It returns
// whether anything changed (false: it was already paused, or not paused).
func Pause(l project.Layout, pause bool, reason string) (changed bool, err error) {
	err = project.WithLock(l, func() error {
		if !pause {
			// Resume ends the accounts' usage-limit pauses too.
			var q project.QuotaState
			if err := project.LoadJSON(l, project.QuotaName, &q); err != nil {
				return err
			}
			if len(q.Paused) > 0 {
				if err := project.SaveJSON(l, project.QuotaName, project.QuotaState{Paused: []project.AccountPause{}}); err != nil {
					return err
				}
				changed = true
			}
		}
		g, err := dispatch.NewGate(l)
		if err != nil {
			return err
		}
		var gateChanged bool
		if pause {
			if reason == "" {
				reason = "paused by user"
			}
			gateChanged, err = g.Pause(project.PauseManual, reason)
		} else {
			gateChanged, err = g.Resume()
		}
		changed = changed || gateChanged
		return err
	})
	return changed, err
}

// ResumeSchedules puts the failed schedules of a stopped team back
// to waiting in its state file (`batty resume` with no daemon) and returns
// their names.
func ResumeSchedules(cfg *team.Config, l project.Layout) ([]string, error) {
	var names []string
	if len(cfg.Schedules) == 0 {
		return nil, nil // the state file, if any, is not read (as by the daemon)
	}
	err := project.WithLock(l, func() error {
		store := project.ScheduleStore{Layout: l}
		states, err := store.Load()
		if err != nil {
			return err
		}
		var all []string
		for _, s := range cfg.Schedules {
			all = append(all, s.Name)
		}
		if names = schedule.ResumeFailed(states, all); names == nil {
			return nil
		}
		return store.Save(states)
	})
	return names, err
}
