// Package team loads, validates and expands a batty team file (team.yaml).
//
// A team file names a set of roles. Every role expands into one or more
// agents; every agent is one long-lived Codex thread. The package turns the
// file into a fully defaulted, validated [Config], answers questions about
// who may message whom, and writes the example files used by `batty init`.
//
// The file format is documented in docs/config.md.
package team

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
)

// Human is the reserved recipient name that stands for the person running
// batty. It may not be used as a role name; every agent may message it.
const Human = "human"

// StateNames are reserved role names: the daemon keeps its own state in
// .batty/state/<name>.json, where an agent's state would also go (an agent
// is named after its role when the role has one instance). "landing" is
// also the inbox of the merge queue (LandingBox).
var StateNames = []string{"dispatch", "quota", "schedules", "landing", "budgets"}

// MayLand reports whether from (the human or an agent) may queue the
// landing of agent's branch (`batty merge`): the human may land any; an
// agent its own, or that of an agent its role may message (talks_to), as
// an architect lands its engineers' work.
func MayLand(c *Config, from, agent string) bool {
	return from == Human || from == agent || c.MayTalk(from, agent)
}

// LandingBox is the inbox that `batty merge` writes landing requests into
// (.batty/inboxes/landing): the body names the agent whose branch lands.
const LandingBox = "landing"

// MaxNameLen is the maximum length, in bytes, of a team, role or agent name.
const MaxNameLen = 40

// MaxInstances is the largest allowed value of a role's instances key.
const MaxInstances = 100

// MaxAgents is the most agents a team may have, all roles' instances
// together. Every agent is a long-lived shim process with a socket, a
// transcript and a watched inbox, plus a codex process of ≈ 45 MB for each
// turn it runs; 256 agents working at once already need over 10 GB of
// memory and share one account's rate limits — far beyond a team one
// person coordinates. A larger figure is a typo (instances on the wrong
// role, a generated file gone wrong), refused before anything starts.
const MaxAgents = 256

// ErrNoTeamFile is wrapped by the error FindFile returns when no team file
// was found.
var ErrNoTeamFile = errors.New("no team file found")

// ErrUnknownRecipient is wrapped by the error ResolveRecipient returns for a
// name that is neither "human", an agent nor a role.
var ErrUnknownRecipient = errors.New("unknown recipient")

// Config is a loaded and validated team file. Every default has been
// applied, every path is absolute, and every role's Codex settings are the
// effective ones (team defaults merged with the role's overrides).
// A Config returned by Load or Parse is never modified by this package and is
// safe for concurrent use by multiple goroutines.
type Config struct {
	// Name is the team name; it matches ValidName.
	Name string
	// Codex holds the team-wide Codex defaults (before role overrides).
	Codex CodexSettings
	// Timeouts are the team's turn, idle and shutdown limits; all positive.
	Timeouts Timeouts
	// BacklogLimit bounds the durable backlog, between 1 and 100000: the
	// messages waiting or in flight in each agent's inbox, and the messages
	// waiting in each role queue. `batty send` beyond it is refused; the
	// daemon routes a role-queue message only to an instance below it.
	BacklogLimit int
	// MaxAttempts bounds how often one message is tried when its attempts
	// fail in a way that may pass by itself (a server error, an overloaded
	// model, a rate limit, a dropped stream, a timeout, an unreachable
	// API), between 1 (never retried) and 100.
	MaxAttempts int
	// OnAlert is the command run for every alert (on_alert): the program —
	// a name looked up on PATH or an absolute path — and its arguments, run
	// without a shell. Nil when the file sets none.
	OnAlert []string
	// AlertOnReply adds an alert of kind "reply" whenever an agent replies
	// to the human (alert_on_reply).
	AlertOnReply bool
	// Quota says which agents a usage limit pauses together and when they
	// try again.
	Quota Quota
	// Workspace holds the settings of the agents that work in git
	// worktrees (the workspace mapping), defaulted even when no role uses
	// them.
	Workspace WorkspaceSettings
	// Hosts are the other machines agents run on (hosts), in file order;
	// nil when the file defines none.
	Hosts []Host
	// Limits are the team's caps on its turns running at once (limits);
	// each host's own cap is its Host.ConcurrentTurns.
	Limits Limits
	// Roles are the roles in file order; there is at least one.
	Roles []Role
	// Schedules are the scheduled prompts in file order (schedules); their
	// names are unique and each To resolves to agents of the team.
	Schedules []Schedule
	// Budgets are the token budgets in file order (budgets); each For is
	// BudgetTeam, a role or an agent of the team, and Key is unique.
	Budgets []Budget
	// Pricing is pricing: each model's price (its name as codex.model
	// sets it), for the cost column of `batty usage`; nil when the file
	// sets none.
	Pricing map[string]Price
	// Console is the web console the daemon serves (console); on by
	// default, on 127.0.0.1 and a free port.
	Console Console
	// Telemetry is the metrics and traces the daemon exports (telemetry);
	// off by default.
	Telemetry Telemetry
	// Accounts are the team's named Codex homes (the accounts key), in file
	// order; nil when the file has none.
	Accounts []Account
	// Path is the absolute path of the team file.
	Path string
	// Dir is the directory containing the team file (filepath.Dir(Path));
	// relative paths in the file are resolved against it.
	Dir string
	// file is the team file's path as given to Parse, for the File of the
	// problems WorkspaceProblems reports ("" in a Config built by hand:
	// then Path is used).
	file string
	// lines are the lines of the team file that set on_alert ("on_alert"),
	// the team's codex.bin ("codex.bin") and a role's
	// ("roles.<role>.codex.bin"); nil when none is set.
	lines map[string]int
}

// CodexSettings describes how to run the Codex worker of an agent.
type CodexSettings struct {
	// Bin is the codex executable: a name looked up on PATH, or an absolute
	// path (relative paths containing a separator are resolved against the
	// team file's directory). Never empty.
	Bin string
	// Model is the model name; empty means Codex's own default.
	Model string
	// ReasoningEffort is one of minimal, low, medium, high, xhigh, or empty
	// for Codex's own default.
	ReasoningEffort string
	// Sandbox is one of read-only, workspace-write, danger-full-access.
	Sandbox string
	// ApprovalPolicy is one of untrusted, on-failure, on-request, never.
	ApprovalPolicy string
	// Runtime is how the agent's turns run: RuntimeExec (one `codex exec`
	// process per turn, the default) or RuntimeAppServer (one warm `codex
	// app-server` per agent, kept while its shim runs). Never empty in a
	// parsed Config.
	Runtime string
	// RuntimeIdle is runtime_idle: with RuntimeAppServer, how long the
	// agent's app-server may stay idle (no turn) before it is stopped, to
	// be started again, its thread resumed, on the next message; 0 means
	// never. DefaultRuntimeIdle in a parsed Config unless the file says.
	RuntimeIdle time.Duration
	// AppServer is app_server: with RuntimeAppServer, whose process runs
	// the agent's turns — AppServerPerAgent (its own, the default) or
	// AppServerPerAccount (one process per Codex account, CODEX_HOME, on
	// each machine, shared by every agent placed on it). Never empty in a
	// parsed Config.
	AppServer string
	// Args are extra `codex exec` arguments, passed verbatim. May be nil.
	Args []string
	// Config maps dotted Codex config keys to values already rendered as
	// TOML (strings quoted, booleans and numbers bare), ready to be passed
	// as `-c key=value`. Callers should sort the keys for a stable command
	// line. May be nil.
	Config map[string]string
	// Env is extra environment for the codex process. May be nil.
	Env map[string]string
	// CodexHome is the CODEX_HOME for the worker as an absolute path, or
	// empty to inherit the environment's.
	CodexHome string
	// ContextWindow is the model's context window in tokens as set by
	// context_window, 0 when unset (then Window gives the model's known
	// window). It turns context usage into a percentage.
	ContextWindow int
	// HandoffPct is context_handoff_pct (1–100), 0 when unset (then
	// Handoff gives DefaultHandoffPct): a turn that used this share of the
	// window makes the agent hand off to a fresh thread when it is next idle.
	HandoffPct int
	// AllowSockets is allow_sockets: the user's sockets (UserSockets) a
	// workspace-write agent with the network on may reach again. By
	// default its permission profile denies them all and its commands'
	// environment names none. May be nil.
	AllowSockets []string
}

// The user's sockets an agent with the network on is kept from, by the
// names allow_sockets gives one back with (the codex.Socket* names: see
// codex.Permissions.HideUserSockets).
const (
	SocketSSHAgent   = codex.SocketSSHAgent
	SocketGPGAgent   = codex.SocketGPGAgent
	SocketSessionBus = codex.SocketSessionBus
	SocketDocker     = codex.SocketDocker
	SocketRuntimeDir = codex.SocketRuntimeDir
)

// UserSockets are the values allow_sockets takes.
var UserSockets = []string{SocketSSHAgent, SocketGPGAgent, SocketSessionBus, SocketDocker, SocketRuntimeDir}

// Runtimes: the values of CodexSettings.Runtime (the shim's --runtime).
const (
	// RuntimeExec runs one `codex exec` process per turn (the default).
	RuntimeExec = "exec"
	// RuntimeAppServer runs the agent's turns on one warm `codex
	// app-server` process, kept while the agent's shim runs.
	RuntimeAppServer = "app-server"
)

// App-server modes: the values of CodexSettings.AppServer.
const (
	// AppServerPerAgent gives each agent's shim a `codex app-server` of
	// its own (the default).
	AppServerPerAgent = "per-agent"
	// AppServerPerAccount runs one `codex app-server` per Codex account
	// on each machine, which the daemon owns and every agent placed on
	// that account shares, each on a thread of its own.
	AppServerPerAccount = "per-account"
)

// DefaultRuntimeIdle is runtime_idle when the file does not set it.
const DefaultRuntimeIdle = 10 * time.Minute

// Quota scopes: which agents one usage limit pauses.
const (
	// QuotaScopeAccount pauses every agent with the same effective
	// CODEX_HOME (the default).
	QuotaScopeAccount = "account"
	// QuotaScopeAgent pauses only the agent that hit the limit.
	QuotaScopeAgent = "agent"
	// QuotaScopeTeam pauses the whole team.
	QuotaScopeTeam = "team"
)

// Quota is the team's usage-limit policy.
type Quota struct {
	// Scope is one of the QuotaScope constants.
	Scope string
	// BackoffMax caps the back-off after a probe turn hits the limit again
	// (1m doubling), at least 1m.
	BackoffMax time.Duration
	// WarnPct is the share of a rate-limit window, in percent (1–100),
	// at which an account's usage raises one alert (quota.warn_pct,
	// DefaultWarnPct).
	WarnPct int
	// Cooldown is how long to wait before the first probe after a limit
	// that named no reset time; it doubles per probe that hits the limit
	// again, up to CooldownMax (≥ Cooldown).
	Cooldown, CooldownMax time.Duration
}

// Timeouts are the team's time limits.
type Timeouts struct {
	// Turn is the hard limit for one turn.
	Turn time.Duration
	// Idle is how long a turn may go without any output from codex before
	// it is considered timed out.
	Idle time.Duration
	// NetworkWait is how long a turn may wait for codex to reach the API
	// (codex retries a refused connection forever) before it fails as a
	// network failure.
	NetworkWait time.Duration
	// Shutdown is how long `batty stop` lets running turns finish.
	Shutdown time.Duration
	// Alert is how long an on_alert command may run before it is killed.
	Alert time.Duration
}

// Role is one validated role of a team.
type Role struct {
	// Name is the role name; it matches ValidName and is never "human".
	Name string
	// Instances is the number of agents of this role, 1..MaxInstances.
	Instances int
	// Prompt is the absolute path of the role's standing instructions, or
	// empty when the role has none. When set, the file existed and was
	// readable at load time.
	Prompt string
	// Instructions is the text of the Prompt file as read at load time,
	// without surrounding blank space ("" when there is none). Loading
	// refused it unless it fits one codex argument with room for batty's
	// own section (codex.CheckInstructions), so Codex can always be given
	// both.
	Instructions string
	// TalksTo lists the role names this role's agents may message, in file
	// order without duplicates. "human" is never listed: it is always
	// allowed. A role listing itself lets its instances message each other.
	TalksTo []string
	// Cwd is the absolute working directory of the role's agents; it was an
	// existing directory at load time.
	Cwd string
	// Workspace is where the role's agents work: WorkspaceShared (the
	// project checkout, the default) or WorkspaceWorktree (a git worktree
	// per agent). Empty, possible only in a Config built by hand, counts as
	// WorkspaceShared.
	Workspace string
	// Codex is the role's effective Codex settings. When Accounts is set,
	// Codex.CodexHome is the first account's.
	Codex CodexSettings
	// Hosts are the names of the hosts its instances run on, in turn
	// (round robin), each a Config.Hosts name or LocalHost, at most once;
	// nil runs them all on this machine.
	Hosts []string
	// Accounts are the accounts the role's agents may run on, in order of
	// preference (the role's accounts key); nil when the role names none
	// (the agents run on Codex.CodexHome only).
	Accounts []Account
	// Line is the line of the team file where the role is defined.
	Line int
}

// Agent is one expanded instance of a role.
type Agent struct {
	// Name is the agent name: the role name when the role has one instance,
	// otherwise "<role>-<index>". It matches ValidName.
	Name string
	// Role is the name of the agent's role.
	Role string
	// Index is the 1-based instance number, or 0 when the role has a single
	// instance.
	Index int
	// Prompt is the absolute path of the role's prompt file, or empty.
	Prompt string
	// Instructions is the role's Instructions: the prompt file's text.
	Instructions string
	// Cwd is the absolute working directory.
	Cwd string
	// Workspace is the role's Workspace: WorkspaceShared or
	// WorkspaceWorktree.
	Workspace string
	// Codex is the role's effective Codex settings (a private copy).
	Codex CodexSettings
	// Host is the name of the host (Config.Host) the agent runs on, ""
	// for this machine: instance i of a role takes the role's Hosts in
	// turn, Hosts[(i-1) % len(Hosts)].
	Host string
	// Accounts is the role's Accounts (a private copy).
	Accounts []Account
}

// ValidName reports whether s is a valid team, role or agent name: it
// matches ^[a-z0-9][a-z0-9-]*$ and is at most MaxNameLen bytes long. Valid
// names are safe to use as a single path element.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// agentName returns the name of instance i (1-based) of a role with n
// instances.
func agentName(role string, n, i int) string {
	if n <= 1 {
		return role
	}
	return role + "-" + strconv.Itoa(i)
}

// Agents returns every agent of the team, in role order and, within a role,
// in instance order. The result, including each agent's Codex slices and
// maps, is freshly allocated on every call. A role whose Instances is below
// 1 (possible only in a Config built by hand) counts as one instance.
func (c *Config) Agents() []Agent {
	var out []Agent
	for _, r := range c.Roles {
		n := max(r.Instances, 1)
		for i := 1; i <= n; i++ {
			a := Agent{
				Name:         agentName(r.Name, n, i),
				Role:         r.Name,
				Prompt:       r.Prompt,
				Instructions: r.Instructions,
				Cwd:          r.Cwd,
				Workspace:    r.Workspace,
				Codex:        r.Codex.clone(),
				Accounts:     slices.Clone(r.Accounts),
			}
			if n > 1 {
				a.Index = i
			}
			a.Host = r.host(a.Index)
			out = append(out, a)
		}
	}
	return out
}

// Agent returns the agent with the given name and whether it exists.
// "human" is not an agent.
func (c *Config) Agent(name string) (Agent, bool) {
	r, i, ok := c.agentRole(name)
	if !ok {
		return Agent{}, false
	}
	return Agent{Name: name, Role: r.Name, Index: i, Prompt: r.Prompt, Instructions: r.Instructions, Cwd: r.Cwd, Workspace: r.Workspace, Codex: r.Codex.clone(), Accounts: slices.Clone(r.Accounts), Host: r.host(i)}, true
}

// agentRole returns the role of the named agent and the agent's index.
func (c *Config) agentRole(name string) (Role, int, bool) {
	for _, r := range c.Roles {
		n := max(r.Instances, 1)
		if n == 1 {
			if name == r.Name {
				return r, 0, true
			}
			continue
		}
		rest, ok := strings.CutPrefix(name, r.Name+"-")
		if !ok {
			continue
		}
		if i, err := strconv.Atoi(rest); err == nil && i >= 1 && i <= n && strconv.Itoa(i) == rest {
			return r, i, true
		}
	}
	return Role{}, 0, false
}

// ResolveRecipient maps a `batty send` target to agents:
//   - "human" returns (nil, nil): the message is for the person running batty;
//   - an agent name returns that single agent;
//   - a role name returns every instance of the role, in instance order;
//   - anything else returns an error wrapping ErrUnknownRecipient whose text
//     suggests the closest name and lists every valid one.
//
// Agent and role names never collide except for a single-instance role,
// whose only agent shares its name, so the lookup order does not matter.
func (c *Config) ResolveRecipient(name string) ([]Agent, error) {
	if name == Human {
		return nil, nil
	}
	agents := c.Agents()
	for _, a := range agents {
		if a.Name == name {
			return []Agent{a}, nil
		}
	}
	var out []Agent
	for _, a := range agents {
		if a.Role == name {
			out = append(out, a)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	known := []string{Human}
	for _, r := range c.Roles {
		known = append(known, r.Name)
	}
	for _, a := range agents {
		if !slices.Contains(known, a.Name) {
			known = append(known, a.Name)
		}
	}
	msg := fmt.Sprintf("%q", name)
	if s := closest(name, known); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	}
	return nil, fmt.Errorf("%w %s (known: %s)", ErrUnknownRecipient, msg, strings.Join(known, ", "))
}

// SendBox is where a message from the sender from (an agent or Human)
// to to (an agent, a role or Human) goes, as `batty send` delivers it:
// box is the recipient's box (the agent's name, "@role" for a role of
// several instances, Human for the human); target is the agent talks_to
// is checked against (the recipient, or for a role its first instance
// other than from; "" for the human), and allowed whether from may
// message it (always, for the human as sender or recipient). err is
// ResolveRecipient's: to names nobody. It is a pure function.
func (c *Config) SendBox(from, to string) (box, target string, allowed bool, err error) {
	agents, err := c.ResolveRecipient(to)
	if err != nil {
		return "", "", false, err
	}
	if len(agents) == 0 {
		return Human, "", true, nil
	}
	target = agents[0].Name
	for _, a := range agents {
		if a.Name != from {
			target = a.Name
			break
		}
	}
	box = agents[0].Name
	if len(agents) > 1 {
		box = "@" + agents[0].Role
	}
	return box, target, from == Human || c.MayTalk(from, target), nil
}

// MayTalk reports whether fromAgent may send a message to toAgent. Both are
// agent names or "human":
//   - "human" may message every agent;
//   - every agent may message "human";
//   - an agent may message an agent of another role when its role lists
//     that role in talks_to;
//   - instances of the same role may message each other only when the role
//     lists itself in talks_to.
//
// Nobody may message themselves, and unknown names (including role names of
// multi-instance roles) are never allowed.
func (c *Config) MayTalk(fromAgent, toAgent string) bool {
	if fromAgent == toAgent {
		return false
	}
	var toRole Role
	if toAgent != Human {
		r, _, ok := c.agentRole(toAgent)
		if !ok {
			return false
		}
		toRole = r
	}
	if fromAgent == Human {
		return true
	}
	fromRole, _, ok := c.agentRole(fromAgent)
	if !ok {
		return false
	}
	return toAgent == Human || slices.Contains(fromRole.TalksTo, toRole.Name)
}

// clone returns a deep copy of s.
func (s CodexSettings) clone() CodexSettings {
	s.Args = slices.Clone(s.Args)
	s.AllowSockets = slices.Clone(s.AllowSockets)
	s.Config = cloneMap(s.Config)
	s.Env = cloneMap(s.Env)
	return s
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// FindFile locates the team file. A non-empty explicit path is returned
// unchanged if it names an existing file (and is an error otherwise).
// Without one it tries ./team.yaml, then ./.batty/team.yaml, relative to the
// current directory, and returns the first that exists as a relative path.
// When nothing is found the error wraps ErrNoTeamFile, names every path tried
// and suggests `batty init`.
func FindFile(explicit string) (string, error) {
	if explicit != "" {
		st, err := os.Stat(explicit)
		if err != nil {
			return "", fmt.Errorf("team file %s: %w", explicit, err)
		}
		if st.IsDir() {
			return "", fmt.Errorf("team file %s is a directory, not a file", explicit)
		}
		return explicit, nil
	}
	tried := []string{"team.yaml", filepath.Join(".batty", "team.yaml")}
	for _, p := range tried {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return p, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("looking for team file %s: %w", p, err)
		}
	}
	return "", fmt.Errorf("%w: tried ./%s and ./%s; run `batty init` to create one",
		ErrNoTeamFile, tried[0], tried[1])
}
