package offline

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// Restore makes thread, one of agent's archived threads, its current one
// again in its state file (batty threads restore with the team stopped):
// the current thread is archived in its place, and the agent's next turn
// resumes the thread (its shim unarchives it in Codex's store first).
func Restore(cfg *team.Config, l project.Layout, agent, thread string) error {
	if _, ok := cfg.Agent(agent); !ok {
		return fmt.Errorf("no agent %q in team %q", agent, cfg.Name)
	}
	return project.WithLock(l, func() error {
		var as project.AgentState
		if err := project.LoadJSON(l, project.AgentStateName(agent), &as); err != nil {
			return err
		}
		as.Name = agent
		now := time.Now().UTC()
		at, err := as.Restore(thread, "set aside for thread "+thread+", restored", now)
		if err != nil {
			return err
		}
		if at.Home != "" && as.CodexHome != "" && at.Home != as.CodexHome && !codex.HasRollout(as.CodexHome, thread) {
			if _, err := codex.CarryThread(at.Home, as.CodexHome, thread); err != nil {
				return fmt.Errorf("the thread could not be carried from %s to %s: %w", at.Home, as.CodexHome, err)
			}
		}
		as.UpdatedAt = now
		return project.SaveJSON(l, project.AgentStateName(agent), as)
	})
}

// Fork has agent's next turn fork thread (of agent from) into a new thread
// that carries its history (batty threads fork with the team stopped): the
// current thread is archived, the fork owed is kept in the agent's state.
// A thread of another agent must be where agent's Codex finds it: in the
// same Codex home, or carried there from from's (codex.CarryThread); an
// agent on another host forks only its own threads.
func Fork(cfg *team.Config, l project.Layout, agent, from, thread string) error {
	def, ok := cfg.Agent(agent)
	if !ok {
		return fmt.Errorf("no agent %q in team %q", agent, cfg.Name)
	}
	if !codex.IsThreadID(thread) {
		return fmt.Errorf("%q is not a thread id", thread)
	}
	return project.WithLock(l, func() error {
		var as, fs project.AgentState
		if err := project.LoadJSON(l, project.AgentStateName(agent), &as); err != nil {
			return err
		}
		if from != agent {
			src, ok := cfg.Agent(from)
			if def.Host != "" || (ok && src.Host != "") {
				return fmt.Errorf("thread %s is %s's, and %s or %s runs on another host, where its threads' rollouts are: fork a thread of the agent's own there", thread, from, from, agent)
			}
			if err := project.LoadJSON(l, project.AgentStateName(from), &fs); err != nil {
				return err
			}
			switch {
			case as.CodexHome == "":
				return fmt.Errorf("%s has not run yet: its Codex home is not known (start the team, then fork)", agent)
			case codex.HasRollout(as.CodexHome, thread):
			case fs.CodexHome != "" && codex.HasRollout(fs.CodexHome, thread):
				if _, err := codex.CarryThread(fs.CodexHome, as.CodexHome, thread); err != nil {
					return fmt.Errorf("the thread could not be carried to %s's Codex home: %w", agent, err)
				}
			default:
				return fmt.Errorf("no rollout of thread %s in %s's Codex home (%s) nor in %s's (%s)", thread, agent, as.CodexHome, from, fs.CodexHome)
			}
		}
		as.Name = agent
		now := time.Now().UTC()
		as.Fork(thread, "set aside for a fork of thread "+thread, now)
		as.UpdatedAt = now
		return project.SaveJSON(l, project.AgentStateName(agent), as)
	})
}
