package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/offline"
)

func newResetCmd(f *Factory) *cobra.Command {
	var teamFile, reason string
	cmd := &cobra.Command{
		Use:   "reset <agent>",
		Short: "Archive the agent's thread so its next message starts a fresh one",
		Long: `reset archives the agent's Codex thread (kept in its state with the reason
and the time); the agent's next message starts a fresh thread. It works with
the daemon running or stopped. An agent in a git or ssh step (a turn's commit, a
merge of the base) is reset once the step ends: the reset is pending until
then (batty status lists it).`,
		Example: `  batty reset engineer-1
  batty reset manager --reason "context full"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			if _, ok := cfg.Agent(args[0]); !ok {
				return unknownAgentError(cfg, args[0])
			}
			client := f.Daemon(p)
			req := control.Request{Op: control.OpReset, Agent: args[0], Reason: reason}
			// The daemon answers as soon as the agent gets to it: done, or
			// pending while the agent is in a git or ssh step (applied once the
			// step ends).
			resp, _, err := client.callOr(req, 60*time.Second, func() (control.Response, error) {
				return control.Response{}, offline.Reset(cfg, p.Layout, args[0], reason)
			})
			if err != nil {
				return err
			}
			if len(resp.Pending) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "batty: %s is in a git or ssh step; its thread is reset once the step ends (`batty status` shows it pending)\n", args[0])
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "batty: %s will start a fresh thread\n", args[0])
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept with the archived thread)")
	cmd.ValidArgsFunction = f.completeNames(&teamFile, namesAgents)
	return cmd
}
