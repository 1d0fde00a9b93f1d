package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/team"
)

// newInitCmd returns `batty init`: write the example team.
func newInitCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [--force] [DIR]",
		Short: "Write an example team (team.yaml and prompts/) to start from",
		Long: `init writes a commented example team into DIR (default: the current
directory): team.yaml with the roles architect, manager and engineer (two
instances), and prompts/architect.md, prompts/manager.md and
prompts/engineer.md with their standing instructions.

It refuses to overwrite any of those files unless --force is given.`,
		Example: `  batty init
  batty init ~/src/myproject`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			written, err := team.WriteTemplate(dir, force)
			if err != nil {
				return fmt.Errorf("init %s: %w", dir, err)
			}
			out := cmd.OutOrStdout()
			for _, p := range written {
				fmt.Fprintf(out, "wrote %s\n", p)
			}
			fmt.Fprintln(out, "\nNext steps:")
			if filepath.Clean(dir) != "." {
				fmt.Fprintf(out, "  cd %s\n", dir)
			}
			fmt.Fprintln(out, "  edit team.yaml (roles, talks_to, codex settings) and the prompts")
			fmt.Fprintln(out, "  batty validate    # check it")
			fmt.Fprintln(out, "  batty start       # run the team")
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing files")
	return withUsageExit(cmd)
}
