package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/leftovers"
	"github.com/battyhq/batty/project"
)

func newStopCmd(f *Factory) *cobra.Command {
	var teamFile string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop [--timeout D]",
		Short: "Stop the daemon: turns in flight may finish until the timeout, then are interrupted",
		Long: `stop stops dispatching, lets the turns in flight finish until the timeout
(default: timeouts.shutdown of the team), then interrupts them. Every shim
and Codex process, and the daemon itself, is gone when it returns, and so
is the cockpit (the tmux session and the project's private tmux server).
Interrupted messages are delivered again at the next start.`,
		Example: `  batty stop
  batty stop --timeout 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStop(cmd, f, teamFile, timeout)
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long turns in flight may finish (default: the team's timeouts.shutdown)")
	return cmd
}

// runStop is `batty stop`: the daemon of the project of teamFile stops
// (turns in flight may finish until timeout), and so does its cockpit.
// `batty restart` runs it before runStart.
func runStop(cmd *cobra.Command, f *Factory, teamFile string, timeout time.Duration) error {
	p, err := f.Project(teamFile)
	if err != nil {
		return err
	}
	client := f.Daemon(p)
	announceStop(cmd.ErrOrStderr(), client, timeout)
	pid, running, err := client.stop(timeout, func() error { return stopOffline(cmd.OutOrStdout(), p) })
	if err != nil || !running {
		return err
	}
	if err := stopCockpit(p); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "batty: stopped (pid %d)\n", pid)
	return nil
}

// stopOffline is `batty stop` with no daemon running: it removes the
// cockpit a dead daemon left, says the team is not running, and kills the
// processes a team killed together with its daemon (kill -9) left running.
// A daemon started meanwhile keeps its processes (the sweep finds it
// holding the lock and does nothing).
func stopOffline(w io.Writer, p project.Project) error {
	cerr := stopCockpit(p)
	fmt.Fprintln(w, "batty: not running")
	n, err := leftovers.Sweep(p.Layout)
	if n > 0 {
		fmt.Fprintf(w, "batty: killed %d process(es) an earlier run left running\n", n)
	}
	if err != nil && !errors.Is(err, project.ErrAlreadyRunning) {
		return errors.Join(fmt.Errorf("kill what an earlier run left running: %w", err), cerr)
	}
	return cerr
}

// announceStop says, before a stop that may take a while, how many turns
// it lets finish and for how long.
func announceStop(w io.Writer, client daemonClient, timeout time.Duration) {
	resp, err := client.call(control.Request{Op: control.OpStatus}, 5*time.Second)
	if err != nil || resp.Status == nil {
		return
	}
	busy := 0
	for _, a := range resp.Status.Agents {
		if a.InFlight != nil {
			busy++
		}
	}
	if busy == 0 {
		return
	}
	limit := "timeouts.shutdown"
	if timeout > 0 {
		limit = timeout.String()
	}
	fmt.Fprintf(w, "batty: stopping; %d turn(s) in flight may finish (up to %s), then are interrupted\n", busy, limit)
}
