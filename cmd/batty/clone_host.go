package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/project"
)

// newCloneHostCmd is `batty clone-host`, the host's end of a worktree
// agent's clone on another host (clones.Serve), run by the daemon over
// the host's transport in the project directory there: it reads one
// request and its bundle on stdin and answers on stdout.
func newCloneHostCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "clone-host",
		Short:  "Work on a worktree agent's clone on this machine (run by batty over a host's transport)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			dir, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("clone-host: %w", err)
			}
			return clones.Serve(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), project.Layout{Dir: filepath.Join(dir, project.DirName)})
		},
	}
}
