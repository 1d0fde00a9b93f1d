package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// Remote is one of the team's hosts, reached through Transport (ssh, or
// the host's command): paths are the project's and the home's there, a
// shim starts there with the batty installed there, over a stream; the
// workspace is a clone there (package clones); a thread's rollouts stay
// there, so it is not carried between accounts.
type Remote struct {
	Transport *hosts.Transport
	Host      team.Host
	// Root is the project directory here; Home the home directory here
	// ("" when unknown).
	Root, Home string
	// Batty is the batty installed there, installing it when needed; it
	// blocks for the installation. nil: Binary installed there by
	// hosts.EnsureBatty (at most hosts.InstallTimeout).
	Batty func(ctx context.Context) (string, error)
	// Binary is the batty to install there when Batty is nil (hosts.Self).
	Binary hosts.Binary
	// Installed, when set, is the batty installed there without
	// installing it ("" while it is not): a shim starts only with it.
	// nil: Batty.
	Installed func() string
	// CheckTimeout bounds each codex run of a check (0:
	// preflight.DefaultTimeout).
	CheckTimeout time.Duration
	// MinFree and GitTimeout are the clones' (see clones.Client).
	MinFree    uint64
	GitTimeout time.Duration
	// OldClone, when set, is told of a clone an earlier batty kept in
	// the project directory there (clones.Client.OldClone); agent names
	// whose.
	OldClone func(agent, old, where string)
}

var _ Host = (*Remote)(nil)

// Name is the host's name in the team file.
func (r *Remote) Name() string { return r.Host.Name }

// Dir is the project directory there (team.Host.ProjectDir): "~/" is
// the home directory there.
func (r *Remote) Dir() string { return r.Host.ProjectDir(r.Root) }

// ShimConfig is c as the host sees it (hosts.ShimConfig): a transcript
// here is streamed (the shim there has no file here), the team file the
// roster beside the state directory there (hosts.RosterThere), which
// the daemon writes there.
func (r *Remote) ShimConfig(c shimconfig.Config) shimconfig.Config {
	stream := c.Transcript != ""
	c = hosts.ShimConfig(c, r.Dir(), r.Root, r.Home)
	c.TranscriptStream = c.TranscriptStream || stream
	if agentenv.Lookup(c.Env, agentenv.TeamFile) != "" {
		env := slices.Clone(c.Env)
		for i, e := range env {
			if k, _, _ := strings.Cut(e, "="); k == agentenv.TeamFile {
				env[i] = k + "=" + hosts.RosterThere(r.Dir())
			}
		}
		c.Env = env
	}
	return c
}

// Rooms is r on the host: the agent's outbox in the project's state
// directory there, that directory's children denied but the clone
// repository, which its git reads (hosts.DeniedThere: the clones, the
// outboxes, state/; the shim there makes them first,
// hosts.MakeDeniedState), no environment known here, completed there.
func (r *Remote) Rooms(agent string, _ Rooms) Rooms {
	return Rooms{Outbox: outbox.Path(hosts.StateDir(r.Dir()), agent), Deny: hosts.DeniedThere(r.Dir()), There: true}
}

// Permit gives c p as it is, the sockets allow to give back, and no
// added directories.
func (r *Remote) Permit(c *shimconfig.Config, p *codex.Permissions, allow []string) {
	c.Exec.Permissions, c.Exec.AddDirs = p, nil
	c.AllowSockets = slices.Clone(allow)
}

// Target is def's as the host sees it (hosts.TargetThere); a worktree
// agent's runs in the home directory there (its clone, and the project
// directory holding it, are made before its first turn).
func (r *Remote) Target(def team.Agent, home string) preflight.Target {
	t := hosts.TargetThere(preflight.TargetFor(def, home), r.Dir(), r.Root, r.Home)
	if def.Workspace == team.WorkspaceWorktree {
		t.Cwd = ""
	}
	return t
}

// Precheck installs batty there when needed and checks its Codex (t):
// the host's problem when it cannot be reached or asked, the check's
// when it found one.
func (r *Remote) Precheck(ctx context.Context, t preflight.Target) *preflight.Problem {
	rep, err := r.Check(ctx, t)
	if err != nil {
		return r.Unreachable(err, "")
	}
	return rep.Problem
}

// SharesAppServer is false: the daemon's broker is on this machine, so
// agents there run an app-server of their own there.
func (r *Remote) SharesAppServer() bool { return false }

// Sandbox is p as the host sees it (hosts.SandboxThere).
func (r *Remote) Sandbox(p *sandbox.Policy) *sandbox.Policy { return hosts.SandboxThere(p, r.Home) }

// Ready reports whether batty is installed there (Installed), true when
// Spawn installs it itself (no Installed).
func (r *Remote) Ready() bool { return r.Installed == nil || r.Installed() != "" }

// ErrNotInstalled is Spawn's error while batty is not installed on the
// host.
var ErrNotInstalled = errors.New("batty is not installed")

// Spawn is o started there: the batty installed there (`batty shim`),
// through the transport in the shim's directory there, with a handshake
// that allows for the connection.
func (r *Remote) Spawn(ctx context.Context, o shimclient.SpawnOptions) (shimclient.SpawnOptions, error) {
	var batty string
	if r.Installed != nil {
		if batty = r.Installed(); batty == "" {
			return o, fmt.Errorf("%w on host %s", ErrNotInstalled, r.Host.Name)
		}
	} else {
		var err error
		if batty, err = r.ensure(ctx); err != nil {
			return o, err
		}
	}
	o.Path, o.Args = batty, []string{"shim"}
	o.Remote = r.Transport.ShimCommand(r.Host, o.Config.Cwd)
	o.HandshakeTimeout = hosts.ShimHandshakeTimeout
	return o, nil
}

// Probe runs `true` there.
func (r *Remote) Probe(ctx context.Context) error {
	_, err := r.Transport.Run(ctx, r.Host, "true", nil)
	return err
}

// Check installs batty there when needed, then runs the host's preflight
// of t (hosts.Inspect), bounded by hosts.PreflightLimit.
func (r *Remote) Check(ctx context.Context, t preflight.Target) (preflight.Report, error) {
	batty, err := r.ensure(ctx)
	if err != nil {
		return preflight.Report{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, hosts.PreflightLimit(r.CheckTimeout))
	defer cancel()
	return hosts.Inspect(ctx, r.Transport, r.Host, batty, t)
}

// WatchDirs are none: nothing here shows a fix there.
func (r *Remote) WatchDirs(preflight.Target, string) []string { return nil }

// Unreachable is hosts.Unreachable: the ssh command, or the host's
// command, that must work from here.
func (r *Remote) Unreachable(err error, then string) *preflight.Problem {
	return hosts.Unreachable(r.Host, err, then)
}

// Workspace is agent's clone there (Clone), whose Prepare first gives up
// a worktree the agent has here (its role ran here before): its work
// committed on its branch (Prepared.Released), which goes to the host.
func (r *Remote) Workspace(repo *workspaces.Repo, agent, base string) Workspace {
	return cloneWorkspace{r.Clone(repo, agent, base)}
}

// cloneWorkspace is a clone on a host as an agent's Workspace.
type cloneWorkspace struct{ *clones.Client }

// Removal is "the branch batty/<agent> and the clone on host <name>".
func (w cloneWorkspace) Removal() string {
	return "the branch " + workspaces.Branch(w.Agent) + " and the clone on host " + w.Host.Name
}

func (w cloneWorkspace) Prepare(ctx context.Context, o workspaces.PrepareOptions) (workspaces.Prepared, error) {
	// A git step is never cut short by ctx (see workspaces.Workspace.Prepare).
	gctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if o.GitTimeout > 0 {
		gctx, cancel = context.WithTimeout(gctx, o.GitTimeout)
	}
	released, err := w.Repo.Release(gctx, w.Agent)
	cancel()
	if err != nil {
		return workspaces.Prepared{}, err
	}
	p, err := w.Client.Prepare(ctx, o)
	p.Released = released
	return p, err
}

// Clone is agent's clone there, its branch the one in repo here made
// from base: the client of the clone there (clones.Client).
func (r *Remote) Clone(repo *workspaces.Repo, agent, base string) *clones.Client {
	c := &clones.Client{Transport: r.Transport, Host: r.Host, Dir: r.Dir(), Batty: r.ensure,
		Repo: repo, Agent: agent, Base: base, MinFree: r.MinFree, Timeout: r.GitTimeout}
	if r.OldClone != nil {
		c.OldClone = func(old string) { r.OldClone(agent, old, c.Where()) }
	}
	return c
}

// ensure is the batty installed there (Batty, or Binary installed).
func (r *Remote) ensure(ctx context.Context) (string, error) {
	if r.Batty != nil {
		return r.Batty(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, hosts.InstallTimeout)
	defer cancel()
	return hosts.EnsureBatty(ctx, r.Transport, r.Host, r.Binary)
}

// ThreadsPortable is false: the rollouts are in CODEX_HOME there.
func (r *Remote) ThreadsPortable() bool { return false }

// Close ends the shared connection to the host.
func (r *Remote) Close(ctx context.Context) error { return r.Transport.Close(ctx, r.Host) }
