package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// Local is this machine: paths are as they are, a shim starts as o says,
// the check runs here, the workspace is a worktree of the project's
// repository and threads can be carried between accounts.
type Local struct {
	// Checker runs the check of codex here (nil: a zero Checker).
	Checker *preflight.Checker
}

var _ Host = Local{}

// Name is "": this machine.
func (Local) Name() string { return "" }

// ShimConfig is c.
func (Local) ShimConfig(c shimconfig.Config) shimconfig.Config { return c }

// Target is preflight.TargetFor(def, home).
func (Local) Target(def team.Agent, home string) preflight.Target {
	return preflight.TargetFor(def, home)
}

// Precheck is nil: a shim that cannot start here fails as itself.
func (Local) Precheck(context.Context, preflight.Target) *preflight.Problem { return nil }

// SharesAppServer is true: the broker is here.
func (Local) SharesAppServer() bool { return true }

// Rooms is r.
func (Local) Rooms(_ string, r Rooms) Rooms { return r }

// Permit gives c p without what is missing here.
func (Local) Permit(c *shimconfig.Config, p *codex.Permissions, _ []string) {
	present := p.WithoutMissing()
	c.Exec.Permissions = &present
}

// Sandbox is p.
func (Local) Sandbox(p *sandbox.Policy) *sandbox.Policy { return p }

// Spawn is o.
func (Local) Spawn(_ context.Context, o shimclient.SpawnOptions) (shimclient.SpawnOptions, error) {
	return o, nil
}

// Ready is true: a shim starts here at once.
func (Local) Ready() bool { return true }

// Probe is nil: this machine answers.
func (Local) Probe(context.Context) error { return nil }

// Check runs l's Checker on t here.
func (l Local) Check(ctx context.Context, t preflight.Target) (preflight.Report, error) {
	c := l.Checker
	if c == nil {
		c = &preflight.Checker{}
	}
	return c.Inspect(ctx, t), nil
}

// WatchDirs are the binary's directory (PATH's for a bare name), home
// and its parent; none empty.
func (Local) WatchDirs(t preflight.Target, home string) []string {
	var dirs []string
	if strings.ContainsRune(t.Bin, '/') {
		dirs = append(dirs, filepath.Dir(t.Bin))
	} else {
		dirs = append(dirs, filepath.SplitList(os.Getenv("PATH"))...)
	}
	if home != "" {
		dirs = append(dirs, home, filepath.Dir(home))
	}
	return slices.DeleteFunc(dirs, func(d string) bool { return d == "" })
}

// Unreachable is a spawn problem: this machine is always reached, so err
// is one of starting here.
func (Local) Unreachable(err error, then string) *preflight.Problem {
	fix := "fix it"
	if then != "" {
		fix += ", " + then
	}
	return &preflight.Problem{Kind: preflight.KindSpawn, Detail: err.Error(), Fix: fix}
}

// Workspace is agent's worktree of repo here.
func (Local) Workspace(repo *workspaces.Repo, agent, base string) Workspace {
	return localWorkspace{workspaces.Local{Repo: repo, Agent: agent, Base: base}}
}

// ThreadsPortable is true: the rollouts are in CODEX_HOME here.
func (Local) ThreadsPortable() bool { return true }

// Close has nothing to close.
func (Local) Close(context.Context) error { return nil }

// localWorkspace is a worktree here with its prune.
type localWorkspace struct{ workspaces.Local }

// Removal is "the worktree and branch batty/<agent>".
func (w localWorkspace) Removal() string {
	return "the worktree and branch " + workspaces.Branch(w.Agent)
}

func (w localWorkspace) Prune(ctx context.Context, force bool, now time.Time) (workspaces.PruneResult, error) {
	return w.Repo.Prune(ctx, w.Agent, w.Base, force, now)
}
