package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
)

// newPreflightCmd is `batty preflight --json`, the host's end of the
// check of an agent's Codex on another host (hosts.Preflight): it reads
// the target as JSON on stdin — its environment may hold secrets, which
// never go on a command line — checks it here and prints the answer as
// one JSON line.
func newPreflightCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:    "preflight --json",
		Short:  "Check an agent's Codex on this machine (run by batty over a host's transport)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !asJSON {
				return usageError(cmd, "preflight reads a JSON target on stdin and answers in JSON: pass --json")
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return hosts.ServePreflight(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), &preflight.Checker{})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "read the target and answer in JSON (the only mode)")
	return cmd
}
