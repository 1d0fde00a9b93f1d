// Package shimconfig is the contract of how a shim is started, shared by
// its two sides: the settings of one shim (Config) with their defaults and
// checks, rendered as flags by the parent that starts it (Args, package
// shim/shimclient) and read back by `batty shim` (ParseArgs, package shim),
// and where the shim finds its control channel (ControlFD, StdioFlag).
// Pure: it starts nothing.
package shimconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/battyhq/batty/codex"
)

// Defaults for Config.
const (
	DefaultQueueDepth    = 16
	DefaultTurnTimeout   = 60 * time.Minute
	DefaultIdleTimeout   = 10 * time.Minute
	DefaultNetworkWait   = 30 * time.Minute
	DefaultStopGrace     = 1 * time.Second
	DefaultContextWindow = 272000
	DefaultPressurePct   = 80
	DefaultRuntimeIdle   = 10 * time.Minute
	maxQueueDepth        = 1024
)

// Where `batty shim` finds its control channel.
const (
	// ControlFD is the descriptor a shim expects its control socket on.
	ControlFD = 3
	// StdioFlag makes `batty shim` speak its protocol on its stdin and
	// stdout instead of fd 3: the shim at the other end of a host's
	// transport (ssh, kubectl exec; see package hosts and
	// shimclient.SpawnOptions.Remote). The end of its stdin — the stream
	// cut, the parent gone — stops it like a closed socket does: the turn
	// in flight is stopped and everything the shim started is killed
	// before it exits.
	StdioFlag = "--stdio"
)

// Config is everything a shim needs to run one agent. The orchestrator
// builds it, turns it into flags with Args, and the shim reads them back with
// ParseArgs — all but Env and Instructions, which never become flags: a
// command line is readable by every local user (ps, /proc/<pid>/cmdline),
// so shimclient.Spawn hands them to the shim in the handshake's Welcome instead.
type Config struct {
	// Agent is the agent's name; it identifies the agent to codex commands
	// (BATTY_AGENT) and in the transcript.
	Agent string
	// Cwd is codex's working directory ("" = the shim's).
	Cwd string
	// Branch and Base are, for an agent working in a git worktree of its
	// own, its branch and the team's base branch (batty's section of its
	// instructions says so); "" for the project's shared checkout.
	Branch, Base string
	// CodexBin is the codex binary: a name on PATH or a path. The npm
	// launcher is bypassed for the native binary (see codex.ResolveBinary).
	CodexBin string
	// Exec holds the codex settings that become flags.
	Exec codex.ExecOptions
	// Env is extra KEY=VALUE environment for codex, over the shim's own. It
	// may hold secrets (API keys): not a flag, sent in the Welcome.
	Env []string
	// Instructions are the role's standing instructions, passed to codex on
	// every turn as developer instructions ("" = none). They must fit one
	// codex argument (codex.CheckInstructions). Not a flag, sent in the
	// Welcome.
	Instructions string
	// Runtime is how turns run: RuntimeExec, one `codex exec` process per
	// turn ("" = RuntimeExec), or RuntimeAppServer, one warm `codex
	// app-server` per shim (team.yaml: codex.runtime), which falls back to exec for
	// good when codex has no usable app-server.
	Runtime string
	// RuntimeIdle is, with RuntimeAppServer, how long the app-server may
	// stay idle (no turn running) before the shim stops it (its whole
	// process group); the next turn starts a new one and resumes the
	// thread. 0 means never. The flag's default is DefaultRuntimeIdle; a
	// Config built in code without it never stops the server.
	RuntimeIdle time.Duration
	// AppServerSocket is, with RuntimeAppServer, the unix socket of the
	// daemon's broker of a shared app-server (team.yaml: codex.app_server:
	// per-account; package codex/appshare): the shim runs its turns on
	// that process, over a connection of its own, instead of starting one
	// ("" = its own process).
	AppServerSocket string
	// EphemeralThreads, with RuntimeAppServer, starts every new thread
	// ephemeral (thread/start's ephemeral): codex keeps it in memory
	// only, writes no rollout and cannot resume it. For threads that are
	// never resumed (a fan-out row's), it halves codex's work per turn.
	EphemeralThreads bool
	// ThreadID is the thread to resume on the first turn ("" = fresh).
	ThreadID string
	// ForkFrom is a thread the first turn forks into a new thread that
	// carries its history (batty threads fork; "" = none). Not with
	// ThreadID.
	ForkFrom string
	// ThreadUsage is the thread-cumulative usage codex last reported for
	// ThreadID (the baseline the first turn's usage is measured from; zero
	// when unknown). Only meaningful with ThreadID.
	ThreadUsage codex.Usage
	// Transcript is the readable log path ("" = no transcript, unless
	// TranscriptStream).
	Transcript string
	// TranscriptStream sends the transcript's rendered lines to the parent
	// as protocol.TranscriptLines events instead of writing a file (a shim
	// on another host: the file is the daemon's). Transcript is ignored
	// then.
	TranscriptStream bool
	// RelayInboxes makes the agent's outbox under its BATTY_DIR (Env,
	// package outbox) and hands the requests the agent writes there (its
	// `batty send` and `batty merge`) to the parent, as protocol.Outgoing
	// events (see relay), for the parent to deliver as from this agent:
	// every shim of a team's agent, here or on another host.
	RelayInboxes bool
	// TranscriptRoot, if set, is the trusted directory the transcript lies
	// beneath (the project directory): no directory between it and the
	// transcript, nor the transcript, may be a symbolic link.
	TranscriptRoot string
	// AllowSockets are, for a shim on another host, the user's sockets
	// there (codex.Socket* names: the role's codex.allow_sockets) that a
	// permission profile with the network on leaves reachable when the
	// host completes it (hosts.PermissionsHere). A shim here gets its
	// profile complete and ignores them.
	AllowSockets []string
	// QueueDepth is how many messages may wait behind the turn in flight.
	QueueDepth int
	// TurnTimeout is the hard limit of one turn.
	TurnTimeout time.Duration
	// IdleTimeout ends a turn when codex prints nothing for this long while
	// no command of the model is running.
	IdleTimeout time.Duration
	// NetworkWait is how long a turn may wait for the network: from
	// codex's first "Reconnecting... waiting for network" notice until it
	// prints real output again. Codex never gives up by itself; past this
	// the turn is stopped and fails as protocol.FailNetwork. The idle
	// timeout does not run meanwhile (the notices are not output).
	NetworkWait time.Duration
	// StopGrace is how long codex gets to exit after SIGINT before its
	// process group is killed.
	StopGrace time.Duration
	// ContextWindow is the model's context window in tokens.
	ContextWindow int64
	// PressurePct is the context use (percent) from which a ContextPressure
	// event is sent after a turn.
	PressurePct float64
}

// WithDefaults returns c with its zero fields set to the defaults. Pure.
func (c Config) WithDefaults() Config {
	if c.CodexBin == "" {
		c.CodexBin = "codex"
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	if c.TurnTimeout == 0 {
		c.TurnTimeout = DefaultTurnTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.NetworkWait == 0 {
		c.NetworkWait = DefaultNetworkWait
	}
	if c.StopGrace == 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.ContextWindow == 0 {
		c.ContextWindow = DefaultContextWindow
	}
	if c.PressurePct == 0 {
		c.PressurePct = DefaultPressurePct
	}
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.Agent == "" {
		return errors.New("shim: --agent is required")
	}
	if c.QueueDepth < 1 || c.QueueDepth > maxQueueDepth {
		return fmt.Errorf("shim: --queue-depth %d out of range 1..%d", c.QueueDepth, maxQueueDepth)
	}
	for _, e := range c.Env {
		k, _, ok := strings.Cut(e, "=")
		switch {
		case !ok || k == "":
			return fmt.Errorf("shim: environment entry %.40q is not KEY=VALUE", e)
		case len(e)+1 > codex.MaxArgLen:
			return fmt.Errorf("shim: environment variable %s is %d bytes, more than Linux passes to a program (%d with the terminating NUL, MAX_ARG_STRLEN)", k, len(e), codex.MaxArgLen)
		}
	}
	if err := codex.CheckInstructions(c.Instructions); err != nil {
		return fmt.Errorf("shim: instructions: %w", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--turn-timeout", c.TurnTimeout}, {"--idle-timeout", c.IdleTimeout}, {"--network-wait", c.NetworkWait}, {"--stop-grace", c.StopGrace}, {"--runtime-idle", c.RuntimeIdle}} {
		if d.v < 0 {
			return fmt.Errorf("shim: %s %s is negative", d.name, d.v)
		}
	}
	if c.ForkFrom != "" && (c.ThreadID != "" || !codex.IsThreadID(c.ForkFrom)) {
		return errors.New("shim: --fork-thread takes a thread id, and no --thread-id (the fork is a new thread)")
	}
	if !c.ThreadUsage.IsZero() && c.ThreadID == "" {
		return errors.New("shim: --thread-usage needs --thread-id (it is the usage of that thread)")
	}
	if err := c.Exec.Validate(); err != nil {
		return fmt.Errorf("shim: %w", err)
	}
	if c.AppServerSocket != "" && c.Runtime != RuntimeAppServer {
		return fmt.Errorf("shim: --app-server-socket needs --runtime=%s", RuntimeAppServer)
	}
	return CheckRuntime(c.Runtime)
}

// ValidateThere is Validate for the configuration of a shim on another
// host as the daemon writes it (shimclient.SpawnOptions.Remote,
// ParseArgsThere): its permission profile may name paths under "~/" and
// is checked as such (codex.Permissions.ValidateThere); the shim there
// checks the whole once it has made it its host's (Validate).
func (c Config) ValidateThere() error {
	p := c.Exec.Permissions
	c.Exec.Permissions = nil
	if err := c.Validate(); err != nil {
		return err
	}
	if p != nil {
		if err := p.ValidateThere(); err != nil {
			return fmt.Errorf("shim: %w", err)
		}
	}
	return nil
}

func (c *Config) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Agent, "agent", "", "agent name")
	fs.StringVar(&c.Cwd, "cwd", "", "working directory for codex")
	fs.StringVar(&c.Branch, "branch", "", "the agent's worktree branch (batty's section of its instructions says so)")
	fs.StringVar(&c.Base, "base", "", "the team's base branch, with --branch")
	fs.StringVar(&c.CodexBin, "codex-bin", "codex", "codex binary (name on PATH or path)")
	fs.StringVar(&c.Exec.Model, "model", "", "model (codex -m)")
	fs.StringVar(&c.Exec.ReasoningEffort, "reasoning-effort", "", "model_reasoning_effort")
	fs.StringVar(&c.Exec.Sandbox, "sandbox", "", "codex sandbox mode")
	fs.StringVar(&c.Exec.ApprovalPolicy, "approval-policy", "", "codex approval_policy")
	fs.StringArrayVar(&c.Exec.AddDirs, "add-dir", nil, "extra directory the workspace-write sandbox lets codex write (repeatable)")
	fs.StringArrayVar(&c.Exec.Config, "codex-config", nil, "extra codex -c key=value override (repeatable)")
	fs.Var(permissionsValue{&c.Exec.Permissions}, "permissions", "the permission profile codex runs model commands under, in place of the workspace-write sandbox (JSON)")
	fs.StringVar(&c.Exec.OutputSchema, "output-schema", "", "JSON Schema file the final answer must match (codex --output-schema)")
	fs.StringArrayVar(&c.Exec.ExtraArgs, "codex-arg", nil, "extra codex exec argument (repeatable)")
	fs.BoolVar(&c.Exec.SkipGitRepoCheck, "skip-git-repo-check", true, "pass --skip-git-repo-check to codex")
	fs.StringVar(&c.Runtime, "runtime", "", "how turns run: "+RuntimeExec+" (one codex exec process per turn; the default) or "+RuntimeAppServer+" (one warm codex app-server)")
	fs.DurationVar(&c.RuntimeIdle, "runtime-idle", DefaultRuntimeIdle, "with --runtime="+RuntimeAppServer+", stop the app-server after this long without a turn (0 = never)")
	fs.StringVar(&c.AppServerSocket, "app-server-socket", "", "with --runtime="+RuntimeAppServer+", run turns on the shared app-server behind this broker socket instead of an own one")
	fs.StringVar(&c.ThreadID, "thread-id", "", "thread to resume on the first turn")
	fs.StringVar(&c.ForkFrom, "fork-thread", "", "thread the first turn forks into a new thread")
	fs.Var((*usageValue)(&c.ThreadUsage), "thread-usage", "the thread's cumulative usage codex last reported ("+usageFormat+")")
	fs.StringArrayVar(&c.AllowSockets, "allow-socket", nil, "on another host: a user's socket there the permission profile leaves reachable with the network on (repeatable)")
	fs.StringVar(&c.Transcript, "transcript", "", "readable transcript path")
	fs.BoolVar(&c.EphemeralThreads, "ephemeral-threads", false, "with --runtime="+RuntimeAppServer+", start new threads ephemeral: never saved, never resumed")
	fs.BoolVar(&c.RelayInboxes, "relay-inboxes", false, "make the agent's outbox under BATTY_DIR and hand its requests (batty send, batty merge) to the parent")
	fs.BoolVar(&c.TranscriptStream, "transcript-stream", false, "send the transcript's lines to the parent over the protocol instead of writing a file")
	fs.StringVar(&c.TranscriptRoot, "transcript-root", "", "directory beneath which no component of the transcript path may be a symbolic link")
	fs.IntVar(&c.QueueDepth, "queue-depth", DefaultQueueDepth, "messages that may wait behind the turn in flight")
	fs.DurationVar(&c.TurnTimeout, "turn-timeout", DefaultTurnTimeout, "hard limit of one turn")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", DefaultIdleTimeout, "end a turn after this long without codex output")
	fs.DurationVar(&c.NetworkWait, "network-wait", DefaultNetworkWait, "how long a turn may wait for codex to reach the API before it fails as network")
	fs.DurationVar(&c.StopGrace, "stop-grace", DefaultStopGrace, "time between SIGINT and SIGKILL when stopping codex")
	fs.Int64Var(&c.ContextWindow, "context-window", DefaultContextWindow, "model context window in tokens")
	fs.Float64Var(&c.PressurePct, "pressure-pct", DefaultPressurePct, "context use (%) that triggers a context_pressure event")
}

// FlagSet returns the shim's flags bound to c, for help output and parsing.
func (c *Config) FlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("batty shim", pflag.ContinueOnError)
	c.flags(fs)
	return fs
}

// ParseArgs parses shim flags (as produced by Config.Args) into a Config.
func ParseArgs(args []string) (Config, error) {
	c, err := parseArgs(args)
	if err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// ParseArgsThere is ParseArgs for a shim on another host (StdioFlag),
// checked with ValidateThere: its paths are still as the daemon wrote
// them, "~/" for the home directory there, and its permission profile is
// not complete yet. The shim checks it (Validate) once it has made it its
// host's.
func ParseArgsThere(args []string) (Config, error) {
	c, err := parseArgs(args)
	if err != nil {
		return Config{}, err
	}
	return c, c.ValidateThere()
}

// parseArgs parses shim flags into a Config with its defaults, unchecked.
func parseArgs(args []string) (Config, error) {
	var c Config
	fs := c.FlagSet()
	if err := fs.Parse(args); err != nil {
		return Config{}, fmt.Errorf("shim flags: %w", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("shim flags: unexpected argument %q", fs.Arg(0))
	}
	return c.WithDefaults(), nil
}

// Args renders c as shim flags; ParseArgs(c.Args()) yields c with
// defaults, without Env and Instructions (see Config).
func (c Config) Args() []string {
	c = c.WithDefaults()
	a := []string{"--agent=" + c.Agent}
	add := func(name, v string) {
		if v != "" {
			a = append(a, "--"+name+"="+v)
		}
	}
	add("cwd", c.Cwd)
	add("branch", c.Branch)
	add("base", c.Base)
	add("codex-bin", c.CodexBin)
	add("model", c.Exec.Model)
	add("reasoning-effort", c.Exec.ReasoningEffort)
	add("sandbox", c.Exec.Sandbox)
	add("approval-policy", c.Exec.ApprovalPolicy)
	for _, v := range c.Exec.AddDirs {
		add("add-dir", v)
	}
	for _, v := range c.Exec.Config {
		add("codex-config", v)
	}
	add("permissions", codex.EncodePermissions(c.Exec.Permissions))
	for _, v := range c.AllowSockets {
		add("allow-socket", v)
	}
	add("output-schema", c.Exec.OutputSchema)
	for _, v := range c.Exec.ExtraArgs {
		a = append(a, "--codex-arg="+v)
	}
	a = append(a, "--skip-git-repo-check="+strconv.FormatBool(c.Exec.SkipGitRepoCheck))
	add("runtime", c.Runtime)
	a = append(a, "--runtime-idle="+c.RuntimeIdle.String())
	add("app-server-socket", c.AppServerSocket)
	add("thread-id", c.ThreadID)
	add("fork-thread", c.ForkFrom)
	if !c.ThreadUsage.IsZero() {
		add("thread-usage", (*usageValue)(&c.ThreadUsage).String())
	}
	add("transcript", c.Transcript)
	if c.TranscriptStream {
		a = append(a, "--transcript-stream")
	}
	if c.EphemeralThreads {
		a = append(a, "--ephemeral-threads")
	}
	if c.RelayInboxes {
		a = append(a, "--relay-inboxes")
	}
	add("transcript-root", c.TranscriptRoot)
	a = append(a,
		"--queue-depth="+strconv.Itoa(c.QueueDepth),
		"--turn-timeout="+c.TurnTimeout.String(),
		"--idle-timeout="+c.IdleTimeout.String(),
		"--network-wait="+c.NetworkWait.String(),
		"--stop-grace="+c.StopGrace.String(),
		"--context-window="+strconv.FormatInt(c.ContextWindow, 10),
		"--pressure-pct="+strconv.FormatFloat(c.PressurePct, 'g', -1, 64),
	)
	return a
}

// permissionsValue is the --permissions flag: a codex.Permissions as JSON.
type permissionsValue struct{ p **codex.Permissions }

func (v permissionsValue) String() string {
	if v.p == nil {
		return ""
	}
	return codex.EncodePermissions(*v.p)
}

func (v permissionsValue) Set(s string) error {
	p, err := codex.DecodePermissions(s)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

func (v permissionsValue) Type() string { return "json" }
