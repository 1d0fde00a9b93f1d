// Package preflight checks, before an agent gets a message, that its Codex
// can run: the binary resolves and answers `codex --version`, CODEX_HOME
// exists, and — when the configured model provider needs an OpenAI login —
// `codex login status` says it is logged in. A failed check is a Problem
// that names what is wrong and how to fix it.
//
// The checks run codex the way a shim does (the same binary resolution, the
// agent's environment and CODEX_HOME, its working directory), each in its
// own process group, killed at a timeout and always reaped.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shellword"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// installHint says how to install the pinned Codex CLI.
const installHint = "install it: npm install -g @openai/codex@" + codex.Version

// DefaultTimeout bounds each codex run of a check.
const DefaultTimeout = 10 * time.Second

// maxOutput is how much of a check's output is kept.
const maxOutput = 4 << 10

// Kind classifies a Problem.
type Kind string

// Problem kinds.
const (
	// KindMissing: the binary is not there (not on PATH, no such file, a
	// launcher without its native binary, not executable).
	KindMissing Kind = "codex_missing"
	// KindBroken: the binary is there but `codex --version` fails.
	KindBroken Kind = "codex_broken"
	// KindHome: CODEX_HOME is not a directory.
	KindHome Kind = "codex_home"
	// KindLogin: the provider needs a login and codex is not logged in.
	KindLogin Kind = "not_logged_in"
	// KindLoginCheck: `codex login status` failed for another reason.
	KindLoginCheck Kind = "login_check"
	// KindSpawn: a turn could not start codex although the checks pass
	// (reported by the daemon, not found by Check).
	KindSpawn Kind = "codex_spawn"
	// KindHost: the agent's host cannot be reached, or batty cannot be
	// installed or run there (reported by the daemon, not found by
	// Check).
	KindHost Kind = "host"
)

// Problem is why an agent's Codex cannot run, with the fix.
type Problem struct {
	Kind   Kind
	Detail string // what is wrong, naming the file or directory
	Fix    string // what to do about it
}

// String is "<detail> — <fix>".
func (p *Problem) String() string {
	if p.Fix == "" {
		return p.Detail
	}
	return p.Detail + " — " + p.Fix
}

func (p *Problem) Error() string { return p.String() }

// Target is how one agent runs Codex.
type Target struct {
	// Bin is the configured codex binary (codex.bin).
	Bin string
	// Home is the configured CODEX_HOME ("" inherits the environment's).
	Home string
	// Env is the agent's extra environment ("KEY=value", codex.env).
	Env []string
	// Cwd is the agent's working directory.
	Cwd string
	// Config is codex.config: dotted keys to TOML values.
	Config map[string]string
	// Args is codex.args.
	Args []string
}

// TargetFor is how agent def runs Codex with CODEX_HOME home, the account
// it is placed on ("" for its role's own codex_home: the preferred account
// of a role with accounts), on this machine. The daemon checks each
// agent's and `batty doctor` each agent's and account's. It is a pure
// function.
func TargetFor(def team.Agent, home string) Target {
	c := def.Codex
	env := make([]string, 0, len(c.Env))
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		env = append(env, k+"="+c.Env[k])
	}
	if len(env) == 0 {
		env = nil
	}
	if home == "" {
		home = c.CodexHome
	}
	return Target{Bin: c.Bin, Home: home, Env: env, Cwd: def.Cwd, Config: c.Config, Args: c.Args}
}

// Key identifies targets that one check answers for: the same binary, home,
// environment, directory and settings. Agents with equal keys share a check.
func (t Target) Key() string {
	var b strings.Builder
	field := func(s string) { fmt.Fprintf(&b, "%d:%s;", len(s), s) }
	field(t.Bin)
	field(t.Home)
	field(t.Cwd)
	for _, kv := range t.Env {
		field(kv)
	}
	b.WriteByte('|')
	keys := make([]string, 0, len(t.Config))
	for k := range t.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field(k + "=" + t.Config[k])
	}
	b.WriteByte('|')
	for _, a := range t.Args {
		field(a)
	}
	return b.String()
}

// Checker runs checks. The zero value works (no reaper, DefaultTimeout).
type Checker struct {
	// Reaper, when the process is a child subreaper, starts the check's
	// processes as managed children (so its orphan reaping leaves them to
	// their Wait).
	Reaper *reap.Reaper
	// Timeout bounds each codex run (DefaultTimeout when 0).
	Timeout time.Duration
	// BaseEnv is the environment the agent's Env applies over (nil: this
	// process's).
	BaseEnv []string
	// FinalEnv is set after the agent's Env and CODEX_HOME, which cannot
	// override it.
	FinalEnv []string
}

// Report is what the checks of one target found: the facts gathered on
// the way, and the first problem.
type Report struct {
	// Binary is the codex executable the target runs (zero when it does
	// not resolve): the native binary, and the npm launcher it bypasses.
	Binary codex.Binary
	// Version is the version `codex --version` printed (codex.VersionOf;
	// "" when it did not run or printed none).
	Version string
	// Home is the effective CODEX_HOME (codex.Home).
	Home string
	// Login is whether the target's model provider needs a login; set once
	// `codex --version` ran.
	Login LoginDecision
	// LoggedIn reports that `codex login status` said logged in (false
	// when the login was not checked: not needed, or an earlier problem).
	LoggedIn bool
	// Problem is the first problem, nil when Codex can run.
	Problem *Problem
}

// Check runs the checks for t (see Inspect) and returns the first
// problem, or nil when Codex can run.
func (c *Checker) Check(ctx context.Context, t Target) *Problem {
	return c.Inspect(ctx, t).Problem
}

// Inspect runs the checks for t in order — binary, CODEX_HOME, --version,
// login — and returns what they found, with the first problem (nil when
// Codex can run). It blocks for at most two codex runs of c.Timeout each;
// ctx cancels them.
func (c *Checker) Inspect(ctx context.Context, t Target) (r Report) {
	bin, err := codex.ResolveBinary(t.Bin)
	if err != nil {
		r.Problem = missing(t.Bin, err)
		return r
	}
	r.Binary = bin
	base := c.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	// A copy: Check runs for several targets at once, and appending to
	// the shared base would write into its spare capacity.
	env := append(slices.Clip(bin.Environ(base)), t.Env...)
	if t.Home != "" {
		env = append(env, "CODEX_HOME="+t.Home)
	}
	env = append(env, c.FinalEnv...)
	getenv := lookupIn(env)
	home := codex.Home(env, t.Cwd)
	r.Home = home
	if t.Home != "" || getenv("CODEX_HOME") != "" {
		if fi, err := os.Stat(home); err != nil || !fi.IsDir() {
			why := "does not exist"
			if err == nil {
				why = "is not a directory"
			} else if !errors.Is(err, fs.ErrNotExist) {
				why = "cannot be read: " + err.Error()
			}
			r.Problem = &Problem{Kind: KindHome, Detail: fmt.Sprintf("CODEX_HOME %s %s", home, why),
				Fix: fmt.Sprintf("create it and log in: mkdir -p %s && CODEX_HOME=%s codex login (or fix codex.codex_home in the team file)", home, home)}
			return r
		}
	}
	code, out, err := c.run(ctx, bin.Path, env, t.Cwd, "--version")
	if err != nil || code != 0 {
		what := fmt.Sprintf("exited with status %d", code)
		if err != nil {
			what = err.Error()
		}
		if tail := lastLine(out); tail != "" {
			what += ": " + tail
		}
		r.Problem = &Problem{Kind: KindBroken, Detail: fmt.Sprintf("codex at %s does not run (`codex --version` %s)", bin.Path, what),
			Fix: "re" + installHint + ", or point codex.bin in the team file at a working codex"}
		return r
	}
	r.Version = codex.VersionOf(out)
	homeConfig, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	over, profile, oss := ArgsSettings(t.Args)
	cfgKeys := make([]string, 0, len(t.Config))
	for k := range t.Config {
		cfgKeys = append(cfgKeys, k)
	}
	sort.Strings(cfgKeys)
	var overrides []string
	for _, k := range cfgKeys {
		overrides = append(overrides, k+"="+t.Config[k])
	}
	d := NeedsLogin(LoginInput{Overrides: append(overrides, over...), Profile: profile, OSS: oss, HomeConfig: string(homeConfig), Getenv: getenv})
	r.Login = d
	if !d.Needed {
		return r
	}
	code, out, err = c.run(ctx, bin.Path, env, t.Cwd, "login", "status")
	login := LoginCommand(t.Bin, bin)
	if t.Home != "" || getenv("CODEX_HOME") != "" {
		login = "CODEX_HOME=" + home + " " + login
	}
	if err != nil {
		r.Problem = &Problem{Kind: KindLoginCheck, Detail: fmt.Sprintf("`codex login status` failed (%v)", err), Fix: "check that " + login + " works"}
		return r
	}
	switch ClassifyLoginStatus(code, out) {
	case LoggedIn:
		r.LoggedIn = true
	case NotLoggedIn:
		r.Problem = &Problem{Kind: KindLogin, Detail: fmt.Sprintf("codex is not logged in (CODEX_HOME %s, model provider %s)", home, d.Provider),
			Fix: "run: " + login + " (or set OPENAI_API_KEY in codex.env)"}
	default:
		r.Problem = &Problem{Kind: KindLoginCheck, Detail: fmt.Sprintf("`codex login status` exited with status %d: %s", code, or(lastLine(out), "no output")),
			Fix: "fix what it says, then run: " + login}
	}
	return r
}

// missing turns a binary resolution error into a Problem.
func missing(bin string, err error) *Problem {
	switch {
	case bin == "" || !strings.ContainsRune(bin, '/'):
		name := or(bin, codex.DefaultBinary)
		var pe *exec.Error
		if errors.As(err, &pe) || strings.Contains(err.Error(), "not on PATH") {
			return &Problem{Kind: KindMissing, Detail: fmt.Sprintf("codex not found: %q is not on PATH", name),
				Fix: installHint + " (or set codex.bin in the team file to its full path)"}
		}
	case errors.Is(err, fs.ErrNotExist):
		return &Problem{Kind: KindMissing, Detail: "codex not found at " + bin, Fix: installHint + ", or fix codex.bin in the team file"}
	}
	// Not executable, not a regular file, a launcher without its native
	// binary: the resolver's message names the file and the fix.
	msg := strings.TrimPrefix(err.Error(), codex.ErrBinaryNotFound.Error()+": ")
	return &Problem{Kind: KindMissing, Detail: "codex not usable: " + msg}
}

// run runs codex with args, in its own process group (killed whole at the
// timeout or when ctx ends), and returns its exit code and combined output.
// err is set when it could not run or was killed.
func (c *Checker) run(ctx context.Context, path string, env []string, dir string, args ...string) (int, string, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Dir = env, dir
	out := &textclip.HeadWriter{Max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	var starter reap.Starter
	if c.Reaper != nil {
		starter = c.Reaper
	}
	werr := reap.RunGroup(ctx, cmd, starter)
	if cmd.Process == nil {
		return -1, "", werr // it could not start
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return -1, out.String(), fmt.Errorf("no answer within %s", timeout)
		}
		return -1, out.String(), ctx.Err()
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return -1, out.String(), werr
	}
	return cmd.ProcessState.ExitCode(), out.String(), nil
}

// lookupIn looks a variable up in env, the last entry winning (as exec does).
func lookupIn(env []string) func(string) string {
	return func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
}

// lastLine is the last non-blank line of s that is not one of codex's
// "WARNING: proceeding…" notices, clipped to 300 bytes.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "WARNING: proceeding") {
			continue
		}
		return textclip.Bytes(l, 300+len(textclip.Ellipsis), textclip.Ellipsis)
	}
	return ""
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// LoginCommand is the command a fix tells the user to run to log in the
// codex configured as configured (codex.bin, "" for the default), which
// resolved to bin: `<codex> login`, spelled by loginCommand.
func LoginCommand(configured string, bin codex.Binary) string {
	_, err := exec.LookPath(codex.DefaultBinary)
	return loginCommand(configured, bin, err == nil) + " login"
}

// loginCommand is how a fix spells the codex that an agent configured as
// configured (codex.bin, "" for the default) runs, resolved to bin: the
// default name not on PATH (onPath false) is the file batty found instead
// (the pinned install it falls back to), shell-quoted; anything else is
// `codex`, or the configured name. It is a pure function.
func loginCommand(configured string, bin codex.Binary, onPath bool) string {
	switch {
	case strings.ContainsRune(configured, '/'):
		return codex.DefaultBinary
	case (configured == "" || configured == codex.DefaultBinary) && !onPath:
		if bin.Launcher != "" {
			return shellword.Quote(bin.Launcher)
		}
		if bin.Path != "" {
			return shellword.Quote(bin.Path)
		}
	}
	return or(configured, codex.DefaultBinary)
}
