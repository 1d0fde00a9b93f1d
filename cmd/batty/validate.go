package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/writable"
)

// newValidateCmd returns `batty validate`: check a team file.
func newValidateCmd(f *Factory) *cobra.Command {
	var teamFile string
	cmd := &cobra.Command{
		Use:   "validate [-f TEAMFILE]",
		Short: "Check a team file and list every problem",
		Long: `validate loads the team file (-f; else team.yaml, else .batty/team.yaml, in
this directory or the nearest parent that has one) and checks it
completely, including that prompt files and working directories exist
and, when a role has workspace: worktree, that the project is in a git
repository that has the base branch.

When the file is invalid it prints every problem to stderr, one per line as
file:line:col: message (hint), and exits 1. When it is valid it prints the
team's name and agents and exits 0; when this team runs and its files
changed since it started, it adds that ` + "`batty restart`" + ` applies them.`,
		Example: `  batty validate
  batty validate -f ~/src/myproject/team.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := findTeamFile(teamFile)
			if err != nil {
				return err
			}
			cfg, err := loadTeamFile(path)
			if err == nil {
				// The checks that need git: the project of a team with
				// worktree agents is a repository with the base branch.
				var l project.Layout
				if l, err = project.LayoutFor(path); err == nil {
					if verr := repoProblems(cmd.Context(), project.Project{TeamFile: path, Layout: l}, cfg); verr != nil {
						err = verr
					} else {
						// A named program an agent could replace.
						err = writable.CheckTeam(cfg, l, os.Getenv)
					}
				}
			}
			var verr *team.ValidationError
			if errors.As(err, &verr) {
				// The problems are the whole output: no headline.
				for _, p := range verr.Problems {
					fmt.Fprintln(cmd.ErrOrStderr(), safetext.Text(p.String())) // it may quote the file
				}
				return exitError{1}
			}
			if err != nil {
				return err
			}
			names := teamAgentNames(cfg)
			noun := "agents"
			if len(names) == 1 {
				noun = "agent"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid — team %q, %d %s: %s\n",
				path, cfg.Name, len(names), noun, strings.Join(names, ", "))
			warnConsole(cmd.ErrOrStderr(), path, cfg)
			noteRunningTeamChanged(cmd.OutOrStdout(), path)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	return withUsageExit(cmd)
}
