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

// Git runs git in one directory, the one way batty runs git: in the
// project's checkout, the agents' worktrees, the landing worktree and the
// clones on hosts. Every run is hardened so that no configuration or
// program an agent could have written is read or run (see harden and
// gitEnv; docs/security.md):
//
//   - the environment is Env without any GIT_* variable (an agent's `batty
//     send` inherits the agent's environment; a variable could name
//     another repository, config, exec path or external diff), then Vars,
//     then GIT_TERMINAL_PROMPT=0 (never wait for a password), LC_ALL=C
//     (messages batty can read) and GIT_OPTIONAL_LOCKS=0 (read-only
//     commands such as status take no index lock);
//   - configuration given on the command line, which wins over every file
//     and reaches the git processes git starts: no fsmonitor, no hook, no
//     submodule recursion, no transport, no bare repository found by
//     looking around, nothing signed, no automatic gc or maintenance, no
//     rerere;
//   - status and diff compare no submodule (--ignore-submodules=all, which
//     a .gitmodules cannot override), diff runs no external diff or
//     textconv, and blame no textconv.
//
// The configuration git reads is the user's and the system's and the
// repository's own (.git/config, outside every agent's sandbox); a
// repository nested in a worktree is the agent's, and git never enters
// one (Commit records none). A Git is a value: safe for concurrent use,
// though git itself needs batty's mutating commands on one repository
// serialised (Repo does that).
type Git struct {
	// Dir is the directory git runs in (git -C Dir).
	Dir string
	// GitDir and WorkTree, when set, are passed as --git-dir and
	// --work-tree: git then never looks for the repository through a .git
	// entry in Dir, which whoever writes in Dir could have replaced.
	GitDir, WorkTree string
	// Env is the environment, os.Environ() when nil; its GIT_* variables
	// are dropped.
	Env []string
	// Vars are variables batty sets for this run (an author, a committer,
	// a configuration of its own): added after Env's are dropped.
	Vars []string
	// Starter starts the processes; nil: exec.Cmd.Start.
	Starter Starter
}

// safeConfig is the configuration every git batty runs is given on its
// command line (-c), over whatever a file says; git passes it on to the
// git processes it starts itself (GIT_CONFIG_PARAMETERS).
var safeConfig = []string{
	"core.fsmonitor=false",      // a nested repository's, or any, fsmonitor hook
	"core.hooksPath=/dev/null",  // no hook, the repository's or anyone's
	"submodule.recurse=false",   // checkout, reset, merge never enter submodules
	"diff.ignoreSubmodules=all", // the default of every diff porcelain
	"status.submoduleSummary=false",
	"protocol.allow=never",         // batty moves commits in bundles, never over a transport
	"safe.bareRepository=explicit", // a bare repository is used only when named
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"gc.auto=0",              // an automatic gc detaches from batty's process group
	"maintenance.auto=false", // so does maintenance
	"rerere.enabled=false",   // resolutions neither recorded nor replayed
}

// harden returns git's arguments for args: safeConfig as -c options, then
// args, with --ignore-submodules=all after a status or diff command
// (status, diff, diff-files, diff-index: the command line overrides a
// submodule's "ignore" in .gitmodules, which the agent writes) and
// --no-ext-diff --no-textconv after diff, --no-textconv after blame
// (which runs a textconv filter by default). It is a pure function.
func harden(args []string) []string {
	out := make([]string, 0, 2*len(safeConfig)+len(args)+3)
	for _, kv := range safeConfig {
		out = append(out, "-c", kv)
	}
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if args[i] == "-c" {
			i++
		}
		i++
	}
	if i >= len(args) {
		return append(out, args...)
	}
	var extra []string
	switch args[i] {
	case "status", "diff-files", "diff-index":
		extra = []string{"--ignore-submodules=all"}
	case "diff":
		extra = []string{"--ignore-submodules=all", "--no-ext-diff", "--no-textconv"}
	case "blame":
		extra = []string{"--no-textconv"}
	}
	out = append(out, args[:i+1]...)
	out = append(out, extra...)
	return append(out, args[i+1:]...)
}

// gitEnv is the environment of a git run: env without any GIT_* variable,
// then vars, then batty's own settings (see Git). It is a pure function.
func gitEnv(env, vars []string) []string {
	out := make([]string, 0, len(env)+len(vars)+3)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_") {
			out = append(out, kv)
		}
	}
	out = append(out, vars...)
	return append(out, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
}

// repoEnv lists the environment variables that tell git where the
// repository, its index or its objects are. The commands batty runs in a
// repository (setup, verify) are given an environment without them.
var repoEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_NAMESPACE", "GIT_PREFIX", "GIT_QUARANTINE_PATH",
}

// CleanEnv returns env without the variables that would point git at
// another repository than the one it is given (GIT_DIR, GIT_WORK_TREE,
// GIT_INDEX_FILE, …), in a new slice: the environment of the commands
// batty runs in a repository (setup, verify). git itself is run with no
// inherited GIT_* variable at all (Git). It is a pure function.
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
	cmd := exec.Command("git", append(argv, harden(args)...)...)
	env := g.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = gitEnv(env, g.Vars)
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
