// Package host is where a shim runs, behind one interface: this machine
// (Local) or another of the team's hosts reached through ssh or a
// command (Remote). The daemon, `batty fanout` and `batty workspace
// prune` reach a host only through Host; what differs between the two
// (paths, how a shim starts, where the workspace is, what a thread can
// carry) is decided here and nowhere else. Both implementations pass the
// one conformance suite (host_test.go's both).
package host

import (
	"context"
	"fmt"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// Host is where a shim runs: its configuration and codex's target as the
// host sees them, how a shim starts there, whether it answers, the check
// of its Codex, an agent's workspace there and what it can carry. Its
// methods are safe from any goroutine; those taking a context block for
// the work there, which ctx cuts short.
type Host interface {
	// Name is the host's name in the team file; "" for this machine.
	Name() string
	// ShimConfig is c, a shim's configuration here, as the host sees it
	// (paths in the project and the home directory there, no
	// transcript file when it is not here). Pure.
	ShimConfig(c shimconfig.Config) shimconfig.Config
	// Target is how agent def runs codex with CODEX_HOME home (the
	// role's when ""), as the host sees it, for the check of its Codex
	// (Check): on a host, a worktree agent's is checked in the home
	// directory there, its clone being made before its first turn. Pure.
	Target(def team.Agent, home string) preflight.Target
	// Precheck is what must hold before a shim of configuration c (the
	// host's, ShimConfig) is started there by a job that starts many
	// (`batty fanout --hosts`): on a host, batty installed and its Codex
	// checked (Check of t); here nothing, a shim that cannot start
	// failing as itself. Nil when it holds.
	Precheck(ctx context.Context, t preflight.Target) *preflight.Problem
	// SharesAppServer reports whether agents there may run on a shared
	// app-server of the daemon's: its broker's socket is on this machine.
	SharesAppServer() bool
	// Rooms is r, what the permission profile of agent's shim is made
	// of here, as the host sees it (see Rooms).
	Rooms(agent string, r Rooms) Rooms
	// Permit gives c, a shim's configuration as the host sees it, the
	// permission profile p made of its Rooms: here, p without what is
	// missing here; on a host, p as it is with the sockets the role
	// gives back (allow), which the shim there completes it with
	// (hosts.PermissionsHere), and no added directories (p has them).
	Permit(c *shimconfig.Config, p *codex.Permissions, allow []string)
	// Sandbox is p, how a command runs here in Codex's sandbox (a
	// worktree's setup), as the host sees it; nil stays nil. Pure.
	Sandbox(p *sandbox.Policy) *sandbox.Policy
	// Spawn is o, the options of a shim whose Config is already the
	// host's (ShimConfig), made to start it there: the batty installed
	// there and the stream that reaches it. It errs when the shim cannot
	// start there yet (batty not installed there).
	Spawn(ctx context.Context, o shimclient.SpawnOptions) (shimclient.SpawnOptions, error)
	// Ready reports whether a shim can start there now: here always; on
	// a host once batty is installed there (when the installation is
	// someone else's: Remote.Installed).
	Ready() bool
	// Probe reports whether the host answers: nil when it does.
	Probe(ctx context.Context) error
	// Check runs the check of codex's target t (already the host's,
	// Target) there. The error says the host could not be asked (not
	// reached, batty not installable there); what the check found is the
	// report's Problem.
	Check(ctx context.Context, t preflight.Target) (preflight.Report, error)
	// WatchDirs are the directories here where a fix of codex's target t
	// (already the host's) shows up, for a watch that checks it again at
	// once: the binary's directory (every directory on PATH for a bare
	// name), CODEX_HOME home and its parent ("" for the default, not
	// watched). None on a host: nothing here shows its fix, the back-off
	// checks it.
	WatchDirs(t preflight.Target, home string) []string
	// Unreachable is the problem of the host when it could not be
	// reached or asked (err, from Probe, Check or Spawn), with its fix;
	// then is appended to the fix ("" for nothing).
	Unreachable(err error, then string) *preflight.Problem
	// Workspace is agent's workspace on the host, its branch the one in
	// repo here, made from base.
	Workspace(repo *workspaces.Repo, agent, base string) Workspace
	// ThreadsPortable reports whether codex there runs with the
	// CODEX_HOMEs here: a thread's rollouts are here, so that a thread
	// can be carried from one account to another (codex.CarryThread),
	// and an account (a CODEX_HOME here) can be given to a shim there.
	ThreadsPortable() bool
	// Close ends what reaching the host keeps open (a shared
	// connection), after its last shim has stopped.
	Close(ctx context.Context) error
}

// Rooms are what an agent's permission profile is made of: its outbox
// (writable), the directories denied to it and the environment its codex
// starts with, as far as it is known where the profile is made.
type Rooms struct {
	Outbox string
	Deny   []string
	Env    []string
	// There says the profile is completed on the host: its paths may be
	// under "~/", the home directory there (codex.Permissions.ValidateThere).
	There bool
}

// Workspace is an agent's workspace on a host: the daemon's
// workspaces.Workspace, and its removal.
type Workspace interface {
	workspaces.Workspace
	// Removal names what Prune removes, for the person who asked
	// ("the worktree and branch batty/eng-1").
	Removal() string
	// Prune removes the workspace and the agent's branch here (see
	// workspaces.Repo.Prune): refused while work is unlanded or
	// uncommitted, unless force, which keeps it under
	// refs/batty/archive/ first.
	Prune(ctx context.Context, force bool, now time.Time) (workspaces.PruneResult, error)
}

// Start starts a shim of o (its Config already the host's) on h and
// returns its client. It blocks until the handshake is done.
func Start(ctx context.Context, h Host, o shimclient.SpawnOptions) (*shimclient.Client, error) {
	o, err := h.Spawn(ctx, o)
	if err != nil {
		return nil, err
	}
	return shimclient.Start(ctx, o)
}

// For is the host agent def runs on as the team file cfg names it: the
// zero Host (this machine) when def names none. It errs when def names a
// host cfg does not have.
func For(cfg *team.Config, def team.Agent) (team.Host, error) {
	if def.Host == "" {
		return team.Host{}, nil
	}
	h, ok := cfg.Host(def.Host)
	if !ok {
		return team.Host{}, fmt.Errorf("agent %s names the unknown host %q", def.Name, def.Host)
	}
	return h, nil
}

// On is the host of the team file h as a caller reaches it: this machine
// (local) for a zero h (no name, as --hosts' "local" is), else remote with
// its Host set to h. It is the one place outside the implementations that
// tells the two apart.
func On(h team.Host, local Local, remote Remote) Host {
	if h.Name == "" {
		return local
	}
	remote.Host = h
	return &remote
}
