package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/workspaces"
)

// ErrNoGit is wrapped by FindGit when git is not installed.
var ErrNoGit = errors.New("git is not installed")

// GitInstallHint says how to get git, which the demo's project needs.
const GitInstallHint = `The demo's engineers work in git worktrees of their own and land their work on
the project's main branch, so it needs git. Install it with your system's
package manager (e.g. apt-get install git, dnf install git, brew install git)
or from https://git-scm.com/downloads, then run batty demo again.`

// FindGit returns the path of git on PATH, or an error wrapping ErrNoGit
// that says how to get it.
func FindGit() (string, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("%w (%w)\n%s", ErrNoGit, err, GitInstallHint)
	}
	return p, nil
}

// baseBranch is the branch of the demo project the engineers' work lands
// on.
const baseBranch = "main"

// verifyCommand is the demo team's workspace.verify: before a branch lands
// on main, every text file in work/ must have content (and there must be
// one: an unmatched glob is tested as it is, and fails).
const verifyCommand = `for f in work/*.txt; do test -s "$f" || { echo "$f is missing or empty" >&2; exit 1; }; done`

// gitignore keeps batty's state and the stand-in's CODEX_HOME out of the
// demo project's commits.
const gitignore = ".batty/\ncodex-home/\n"

// projectGit runs the demo's own git commands in dir. Its environment
// ignores the user's and the system's git configuration, so that nothing
// there (a signing key, a hook path, a default branch) changes the demo's
// repository; the identity is given on each commit (commitIdentity).
func projectGit(dir string) workspaces.Git {
	return workspaces.Git{Dir: dir, Vars: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}}
}

// commitIdentity are the git options that name the author and committer
// of the demo project's first commit.
func commitIdentity() []string {
	return []string{"-c", "user.name=batty demo", "-c", "user.email=demo@batty.invalid"}
}

// initRepo makes dir, which holds the demo project's files, a git
// repository on baseBranch whose first commit holds everything but what
// .gitignore leaves out. It blocks until git is done or ctx ends.
func initRepo(ctx context.Context, dir string) error {
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(gitignore), 0o600); err != nil {
		return fmt.Errorf("write the demo project's .gitignore: %w", err)
	}
	g := projectGit(dir)
	steps := [][]string{
		{"init", "-q", "-b", baseBranch},
		{"add", "-A"},
		append(commitIdentity(), "commit", "-q", "--no-verify", "-m", "The demo team: team.yaml, the role prompts and work/ for the engineers"),
	}
	for _, args := range steps {
		if _, err := g.Run(ctx, args...); err != nil {
			return fmt.Errorf("make the demo project a git repository: %w", err)
		}
	}
	return nil
}

// gitLog returns the graph of the last commits of the demo project's main
// branch (`git log --oneline --graph -n 10 main`), its lines' trailing
// blanks removed.
func gitLog(ctx context.Context, dir string) (string, error) {
	out, err := projectGit(dir).Run(ctx, "log", "--oneline", "--graph", "-n", "10", baseBranch)
	if err != nil {
		return "", fmt.Errorf("read the history of %s: %w", baseBranch, err)
	}
	var lines []string
	for l := range strings.Lines(strings.TrimRight(out, "\n")) {
		lines = append(lines, strings.TrimRight(l, " \n"))
	}
	return strings.Join(lines, "\n"), nil
}
