package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
)

func newRestartCmd() *cobra.Command {
	var teamFile string
	var timeout time.Duration
	var noTmux bool
	cmd := &cobra.Command{
		Use:   "restart [--timeout D] [--no-tmux]",
		Short: "Stop the team gracefully and start it again, applying a changed team.yaml",
		Long: `restart is batty stop followed by batty start: turns in flight may finish
until the timeout (default: timeouts.shutdown of the team), then are
interrupted and delivered again after the start. Every thread, inbox and
message is kept; the team file (and its prompt files) are read again, so
restart applies their changes. batty status says when they changed since
the team started.

The team file is validated first: an invalid one leaves the running team
as it is. Without a running team, restart starts it.`,
		Example: `  batty restart
  batty restart --timeout 10s
  batty restart --no-tmux`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := loadStartableTeam(cmd.Context(), teamFile); err != nil {
				return err
			}
			if err := runStop(cmd, teamFile, timeout); err != nil {
				return err
			}
			return runStart(cmd, teamFile, false, noTmux)
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long turns in flight may finish (default: the team's timeouts.shutdown)")
	cmd.Flags().BoolVar(&noTmux, "no-tmux", false, "start again without the tmux cockpit (watch agents with batty logs -f)")
	return cmd
}

// teamChangedNotice is what status and validate say while the running
// team's files differ from what its daemon started with.
const teamChangedNotice = "team.yaml changed since the team started: `batty restart` applies it"

// printTeamChanged prints teamChangedNotice on a line of its own when st
// says the team's files changed since its daemon started, nothing
// otherwise.
func printTeamChanged(w io.Writer, st control.Status) {
	if st.TeamFileChanged {
		fmt.Fprintln(w, teamChangedNotice)
	}
}

// noteRunningTeamChanged prints teamChangedNotice when a daemon runs the
// team of the team file at path and its files changed since it started;
// nothing when none runs (it creates nothing).
func noteRunningTeamChanged(w io.Writer, path string) {
	l, err := project.LayoutFor(path)
	if err != nil {
		return
	}
	resp, err := control.Call(l, control.Request{Op: control.OpStatus}, 5*time.Second)
	if err != nil || resp.Status == nil {
		return
	}
	printTeamChanged(w, *resp.Status)
}
