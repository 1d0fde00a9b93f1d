package offline

import (
	"context"
	"time"

	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/teamstatus"
	"github.com/battyhq/batty/workspaces"
)

// offlineRepoWait bounds the git commands of a stopped team's status.
const offlineRepoWait = 30 * time.Second

// offlineWorkspaces adds to st, the status of a stopped team, each
// worktree agent's workspace and the merge queue as its state file holds
// it: what one wants to see before a prune. A repository or queue that
// cannot be read leaves them out: the rest of the status stands.
func offlineWorkspaces(cfg *team.Config, l project.Layout, st *control.Status) {
	if !cfg.UsesWorktrees() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), offlineRepoWait)
	defer cancel()
	repo, err := workspaces.Open(ctx, workspaces.Options{ProjectDir: l.Root(), WorktreesDir: l.WorktreesDir(), LockFile: l.GitLock()})
	if err != nil {
		return
	}
	base, err := repo.ResolveBase(ctx, cfg.Workspace.Base)
	if err != nil {
		return
	}
	for i, a := range st.Agents {
		def, ok := cfg.Agent(a.Name)
		if !ok || def.Workspace != team.WorkspaceWorktree {
			continue
		}
		ws, err := repo.State(ctx, a.Name, base)
		if err != nil {
			continue
		}
		if h, ok := cfg.Host(def.Host); ok && def.Host != "" {
			// Its worktree is a clone on its host: the branch here is
			// what came back; the clone is not looked at.
			ws.Path, ws.Exists, ws.Dirty = clones.Where(h.Name, h.ProjectDir(l.Root()), a.Name), false, 0
		}
		st.Agents[i].Workspace = teamstatus.Workspace(base, ws)
	}
	q, err := landing.Open(landing.Options{Layout: l, TopLevel: repo.TopLevel(), WorktreesDir: l.WorktreesDir(), Base: base})
	if err != nil {
		return
	}
	st.Landings = teamstatus.Landings(q.List())
}
