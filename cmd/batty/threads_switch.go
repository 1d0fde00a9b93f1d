package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/threads"
)

func newThreadsRestoreCmd(f *Factory) *cobra.Command {
	var teamFile string
	cmd := &cobra.Command{
		Use:   "restore <agent> <thread>",
		Short: "Make an archived thread the agent's current one again",
		Long: `restore makes one of the agent's archived threads (batty threads --all lists
them) its current thread again: its next message resumes that conversation.
The current thread is archived in its place (nothing is lost), and Codex's
own store unarchives the restored thread before it is resumed.

<thread> is the thread's id or a prefix of it. Only the agent's own threads
may be restored: two agents resuming one thread would write one history;
batty threads fork gives an agent a new thread carrying another's history.

With the team running the daemon applies it: a turn in flight ends on its
thread and the next one resumes the restored thread; an agent in a git or
ssh step is switched once the step ends (pending, as for batty reset). With
the team stopped it changes the agent's state.`,
		Example: `  batty threads restore engineer-1 0199a3f2`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return switchThread(cmd, f, teamFile, args[0], args[1], false)
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.ValidArgsFunction = f.completeNames(&teamFile, namesAgents)
	return cmd
}

func newThreadsForkCmd(f *Factory) *cobra.Command {
	var teamFile, to string
	cmd := &cobra.Command{
		Use:   "fork <thread> --to <agent>",
		Short: "Start the agent on a new thread that carries a thread's history",
		Long: `fork has the agent's next message start a NEW Codex thread that carries the
history of <thread> (codex exec fork, app-server thread/fork): the
conversation goes on from there in the agent's own thread, the old thread
left as it was. The agent's current thread is archived (nothing is lost).

<thread> is any thread of the team (its id or a prefix of it): the agent's
own, or another agent's whose rollout the agent's Codex can read — in the
same Codex home, or carried there (copied) from the other agent's. An agent
on another host forks only its own threads: the others' rollouts are not
there.

With the team running the daemon applies it (as batty threads restore);
with the team stopped it is kept in the agent's state for its next start.`,
		Example: `  batty threads fork 0199a3f2 --to engineer-2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageError(cmd, "--to names the agent that forks the thread")
			}
			return switchThread(cmd, f, teamFile, to, args[0], true)
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringVar(&to, "to", "", "the agent that starts the new thread")
	return cmd
}

// switchThread restores (fork false) or forks thread id for agent, through
// the daemon or, with the team stopped, offline.
func switchThread(cmd *cobra.Command, f *Factory, teamFile, agent, id string, fork bool) error {
	p, cfg, err := f.Team(teamFile)
	if err != nil {
		return err
	}
	if _, ok := cfg.Agent(agent); !ok {
		return unknownAgentError(cfg, agent)
	}
	ld, err := threads.Load(p.Layout, teamRoles(cfg))
	if err != nil {
		return err
	}
	warnThreadRecords(cmd.ErrOrStderr(), ld)
	all := threads.Build(ld.Records)
	th, err := threads.Find(all, id)
	if !fork {
		// Only its own threads can be restored: an id that names one of
		// them is enough, whatever other agents' threads it names too.
		own := slices.DeleteFunc(slices.Clone(all), func(t threads.Thread) bool { return t.Agent != agent })
		if mine, ownErr := threads.Find(own, id); ownErr == nil {
			th, err = mine, nil
		}
	}
	if err != nil {
		return err
	}
	req := control.Request{Op: control.OpRestore, Agent: agent, Thread: th.ID, From: th.Agent}
	if fork {
		req.Op = control.OpFork
	} else if th.Agent != agent {
		return fmt.Errorf("thread %s is %s's: %s may only restore its own threads (batty threads fork %s --to %s gives it a new thread with that history)", th.ID, th.Agent, agent, th.ID, agent)
	}
	resp, _, err := f.Daemon(p).callOr(req, 60*time.Second, func() (control.Response, error) {
		if fork {
			return control.Response{}, offline.Fork(cfg, p.Layout, agent, th.Agent, th.ID)
		}
		return control.Response{}, offline.Restore(cfg, p.Layout, agent, th.ID)
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if len(resp.Pending) > 0 {
		fmt.Fprintf(out, "batty: %s is in a git or ssh step; its thread is switched once the step ends (`batty status` shows it pending)\n", agent)
		return nil
	}
	if fork {
		fmt.Fprintf(out, "batty: %s's next message starts a new thread carrying thread %s's history\n", agent, th.ID)
		return nil
	}
	fmt.Fprintf(out, "batty: %s's next message resumes thread %s\n", agent, th.ID)
	return nil
}
