package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// newInitCmd returns `batty init`: write the example team.
func newInitCmd(f *Factory) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [--force] [DIR]",
		Short: "Write an example team (team.yaml and prompts/) to start from",
		Long: `init writes a commented example team into DIR (default: the current
directory): team.yaml with the roles architect, manager and engineer (two
instances), and prompts/architect.md, prompts/manager.md and
prompts/engineer.md with their standing instructions. In a git repository
whose checked-out branch has a commit, the engineers work in git worktrees
of their own (workspace: worktree), landing their work through the merge
queue; elsewhere in the project checkout. It adds .batty/ (the
worktrees of the agents that work in worktrees) to DIR's .gitignore,
creating the file if needed.

It refuses to overwrite any of those files unless --force is given, and it
refuses to create a team inside another project (DIR or a parent directory
has a team.yaml or .batty/team.yaml: every batty command run there already
uses that team) unless --force is given.`,
		Example: `  batty init
  batty init ~/src/myproject`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if !force {
				if err := refuseNestedTeam(dir); err != nil {
					return err
				}
			}
			worktrees := gitReady(cmd.Context(), dir)
			written, err := team.WriteTemplate(dir, force, worktrees)
			if err != nil {
				return fmt.Errorf("init %s: %w", dir, err)
			}
			out := cmd.OutOrStdout()
			for _, p := range written {
				fmt.Fprintf(out, "wrote %s\n", p)
			}
			if err := ignoreStateDir(out, dir); err != nil {
				return fmt.Errorf("init %s: %w", dir, err)
			}
			if worktrees {
				fmt.Fprintln(out, "the engineers work in git worktrees of their own (workspace: worktree) and land with batty merge")
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
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing files; create a team inside another project")
	return withUsageExit(cmd)
}

// gitReady reports whether dir is in a git work tree whose checked-out
// branch has a commit, so that agents' worktrees can start from it. It
// only reads; any failure is false.
func gitReady(ctx context.Context, dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Open only reads: the worktrees directory and the lock file are not
	// made.
	repo, err := workspaces.Open(ctx, workspaces.Options{ProjectDir: abs,
		WorktreesDir: filepath.Join(abs, project.DirName, "worktrees"), LockFile: filepath.Join(abs, project.DirName, "git.lock")})
	if err != nil {
		return false
	}
	base, err := repo.DefaultBase(ctx)
	return err == nil && repo.CheckBase(ctx, base) == nil
}

// refuseNestedTeam returns an error naming the project dir already belongs
// to — a team file in dir's .batty/ or in a parent directory, found as
// every command finds it — and nil when there is none. A team.yaml in dir
// itself is left to team.WriteTemplate, which refuses to overwrite it.
func refuseNestedTeam(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("init %s: %w", dir, err)
	}
	found, err := findTeamUp(abs)
	if err != nil {
		return fmt.Errorf("init %s: %w", dir, err)
	}
	if found == "" || found == filepath.Join(abs, teamFileNames[0]) {
		return nil
	}
	return fmt.Errorf("init %s: %s is already in the project of %s: batty commands run there use that team; run them there, or `batty init --force` to create a second team here",
		dir, abs, found)
}

// gitignoreEntry is the line `batty init` adds to the project's .gitignore.
const gitignoreEntry = project.DirName + "/"

// ignoreStateDir makes the .gitignore of the project directory dir ignore
// the state directory: it creates the file, or appends gitignoreEntry to it,
// atomically and never through a symbolic link, and says so on out. A
// .gitignore that already ignores it is left alone.
func ignoreStateDir(out io.Writer, dir string) error {
	const name = ".gitignore"
	d, err := atomicfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	perm := os.FileMode(0o644)
	old, err := d.ReadFile(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if fi, err := d.Lstat(name); err == nil {
			perm = fi.Mode().Perm()
		}
	}
	content, changed := withGitignoreEntry(old)
	if !changed {
		return nil
	}
	if err := d.WriteFile(name, content, perm); err != nil {
		return err
	}
	p := filepath.Join(dir, name)
	if len(old) == 0 {
		fmt.Fprintf(out, "wrote %s\n", p)
	} else {
		fmt.Fprintf(out, "added %s to %s\n", gitignoreEntry, p)
	}
	return nil
}

// withGitignoreEntry returns the .gitignore content that ignores the state
// directory: gitignore unchanged (and false) when one of its lines already
// does — .batty, .batty/, /.batty or /.batty/ — else gitignore with the line
// gitignoreEntry appended on a line of its own (and true). It is a pure
// function.
func withGitignoreEntry(gitignore []byte) ([]byte, bool) {
	for line := range bytes.Lines(gitignore) {
		l := string(bytes.TrimSpace(line))
		switch l {
		case project.DirName, project.DirName + "/", "/" + project.DirName, "/" + project.DirName + "/":
			return gitignore, false
		}
	}
	out := bytes.Clone(gitignore)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, gitignoreEntry+"\n"...), true
}
