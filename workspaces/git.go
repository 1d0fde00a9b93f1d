// Package workspaces gives agents git worktrees of their own and runs the
// git commands batty needs on a project's repository: one worktree and
// branch per agent, a commit per turn, the state of each workspace against
// the team's base branch, and pruning that never loses unlanded work.
package workspaces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/textclip"
)

// Starter starts and releases the processes a Git runs. A subreaper daemon
// passes its reaper (reap.Reaper satisfies it), so that its orphan scan
// never takes a git process for a leftover; nil starts them plainly.
type Starter = reap.Starter

// maxOutput bounds what a git command's output is kept of (stdout and
// stderr each); past it the rest is dropped.
const maxOutput = 16 << 20

// maxErrText bounds the stderr an error carries.
const maxErrText = 4 << 10

// Git runs git in one directory. The zero Env runs git with batty's own
// environment; every run drops the variables that would point git at
// another repository, index or object store (GIT_DIR, GIT_WORK_TREE,
// GIT_INDEX_FILE, ...: see repoEnv) and adds GIT_TERMINAL_PROMPT=0 (never
// wait for a password), LC_ALL=C (messages batty can read) and
// GIT_OPTIONAL_LOCKS=0 (read-only commands such as status take no index
// lock). A Git is a value: safe for concurrent use, though git itself needs
// batty's mutating commands on one repository serialised (Repo does that).
type Git struct {
	// Dir is the directory git runs in (git -C Dir).
	Dir string
	// GitDir and WorkTree, when set, are passed as --git-dir and
	// --work-tree: git then never looks for the repository through a .git
	// entry in Dir, which whoever writes in Dir could have replaced.
	GitDir, WorkTree string
	// Env is the environment, os.Environ() when nil.
	Env []string
	// Starter starts the processes; nil: exec.Cmd.Start.
	Starter Starter
}

// repoEnv lists the environment variables that tell git where the
// repository, its index or its objects are. batty names its repository
// itself, so an inherited one (batty run from a git hook, say) is dropped.
var repoEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_NAMESPACE", "GIT_PREFIX", "GIT_QUARANTINE_PATH",
}

// CleanEnv returns env without the variables that would point git at
// another repository than the one it is given (GIT_DIR, GIT_WORK_TREE,
// GIT_INDEX_FILE, …), in a new slice. Every git batty runs, and the
// commands it runs in a repository (setup, verify), get such an
// environment. It is a pure function.
func CleanEnv(env []string) []string {
	out := make([]string, 0, len(env)+3)
next:
	for _, kv := range env {
		for _, name := range repoEnv {
			if strings.HasPrefix(kv, name+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// Error is a git command that ran and failed.
type Error struct {
	Args   []string
	Code   int    // exit code, -1 when killed
	Stderr string // clipped
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.Code)
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

// ExitCode returns the exit code of a failed git command in err's chain,
// or -1 when err is not one.
func ExitCode(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return -1
}

// Run runs git with args and returns its standard output. It blocks until
// git exits; when ctx ends, git's process group is killed. A non-zero exit
// is an *Error carrying the clipped stderr.
func (g Git) Run(ctx context.Context, args ...string) (string, error) {
	out, _, err := g.run(ctx, nil, nil, args...)
	return out, err
}

// RunInput is Run with stdin read from in.
func (g Git) RunInput(ctx context.Context, in string, args ...string) (string, error) {
	out, _, err := g.run(ctx, strings.NewReader(in), nil, args...)
	return out, err
}

// RunTo is Run with git's standard output streamed to w, unbounded, as git
// writes it. A write error of w ends the copy; git then dies of a broken
// pipe and RunTo returns an error.
func (g Git) RunTo(ctx context.Context, w io.Writer, args ...string) error {
	_, _, err := g.run(ctx, nil, w, args...)
	return err
}

func (g Git) run(ctx context.Context, stdin *strings.Reader, w io.Writer, args ...string) (string, string, error) {
	argv := []string{"-C", g.Dir}
	if g.GitDir != "" {
		argv = append(argv, "--git-dir="+g.GitDir)
	}
	if g.WorkTree != "" {
		argv = append(argv, "--work-tree="+g.WorkTree)
	}
	cmd := exec.Command("git", append(argv, args...)...)
	env := g.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(CleanEnv(env), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	if stdin != nil {
		cmd.Stdin = stdin
	}
	stdout, stderr := &textclip.HeadWriter{Max: maxOutput}, &textclip.HeadWriter{Max: maxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if w != nil {
		cmd.Stdout = w
	}
	werr := reap.RunGroup(ctx, cmd, g.Starter)
	if ctx.Err() != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
	}
	if werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return stdout.String(), stderr.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), werr)
		}
		return stdout.String(), stderr.String(), &Error{Args: args, Code: ee.ExitCode(),
			Stderr: textclip.Bytes(stderr.String(), maxErrText, "… [truncated]")}
	}
	return stdout.String(), stderr.String(), nil
}
