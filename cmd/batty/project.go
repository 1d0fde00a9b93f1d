package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/agentenv"
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

// loadTeamProject resolves the project with resolveProject and loads its
// team file with loadTeamFile. It is the one way a command finds and loads
// the team file (validate, which ignores $BATTY_DIR, loads the file
// findTeamFile finds with loadTeamFile too).
func loadTeamProject(teamFile string) (project.Project, *team.Config, error) {
	p, err := resolveProject(teamFile)
	if err != nil {
		return project.Project{}, nil, err
	}
	cfg, err := loadTeamFile(p.TeamFile)
	if err != nil {
		return p, nil, err
	}
	return p, cfg, nil
}

// resolveProject finds the project a command works on: the explicit team
// file (--team) if given; else the team of $BATTY_DIR (see
// project.ResolveProject); else the team file findTeamFile finds from the
// current directory up.
func resolveProject(teamFile string) (project.Project, error) {
	if teamFile == "" && os.Getenv(agentenv.Dir) == "" {
		f, err := findTeamFile("")
		if err != nil {
			return project.Project{}, err
		}
		teamFile = f
	}
	return project.ResolveProject(teamFile)
}

// teamFileNames are the names a project's team file goes by, relative to
// the project directory, in the order they are looked for.
var teamFileNames = []string{"team.yaml", filepath.Join(project.DirName, "team.yaml")}

// findTeamFile locates the team file as git finds its repository. A
// non-empty explicit path is checked and returned as team.FindFile does.
// Without one it looks for team.yaml, then .batty/team.yaml, in the current
// directory and then in each parent up to /, and returns the first it finds
// as a path relative to the current directory ("team.yaml",
// "../../.batty/team.yaml"). When there is none the error wraps
// team.ErrNoTeamFile (see noTeamFileError). A file found inside batty's
// state (an agent's worktree, <state>/worktrees/<agent>, as written or
// once its links are resolved; see checkNotInStateDir) is never taken: the agent may
// have written it, and the team file names the commands batty runs as the
// user; the error names the project's team file (see stateDirError).
func findTeamFile(explicit string) (string, error) {
	if explicit != "" {
		return team.FindFile(explicit)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the team file: %w", err)
	}
	found, err := findTeamUp(wd)
	if err != nil {
		return "", err
	}
	if found == "" {
		return "", noTeamFileError(wd)
	}
	if err := checkNotInStateDir(found); err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(wd, found); err == nil {
		return rel, nil
	}
	return found, nil // both are absolute: Rel does not fail, and found names the file as well
}

// checkNotInStateDir returns an error when found, the absolute path of a
// team file discovery found, lies inside batty's state (as written or once
// its symbolic links are resolved: a working directory reached through a
// link to a worktree; the error names the file where it really is): a
// project's state directory under the state home (project.StateDirIn:
// the agents' worktrees are <state>/worktrees/<agent>) or a project's own
// .batty (project.StateDirOf: where an earlier batty kept them, and a
// host its clones); nil otherwise.
func checkNotInStateDir(found string) error {
	homes := project.StateHomes()
	paths := []string{found}
	if real, err := filepath.EvalSymlinks(found); err != nil {
		return fmt.Errorf("resolve the team file %s: %w", found, err)
	} else if real != found {
		paths = append(paths, real)
	}
	for _, p := range paths {
		if state := project.StateDirIn(p, homes); state != "" {
			return stateHomeError(p, state)
		}
		if state := project.StateDirOf(p); state != "" {
			projectDir := filepath.Dir(state)
			own, err := teamFileIn(projectDir)
			if err != nil {
				return err
			}
			if own == "" {
				own = filepath.Join(projectDir, teamFileNames[0])
			}
			return stateDirError(p, state, own, projectDir)
		}
	}
	return nil
}

// stateHomeError is the error for the team file found inside the state
// directory state under a state home: it names the project's team file
// when the state directory records it (a daemon started there), which
// only the daemon writes.
func stateHomeError(found, state string) error {
	own := ""
	if d, err := (project.Layout{Dir: state}).OpenDir("", false); err == nil {
		if b, err := d.ReadFile(project.TeamRefName); err == nil {
			own = strings.TrimSpace(string(b))
		}
		d.Close()
	}
	if own == "" || strings.ContainsAny(own, "\x00\n") || !filepath.IsAbs(own) {
		return fmt.Errorf("%s is inside batty's state directory %s (an agent's worktree), whose team file batty never takes: run batty from the project's directory or pass --team", found, state)
	}
	return stateDirError(found, state, own, project.ProjectDirOf(own))
}

// stateDirError is the error for the team file found inside the state
// directory state of the project in projectDir, whose own team file is
// own.
func stateDirError(found, state, own, projectDir string) error {
	return fmt.Errorf("%s is inside batty's state directory %s (an agent's worktree); the project's team file is %s: run batty from %s or pass --team",
		found, state, own, projectDir)
}

// findTeamUp returns the absolute path of the team file of the project dir
// (absolute) is in: the first of teamFileNames found in dir or, going up,
// in one of its parents; "" when there is none. Only a regular file (or a
// link to one) counts; a path it cannot examine is an error.
func findTeamUp(dir string) (string, error) {
	for {
		f, err := teamFileIn(dir)
		if f != "" || err != nil {
			return f, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// teamFileIn returns the absolute path of the first of teamFileNames in
// dir (absolute) that is a regular file (or a link to one), "" when there
// is none; a path it cannot examine is an error.
func teamFileIn(dir string) (string, error) {
	for _, name := range teamFileNames {
		f := filepath.Join(dir, name)
		st, err := os.Stat(f)
		switch {
		case err == nil && st.Mode().IsRegular():
			return f, nil
		case err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return "", fmt.Errorf("looking for the team file %s: %w", f, err)
		}
	}
	return "", nil
}

// noTeamFileError is the error for a directory wd with no team file in it
// or above it: it says where batty looked and that `batty init` creates a
// team in wd (running it in a subdirectory of a project would create a
// second team, so it is offered only as a new project here).
func noTeamFileError(wd string) error {
	return fmt.Errorf("%w in %s or any parent directory up to / (looked for %s and %s); to create a new team in %s, run `batty init`",
		team.ErrNoTeamFile, wd, teamFileNames[0], teamFileNames[1], wd)
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
