package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
)

func newPauseCmd(f *Factory, pause bool) *cobra.Command {
	var teamFile string
	use, short := "resume [agent]", "Release dispatch team-wide (also ends a quota or auth pause); retry a failed agent"
	long := `resume releases the team-wide dispatch gate: a manual pause, a quota pause
before its reset time, or an auth pause. It says so when nothing was
paused. With the daemon stopped it changes the saved state, which the next
start uses. It also tries failed agents (crash loop) again at once, ending
their cool-down, checks the codex of parked agents again, and puts failed
schedules back to waiting (their next run is due at once if a tick passed).
Every agent held by a reached token budget (budgets in team.yaml) goes on
for the rest of the budget's window (a budget_resumed event says so).

With an agent name it acts on that agent only: a failed agent is tried
again at once, a parked one checked again, one held by a reached budget
goes on for the rest of the window; the dispatch gate is left as it is.`
	example := `  batty resume
  batty resume engineer-1`
	if pause {
		use, short = "pause [reason]", "Hold dispatch team-wide; messages keep queueing"
		long = `pause holds dispatch team-wide: no agent starts a new turn (turns in
flight finish) and messages keep queueing until batty resume. The pause is
saved, so it holds across restarts.`
		example = `  batty pause "reviewing the design"
  batty pause`
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Project(teamFile)
			if err != nil {
				return err
			}
			reason := strings.Join(args, " ")
			op := control.OpResume
			if pause {
				op = control.OpPause
			} else if len(args) == 1 {
				return resumeAgent(cmd.OutOrStdout(), f, p, args[0])
			}
			client := f.Daemon(p)
			resp, running, err := client.callOr(control.Request{Op: op, Reason: reason}, 10*time.Second, func() (control.Response, error) {
				return pauseOffline(p, pause, reason)
			})
			if err != nil {
				return err
			}
			if ended := resumeEnded(resp.Ended); !pause && ended != "" {
				fmt.Fprintln(cmd.OutOrStdout(), ended)
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), pauseOutcome(pause, resp.Changed, running))
			}
			announceRetry(cmd.OutOrStdout(), resp.Retried)
			announcePendingRetry(cmd.OutOrStdout(), resp.Pending)
			announceRecheck(cmd.OutOrStdout(), resp.Rechecked)
			announceSchedules(cmd.OutOrStdout(), resp.Schedules, running)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	if !pause {
		cmd.ValidArgsFunction = f.completeNames(&teamFile, namesAgents)
	}
	return cmd
}

// pauseOffline is `batty pause` (pause) or `batty resume` with no daemon
// running: it closes or opens the saved dispatch gate (see
// offline.Pause) and, for resume, puts the failed schedules
// back to waiting. It answers as the daemon would: Changed, and Schedules.
func pauseOffline(p project.Project, pause bool, reason string) (control.Response, error) {
	changed, err := offline.Pause(p.Layout, pause, reason)
	if err != nil || pause {
		return control.Response{Changed: changed}, err
	}
	schedules, err := offlineResumeSchedules(p)
	return control.Response{Changed: changed, Schedules: schedules}, err
}

// resumeAgent is `batty resume <agent>`: a failed agent is tried again at
// once, a parked one checked again, one held by a reached token budget
// goes on for the rest of the budget's window. A name that is not an agent of the team
// file is an error listing the agents. With no daemon running there is
// nothing to retry: it says that the next start starts the agent afresh.
func resumeAgent(w io.Writer, f *Factory, p project.Project, name string) error {
	cfg, err := loadTeamFile(p.TeamFile)
	if err != nil {
		return err
	}
	if _, ok := cfg.Agent(name); !ok {
		return fmt.Errorf("no agent %q in team %q (%s); agents: %s", name, cfg.Name, cfg.Path, strings.Join(teamAgentNames(cfg), ", "))
	}
	client := f.Daemon(p)
	resp, running, err := client.callOr(control.Request{Op: control.OpResume, Agent: name}, 10*time.Second, func() (control.Response, error) {
		fmt.Fprintf(w, "batty: the daemon is not running; `batty start` starts %s afresh\n", name)
		return control.Response{}, nil
	})
	if err != nil || !running {
		return err
	}
	if ended := resumeEnded(resp.Ended); ended != "" {
		fmt.Fprintln(w, ended)
	}
	announceRetry(w, resp.Retried)
	announcePendingRetry(w, resp.Pending)
	announceRecheck(w, resp.Rechecked)
	if len(resp.Retried) == 0 && len(resp.Rechecked) == 0 && len(resp.Pending) == 0 && len(resp.Ended) == 0 {
		fmt.Fprintf(w, "batty: %s is neither failed nor parked; nothing to retry (`batty resume` without a name releases a paused team)\n", name)
	}
	return nil
}

// announceRetry says which failed agents `batty resume` has tried again
// (nothing when none was failed).
func announceRetry(w io.Writer, agents []string) {
	if len(agents) > 0 {
		fmt.Fprintf(w, "batty: retrying %s now (failed: crash loop); `batty status` shows the result\n", strings.Join(agents, ", "))
	}
}

// announcePendingRetry says which agents `batty resume` tries again once
// their git or ssh step has ended (nothing when none).
func announcePendingRetry(w io.Writer, agents []string) {
	if len(agents) > 0 {
		fmt.Fprintf(w, "batty: %s: in a git or ssh step; retried, if failed, once it ends (`batty status` shows it pending)\n", strings.Join(agents, ", "))
	}
}

// resumeEnded is what `batty resume` says of the pauses it ended ("" for
// none): "batty: resumed: usage-limit pause of account /home/u/.codex
// ended; dispatch pause (manual: paused by user) ended". Each pause's
// words come from the daemon and are made one safe line. It is a pure
// function.
func resumeEnded(ended []string) string {
	if len(ended) == 0 {
		return ""
	}
	parts := make([]string, len(ended))
	for i, e := range ended {
		parts[i] = safetext.Line(e, 200) + " ended"
	}
	return "batty: resumed: " + strings.Join(parts, "; ")
}

// pauseOutcome is what `batty pause` (pause) or `batty resume` says, given
// whether the dispatch gate changed and whether the daemon runs. It is a
// pure function.
func pauseOutcome(pause, changed, running bool) string {
	switch {
	case pause && changed && running:
		return "batty: dispatch paused; messages keep queueing until `batty resume`"
	case pause && changed:
		return "batty: dispatch paused; it stays paused across `batty start` until `batty resume`"
	case pause && running:
		return "batty: dispatch was already paused"
	case pause:
		return "batty: dispatch was already paused (the daemon is not running)"
	case changed && running:
		return "batty: dispatch resumed"
	case changed:
		return "batty: pause lifted; the team dispatches once `batty start` starts it"
	case running:
		return "batty: nothing is paused; dispatch is already running"
	default:
		return "batty: nothing is paused (the daemon is not running: `batty start` starts it)"
	}
}
