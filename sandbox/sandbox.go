// Package sandbox runs the team's workspace commands (workspace.verify and
// workspace.setup) inside Codex's own Linux sandbox, `codex sandbox`, under
// a Codex permission profile (codex.Permissions): the command reads the
// file system but the directories it is denied (batty's state directory,
// the other worktrees, the sockets' directories), writes only its working
// directory (the worktree), a private temporary directory and the
// directories the team file declares (workspace.sandbox.writable), and
// reaches the network only when allowed. It also says when a failed
// command's output looks like the sandbox refused it, naming the team
// file's setting to change.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/textclip"
)

// The team file's keys a hint names (team.yaml's workspace.sandbox).
const (
	// KeyWritable lists the directories besides the worktree a sandboxed
	// command may write.
	KeyWritable = "workspace.sandbox.writable"
	// KeyOff is the opt-out: the commands run without a sandbox.
	KeyOff = "workspace.sandbox: off"
)

// KeyNetwork is the key that lets command ("verify" or "setup") reach the
// network: workspace.sandbox.<command>_network.
func KeyNetwork(command string) string { return "workspace.sandbox." + command + "_network" }

// Policy is how one kind of workspace command runs in the sandbox. The
// zero Policy is not usable: Bin and Home are required.
type Policy struct {
	// Bin is the codex executable as the team file names it (codex.bin):
	// a name looked up on PATH or an absolute path; an npm launcher is
	// bypassed for its native binary (codex.ResolveBinary).
	Bin string `json:"bin"`
	// Homes is the directory (made 0700 when missing) under which each run
	// gets a fresh, empty CODEX_HOME of its own, removed after it: no
	// configuration file widens the sandbox, and nothing one run leaves
	// there reaches the next. codex keeps its helper binaries there; the
	// command cannot write it. Outside /tmp, or codex warns.
	Homes string `json:"homes"`
	// Writable are absolute directories the command may write besides
	// its working directory and its private temporary directory. One
	// missing is made (0700) before the command runs.
	Writable []string `json:"writable,omitempty"`
	// Network lets the command reach the network (loopback included);
	// without it every socket is refused, Unix ones included.
	Network bool `json:"network,omitempty"`
	// Deny are absolute directories the command may not read, list, nor
	// connect to a socket in (codex.Permissions.Deny); its working
	// directory, its temporary directory and Writable stay writable
	// inside them.
	Deny []string `json:"deny,omitempty"`
	// HideEnv are environment variables the command does not get (those
	// that name the user's agents: SSH_AUTH_SOCK and the like).
	HideEnv []string `json:"hide_env,omitempty"`
}

// Args returns codex's arguments (after the executable) that run argv
// under the sandbox with permission profile p (codex.Permissions,
// its ConfigOverrides): no sandbox mode, which would override the
// profile. Every setting it relies on is set on the command line, so no
// configuration file changes it. Pure.
func Args(p codex.Permissions, argv []string) []string {
	args := []string{"sandbox"}
	for _, kv := range p.ConfigOverrides() {
		args = append(args, "-c", kv)
	}
	return append(append(args, "--"), argv...)
}

// Permissions is the permission profile of a command run in dir (an
// absolute path) under p with its private temporary directory tmp: dir,
// tmp and p.Writable writable, /tmp read-only, p.Deny denied, the network
// as p.Network says. Pure.
func (p *Policy) Permissions(dir, tmp string) codex.Permissions {
	perm := codex.Permissions{Network: p.Network, ReadOnlySlashTmp: true}
	for _, w := range append([]string{dir, tmp}, p.Writable...) {
		perm.Write = append(perm.Write, filepath.Clean(w))
	}
	for _, d := range p.Deny {
		perm.Deny = append(perm.Deny, filepath.Clean(d))
	}
	return perm
}

// Command returns the command that runs `/bin/sh -c script` in dir. With
// p nil it runs as it is (no sandbox, env unchanged, done a no-op).
// Otherwise it runs under `codex sandbox` with p's permission profile
// (Permissions), its environment env without p.HideEnv, with TMPDIR set
// to a private temporary directory and CODEX_HOME to a fresh one under
// p.Homes (both made now, removed by done, which must be called once the
// command is over); the missing Writable directories are made. The
// caller starts the command (and owns its process group).
func (p *Policy) Command(dir, script string, env []string) (cmd *exec.Cmd, done func(), err error) {
	sh := []string{"/bin/sh", "-c", script}
	if p == nil {
		cmd = exec.Command(sh[0], sh[1:]...)
		cmd.Dir, cmd.Env = dir, env
		return cmd, func() {}, nil
	}
	if err := p.check(); err != nil {
		return nil, nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	bin, err := codex.ResolveBinary(p.Bin)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	for _, d := range append([]string{p.Homes}, p.Writable...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	home, err := os.MkdirTemp(p.Homes, "home-")
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: CODEX_HOME: %w", err)
	}
	tmp, err := os.MkdirTemp("", "batty-sandbox-")
	if err != nil {
		os.RemoveAll(home)
		return nil, nil, fmt.Errorf("sandbox: private temporary directory: %w", err)
	}
	done = func() {
		os.RemoveAll(tmp)
		os.RemoveAll(home)
	}
	perm := p.Permissions(dir, tmp).WithoutMissing()
	if err := perm.Validate(); err != nil {
		done()
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd = exec.Command(bin.Path, Args(perm, sh)...)
	cmd.Dir = dir
	cmd.Env = bin.Environ(codex.WithHome(setEnv(withoutEnv(env, p.HideEnv...), "TMPDIR", tmp), home))
	return cmd, done, nil
}

// check reports a Policy Command cannot run.
func (p *Policy) check() error {
	switch {
	case p.Bin == "":
		return errors.New("sandbox: no codex binary")
	case !filepath.IsAbs(p.Homes):
		return fmt.Errorf("sandbox: the directory of CODEX_HOMEs %q is not an absolute path", p.Homes)
	}
	for _, w := range p.Writable {
		if !filepath.IsAbs(w) || !utf8.ValidString(w) {
			return fmt.Errorf("sandbox: writable directory %q is not an absolute path of valid UTF-8", w)
		}
	}
	for _, d := range p.Deny {
		if !filepath.IsAbs(d) || !utf8.ValidString(d) {
			return fmt.Errorf("sandbox: denied directory %q is not an absolute path of valid UTF-8", d)
		}
	}
	return nil
}

// setEnv returns env with key set to value (every earlier entry of key
// dropped).
func setEnv(env []string, key, value string) []string {
	return append(withoutEnv(env, key), key+"="+value)
}

// withoutEnv returns env without the entries of keys.
func withoutEnv(env []string, keys ...string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	return out
}

// Refusal is what a failed sandboxed command's output says the sandbox
// refused.
type Refusal int

// Refusals.
const (
	// RefusedNothing: nothing in the output points at the sandbox.
	RefusedNothing Refusal = iota
	// Unavailable: the sandbox itself could not start (bubblewrap, user
	// namespaces, seccomp).
	Unavailable
	// RefusedNetwork: a socket, a connection or a name lookup failed.
	// Without the network the sandbox refuses every socket but those
	// already open, loopback and Unix ones included.
	RefusedNetwork
	// RefusedWrite: a write was refused (a read-only file system).
	RefusedWrite
	// RefusedSomething: an operation was not permitted or a permission
	// denied: a write or a socket.
	RefusedSomething
)

// signs maps the words of each refusal in a command's output, matched
// without regard to case, the most specific first.
var signs = []struct {
	r     Refusal
	words []string
}{
	{Unavailable, []string{"bwrap:", "codex-linux-sandbox", "landlock", "seccomp"}},
	{RefusedNetwork, []string{"socket: operation not permitted", "bind: operation not permitted", "connect: operation not permitted",
		"network is unreachable", "could not resolve host", "temporary failure in name resolution", "name or service not known",
		"no such host", "connection refused", "couldn't connect", "failed to connect", "enetunreach"}},
	{RefusedWrite, []string{"read-only file system", "erofs"}},
	{RefusedSomething, []string{"operation not permitted", "permission denied", "eperm", "eacces"}},
}

// Classify says which refusal, if any, output (a failed sandboxed
// command's) shows. It is pure.
func Classify(output string) Refusal {
	low := strings.ToLower(output)
	for _, s := range signs {
		for _, w := range s.words {
			if strings.Contains(low, w) {
				return s.r
			}
		}
	}
	return RefusedNothing
}

// Hint is what to tell of command ("verify" or "setup") that failed in
// the sandbox, network its setting, with that output: which setting of
// the team file to change. It is "" when the output shows no refusal
// (with the network allowed, a failed connection is not the sandbox's
// doing either). It is pure.
func Hint(command, output string, network bool) string {
	write := fmt.Sprintf("%s runs in Codex's sandbox, which lets it write only its worktree and the directories of %s", command, KeyWritable)
	r := Classify(output)
	if network && r == RefusedNetwork {
		return ""
	}
	if network && r == RefusedSomething {
		r = RefusedWrite
	}
	switch r {
	case RefusedWrite:
		return fmt.Sprintf("%s, and its output shows a write refused: add the directory it needs to %s in the team file, or set %s",
			write, KeyWritable, KeyOff)
	case RefusedNetwork:
		return fmt.Sprintf("%s runs in Codex's sandbox without the network (no socket at all, not even loopback), and its output shows one refused: set %s: true in the team file, or %s",
			command, KeyNetwork(command), KeyOff)
	case RefusedSomething:
		return fmt.Sprintf("%s, and without the network (no socket at all), and its output shows something not permitted: add the directory it writes to %s, or set %s: true, in the team file, or set %s",
			write, KeyWritable, KeyNetwork(command), KeyOff)
	case Unavailable:
		return fmt.Sprintf("%s runs in Codex's sandbox, which could not start on this machine (see the output): make `codex sandbox -- /bin/true` work here, or set %s in the team file",
			command, KeyOff)
	}
	return ""
}

// trialScript is what Try runs in the sandbox: a write into its working
// directory, read back.
const trialScript = "echo batty-sandbox-ok > trial && cat trial"

// trialOK is what trialScript prints when it ran.
const trialOK = "batty-sandbox-ok"

// Try runs a trial command under p (see Command) in a fresh directory
// made under dir and removed after it: a file written into its working
// directory and read back. It returns nil when that worked; otherwise an
// error saying what happened, with the end of the command's output, whose
// Hint-style fix is TrialFix. It blocks for the command (its process group
// killed when ctx ends) and starts it through s when not nil.
func Try(ctx context.Context, p *Policy, dir string, s reap.Starter) error {
	work, err := os.MkdirTemp(dir, "batty-sandbox-trial-")
	if err != nil {
		return fmt.Errorf("sandbox trial: %w", err)
	}
	defer os.RemoveAll(work)
	cmd, done, err := p.Command(work, trialScript, os.Environ())
	if err != nil {
		return err
	}
	defer done()
	out := &textclip.HeadWriter{Max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	werr := reap.RunGroup(ctx, cmd, s)
	text := strings.TrimSpace(out.String())
	switch {
	case werr != nil:
		return fmt.Errorf("`codex sandbox` could not run a command here (%v): %s", werr, textclip.Bytes(text, 600, textclip.Ellipsis))
	case !strings.Contains(text, trialOK):
		return fmt.Errorf("`codex sandbox` ran, but the command in it did not write its working directory: %s", textclip.Bytes(text, 600, textclip.Ellipsis))
	}
	return nil
}

// TrialFix is what to do when Try failed with the codex bin names: make
// Codex's sandbox work on this machine, or run the workspace commands
// without it. It is pure.
func TrialFix(bin string) string {
	return fmt.Sprintf("make `%s sandbox -- /bin/true` work here (Linux: user namespaces allowed, e.g. sysctl kernel.unprivileged_userns_clone=1 and kernel.apparmor_restrict_unprivileged_userns=0; in a container, run it with --privileged or a seccomp profile that allows them), or set %s in the team file (an agent whose codex.sandbox is not danger-full-access needs it as well)",
		or(bin, codex.DefaultBinary), KeyOff)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// HomesIn is where the fresh CODEX_HOMEs of a user's sandboxed runs go
// (Policy.Homes): batty/sandbox under the user's cache directory, out of
// the agents' worktrees and writable roots; fallback when the cache
// directory is not known. The daemon, `batty doctor` and a host's setup
// choose it alike.
func HomesIn(fallback string) string {
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "batty", "sandbox")
	}
	return fallback
}
