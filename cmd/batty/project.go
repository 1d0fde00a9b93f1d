package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// exitUsage is the exit code for a command line that cannot be run: unknown
// flags, a wrong number of arguments, an invalid flag value.
const exitUsage = 2

// usageError prints "batty <cmd>: <msg>" and the command's usage line to
// stderr and returns the error that makes batty exit with exitUsage.
func usageError(cmd *cobra.Command, format string, args ...any) error {
	path := cmd.CommandPath()
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\nUsage: %s\nRun '%s --help' for details.\n",
		path, fmt.Sprintf(format, args...), cmd.UseLine(), path)
	return exitError{exitUsage}
}

// usageArgs wraps a cobra argument validator so that a wrong command line
// exits with exitUsage. An error that already carries an exit code (from a
// validator wrapped before) passes through unchanged, so wrapping twice is
// harmless.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		err := v(cmd, args)
		var ee exitError
		if err == nil || errors.As(err, &ee) {
			return err
		}
		return usageError(cmd, "%v", err)
	}
}

// withUsageExit makes flag parsing errors and argument count errors of cmd
// exit with exitUsage. newRoot does this for every command of the tree;
// calling it on a command as well is harmless.
func withUsageExit(cmd *cobra.Command) *cobra.Command {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(c, "%v", err)
	})
	if cmd.Args != nil {
		cmd.Args = usageArgs(cmd.Args)
	}
	return cmd
}

// loadTeamProject resolves the project (see project.ResolveProject) and
// loads its team file with loadTeamFile. It is the one way a command finds
// and loads the team file (validate, which ignores $BATTY_DIR, loads the file
// team.FindFile finds with loadTeamFile too).
func loadTeamProject(teamFile string) (project.Project, *team.Config, error) {
	p, err := project.ResolveProject(teamFile)
	if err != nil {
		return project.Project{}, nil, err
	}
	cfg, err := loadTeamFile(p.TeamFile)
	if err != nil {
		return p, nil, err
	}
	return p, cfg, nil
}

// loadTeamFile loads and validates the team file at path. It prints
// nothing: an invalid file is an error whose first line names the file and
// says it is invalid, followed by every problem on a line of its own as
// file:line:col: message (hint); it wraps the *team.ValidationError, and
// batty exits 1 with it. Any other failure to load is an error naming the
// file.
func loadTeamFile(path string) (*team.Config, error) {
	cfg, err := team.Load(path)
	if err != nil {
		var verr *team.ValidationError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("team file %s is invalid:\n%w", path, err)
		}
		return nil, fmt.Errorf("load team file %s: %w", path, err)
	}
	return cfg, nil
}

// teamAgentNames lists the names of every agent of cfg, in team order.
func teamAgentNames(cfg *team.Config) []string {
	var names []string
	for _, a := range cfg.Agents() {
		names = append(names, a.Name)
	}
	return names
}

// unknownAgentError returns the error for a name that is not an agent of cfg.
func unknownAgentError(cfg *team.Config, name string) error {
	return fmt.Errorf("unknown agent %q in team %q (%s); agents: %s",
		name, cfg.Name, cfg.Path, strings.Join(teamAgentNames(cfg), ", "))
}

// isDir reports whether dir exists and is a directory.
func isDir(dir string) (bool, error) {
	st, err := os.Stat(dir)
	switch {
	case err == nil:
		return st.IsDir(), nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("stat %s: %w", dir, err)
	}
}
