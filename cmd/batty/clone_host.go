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

// newCloneHostCmd is `batty clone-host --state-dir <dir>`, the host's end
// of a worktree agent's clone on another host (clones.Serve), run by the
// daemon over the host's transport in the project directory there: it
// reads one request and its bundle on stdin and answers on stdout. The
// clones live in the project's state directory there (--state-dir, the
// daemon's hosts.StateDir of the project there), out of the project
// directory, which an agent working in the project there may write.
func newCloneHostCmd(f *Factory) *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
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
			l, err := cloneHostLayout(stateDir, dir)
			if err != nil {
				return err
			}
			return clones.Serve(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), l)
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "the project's state directory on this machine, where the clones live (absolute)")
	return cmd
}

// cloneHostLayout is the layout `batty clone-host` works on: the state
// directory stateDir (absolute, cleaned) of the project directory dir
// (the working directory). It refuses a missing or relative stateDir.
// Pure.
func cloneHostLayout(stateDir, dir string) (project.Layout, error) {
	if stateDir == "" || !filepath.IsAbs(stateDir) {
		return project.Layout{}, fmt.Errorf("clone-host: --state-dir must name the project's state directory on this machine as an absolute path, got %q", stateDir)
	}
	return project.Layout{Dir: filepath.Clean(stateDir), Project: dir}, nil
}
