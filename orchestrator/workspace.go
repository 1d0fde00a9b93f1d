package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/teamstatus"
	"github.com/battyhq/batty/workspaces"
)

// Agents with `workspace: worktree` work in a git worktree of their own
// (package workspaces): made from the team's base branch before the
// agent's first shim starts, committed after every turn, and committed as
// work in progress before anything could lose an edit (the shim exits or
// is killed, the thread is reset, the team stops, an earlier run left the
// worktree dirty). The agent's goroutine owns its workspace; git runs
// with a deadline so a wedged git cannot hold the agent for ever.

// gitTimeout bounds one workspace operation other than setup (a commit of
// a large tree included).
const gitTimeout = 2 * time.Minute

// ProblemWorkspace is the preflight.Kind of an agent parked because its
// worktree cannot be made or its setup failed.
const ProblemWorkspace preflight.Kind = "workspace"

// openRepo opens the project's repository when the team has worktree
// agents (nil, "" when it has none) and resolves the base branch: the
// team's workspace.base, else the branch checked out in the project.
func (d *Daemon) openRepo(ctx context.Context) (*workspaces.Repo, string, error) {
	if !d.cfg.UsesWorktrees() {
		return nil, "", nil
	}
	o := workspaces.Options{
		ProjectDir:   d.layout.Root(),
		WorktreesDir: d.layout.WorktreesDir(),
		LockFile:     d.layout.GitLock(),
		Env:          d.markedEnv(),
		MinFreeBytes: d.opts.WorktreeMinFree,
	}
	if d.reaper != nil {
		o.Starter = d.reaper
	}
	repo, err := workspaces.Open(ctx, o)
	if err != nil {
		return nil, "", fmt.Errorf("%s: roles with `workspace: worktree` need the project in a git repository: %w", d.cfg.Path, err)
	}
	// The worktrees an earlier batty kept in the project, where agents
	// sharing the checkout could write them, move to the state directory.
	moved, err := repo.MoveWorktrees(ctx, d.layout.LegacyWorktreesDir())
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", d.cfg.Path, err)
	}
	if len(moved.Agents)+len(moved.Recheckout)+len(moved.Removed) > 0 {
		d.log.Info("Moved the worktrees into the state directory", "from", d.layout.LegacyWorktreesDir(), "to", d.layout.WorktreesDir(),
			"moved", moved.Agents, "checked_out_again", moved.Recheckout, "removed", moved.Removed)
	}
	if len(moved.Left) > 0 {
		d.log.Warn("Left alone in the old worktrees directory (not worktrees of the repository)", "dir", d.layout.LegacyWorktreesDir(), "entries", moved.Left)
	}
	// What a daemon killed mid-way through a clone's step left in the
	// git directory (only the daemon makes such files).
	if n := repo.SweepTemp(0, time.Now()); n > 0 {
		d.log.Info("Removed temporary files a stopped daemon left", "dir", repo.GitDir(), "files", n)
	}
	base, err := repo.ResolveBase(ctx, d.cfg.Workspace.Base)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", d.cfg.Path, err)
	}
	return repo, base, nil
}

// markedEnv is the daemon's environment with the project's mark: git,
// setup and verify carry it, so that what a daemon killed mid-command
// leaves is found and killed at the next start, as the shims' leftovers
// are.
func (d *Daemon) markedEnv() []string {
	return append(os.Environ(), reap.MarkEnv+"="+d.layout.Dir)
}

// agentWorkspace is an agent's workspace: a worktree here, or for an
// agent on another host a clone there whose commits come back into its
// branch here (package clones). Only the agent's goroutine uses it,
// except state, which status reads under the agent's mu (snap).
type agentWorkspace struct {
	ws    workspaces.Workspace
	repo  *workspaces.Repo // the project's, here
	agent string
	base  string
	setup string
	limit time.Duration   // setup's time limit
	sb    *sandbox.Policy // how setup runs in Codex's sandbox, nil: without
	// prev is the clone on the host the agent worked on before, to be
	// retired before the workspace is prepared; nil when none.
	prev *clones.Client
}

func newAgentWorkspace(d *Daemon, a *agent) *agentWorkspace {
	def := a.def
	if d.repo == nil || def.Workspace != team.WorkspaceWorktree {
		return nil
	}
	w := &agentWorkspace{repo: d.repo, agent: def.Name, base: d.base, setup: d.cfg.Workspace.Setup, limit: d.cfg.Workspace.SetupTimeout, sb: d.sandbox("setup"),
		ws: a.where().Workspace(d.repo, def.Name, d.base)}
	w.sb = a.where().Sandbox(w.sb)
	if a.prevHost != nil {
		w.prev = a.prevHost.remote.Clone(d.repo, def.Name, d.base)
	}
	return w
}

// oldCloneNotice tells the user that agent's clone on host, which an
// earlier batty kept at old in the project directory there, is no longer
// used: the clone is now where (host:path). Pure.
func oldCloneNotice(agent, host, old, where string) string {
	return "The clone of " + agent + " on host " + host + " is now " + where + ", in the project's state directory there. " +
		"The one an earlier batty kept in the project directory there, " + old + ", is no longer used or read " +
		"(an agent working in the project there could write it): " + workspaces.Branch(agent) + " here, which had its commits after every step, " +
		"is what the new clone starts from; anything left uncommitted in the old one was not brought. " +
		"Copy what you want from it, then remove it, and " + path.Join(path.Dir(path.Dir(old)), "repo") + " once no old clone is left."
}

// prepared is what preparing a worktree did: whether it was made now,
// the commit of work an earlier run left in it ("" when none).
type prepared struct {
	workspaces.Prepared
	retired string // the branch's commit after the clone on the host it left was retired
	err     error
	state   workspaceRead // the worktree's state once prepared (or not)
}

// retireError is the clone on the host an agent worked on before, which
// could not be retired: its work is not all here yet.
type retireError struct {
	host string
	err  error
}

func (e *retireError) Error() string {
	return "its clone on host " + e.host + ", where it worked before, could not be brought here: " + e.err.Error()
}

func (e *retireError) Unwrap() error { return e.err }

// prepare makes the worktree when it is missing (never resetting one that
// exists), commits what an earlier run left uncommitted in it, and runs
// the team's setup once. An agent on a host that had a worktree here
// (its role ran here before) gives it up first, its work committed on
// its branch, which goes to the host. It blocks until done or ctx ends.
func (w *agentWorkspace) prepare(ctx context.Context) prepared {
	var p prepared
	if w.prev != nil {
		// The agent moved off that host: the clone's work comes here
		// (committed there first), then the clone goes.
		if p.retired, p.err = w.prev.Retire(ctx); p.err != nil {
			p.err = &retireError{host: w.prev.Host.Name, err: p.err}
			return p
		}
		w.prev = nil
	}
	p.Prepared, p.err = w.ws.Prepare(ctx, workspaces.PrepareOptions{Setup: w.setup, SetupTimeout: w.limit, SetupSandbox: w.sb, GitTimeout: gitTimeout})
	return p
}

// problem is how a failed prepare parks the agent.
func (w *agentWorkspace) problem(err error) *preflight.Problem {
	var re *retireError
	if errors.As(err, &re) {
		fix := "bring host " + re.host + " back, then `batty resume " + w.agent + "`; or take it out of the team file's hosts to leave that work there"
		if !errors.Is(err, clones.ErrHost) {
			fix = "make " + workspaces.Branch(w.agent) + " here contain the clone's branch on " + re.host + " (merge them by hand), then `batty resume " + w.agent + "`"
		}
		return &preflight.Problem{Kind: ProblemWorkspace, Detail: w.agent + ": " + re.Error(), Fix: fix}
	}
	var se *workspaces.SetupError
	if errors.As(err, &se) {
		return &preflight.Problem{Kind: ProblemWorkspace, Detail: se.Error(),
			Fix: "fix the setup command (workspace.setup) or what it needs, then `batty resume " + w.agent + "`"}
	}
	fix := "fix the repository or the worktree, then `batty resume " + w.agent + "`"
	switch {
	case errors.Is(err, workspaces.ErrLowDisk):
		fix = "free disk space there, then `batty resume " + w.agent + "`"
	case errors.Is(err, clones.ErrNoGit):
		fix = "install git on that host (for instance `apt install git`), then `batty resume " + w.agent + "`"
	}
	return &preflight.Problem{Kind: ProblemWorkspace, Detail: "worktree " + w.ws.Where() + ": " + err.Error(), Fix: fix}
}

// commit commits what changed in the worktree: a turn's work (subject from
// message m, its id as the trailer) or, wip, work in progress (see
// workspaces.Workspace.Commit).
func (w *agentWorkspace) commit(m *inbox.Message, wip bool, why string) (workspaces.Committed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	ci := workspaces.CommitInfo{Agent: w.agent, Subject: why, WIP: wip}
	if m != nil {
		ci.MessageID = m.ID
		if s := firstLine(m.Body); s != "" {
			ci.Subject = s
		}
	}
	return w.ws.Commit(ctx, ci)
}

// firstLine is the first non-empty line of s, trimmed.
func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

// state reads the workspace's state against the base.
func (w *agentWorkspace) state() (workspaces.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	return w.ws.State(ctx)
}

// startShim starts the agent's shim; a worktree agent's worktree is
// prepared first, off the agent's goroutine (prepDone answers). Run's
// goroutine only.
func (a *agent) startShim() {
	if a.ws == nil {
		a.spawn()
		return
	}
	if a.prepDone != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan prepared, 1)
	a.prepDone, a.prepCancel = done, cancel
	a.setSnap(func(s *agentSnap) { s.state = agentPreparing })
	go func(w *agentWorkspace) { done <- w.prepare(ctx) }(a.ws)
}

// agentPreparing is the state of a worktree agent whose worktree is being
// made or set up.
const agentPreparing = "preparing"

// workspacePrepared applies the end of the worktree's preparation
// (worktree.prepared decides): the shim starts, the agent parks with the
// problem until `batty resume`, or, when the clone's host did not answer,
// it is tried again as a shim that could not start there would be
// (unreachable with the back-off, or a crash when the host answers).
func (a *agent) workspacePrepared(p prepared) {
	switch a.worktree.prepared(p) {
	case prepHostDown:
		a.crashedOrUnreachable()
		return
	case prepFailed:
		a.setSnap(func(s *agentSnap) { s.state = agentParked })
		a.syncParked()
		a.showWorkspace(p.state)
		return
	}
	if a.st.WorkspaceHost != a.def.Host {
		a.st.WorkspaceHost = a.def.Host
		a.saveState()
	}
	a.syncParked()
	a.showWorkspace(p.state)
	if !a.stopping {
		a.spawn()
	}
}

// prepOutcome is what the end of a worktree's preparation means for the
// agent (worktree.prepared).
type prepOutcome int

const (
	prepReady    prepOutcome = iota // the worktree is ready: the shim starts
	prepFailed                      // it could not be prepared: the agent parks (wsProblem)
	prepHostDown                    // its clone's host did not answer
)

// prepared records the end of the worktree's preparation p: what it did
// goes to the event log (work released here or left by an earlier run,
// the worktree made, a left host's work brought here), a merge left with
// conflict markers is remembered (mergeLeft: the agent is reminded of
// it, never parked for it), and what parks the agent is set or cleared.
func (w *worktree) prepared(p prepared) prepOutcome {
	w.prepDone, w.prepCancel = nil, nil
	w.wsMade = w.wsMade || p.Made
	if p.Released != "" {
		w.events(eventlog.Event{Type: eventlog.EvWorkspaceCommitted, Agent: w.agent,
			Detail: "work left in the worktree here, before the agent works on its host", Data: eventlog.WorkspaceCommitted{Commit: p.Released, WIP: true}})
	}
	if p.Created {
		w.events(eventlog.Event{Type: eventlog.EvWorkspaceCreated, Agent: w.agent,
			Detail: w.ws.ws.Where(), Data: eventlog.WorkspaceCreated{Branch: workspaces.Branch(w.agent), Base: w.ws.base}})
	}
	if p.Leftover != "" {
		w.events(eventlog.Event{Type: eventlog.EvWorkspaceCommitted, Agent: w.agent,
			Detail: "work an earlier run left uncommitted", Data: eventlog.WorkspaceCommitted{Commit: p.Leftover, WIP: true}})
	}
	w.mergeLeft(p.Unresolved)
	if hostDown(p.err) {
		w.log.Warn("The clone on the host could not be prepared", "error", p.err)
		return prepHostDown
	}
	if p.err != nil {
		w.wsProblem = w.ws.problem(p.err)
		w.log.Error("Workspace not ready", "error", p.err)
		return prepFailed
	}
	if p.retired != "" {
		w.events(eventlog.Event{Type: eventlog.EvWorkspaceCommitted, Agent: w.agent,
			Detail: "the work of its clone on the host it left, brought here", Data: eventlog.WorkspaceCommitted{Commit: p.retired, Branch: workspaces.Branch(w.agent)}})
	}
	w.wsProblem = nil
	return prepReady
}

// hostDown reports whether a preparation failed with err because its
// clone's host did not answer (not the host the agent left: that parks
// it).
func hostDown(err error) bool {
	var re *retireError
	return errors.Is(err, clones.ErrHost) && !errors.As(err, &re)
}

// commitWorkspace commits the worktree's changes (see agentWorkspace.commit)
// off run's goroutine (a step, see startStep), announces the commit, and
// then calls then on run's goroutine; with nothing to commit (see commits)
// then is called at once. A failure is a warning (the edits stay in the
// worktree, committed at the next chance). Run's goroutine only.
func (a *agent) commitWorkspace(m *inbox.Message, wip bool, why string, then func()) {
	if !a.commits() {
		// No worktree yet, or being made: nothing to commit.
		then()
		return
	}
	var msg *inbox.Message
	if m != nil {
		c := *m
		msg = &c
	}
	w := a.ws
	a.startStep(func() func() {
		c, err := w.commit(msg, wip, why)
		var st workspaceRead
		if err == nil && c.Made {
			// Only a commit changes what status shows: a turn that changed
			// nothing costs no second scan of the tree.
			st = w.readState()
		}
		return func() {
			if a.worktree.committed(msg, wip, why, c, err) {
				a.showWorkspace(st)
			}
			then()
		}
	})
}

// committed records the end of a commit of the worktree (c, or err),
// made for message m (nil for none): its event, the merge it left
// (mergeLeft) and the nested repositories it left out (tellNested). It
// reports whether a commit was made: only a commit changes what status
// shows of the worktree.
func (w *worktree) committed(m *inbox.Message, wip bool, why string, c workspaces.Committed, err error) bool {
	files := workspaces.Unresolved(err)
	w.mergeLeft(files)
	if files != nil {
		// No failure: the merge waits for the agent.
		return false
	}
	if err != nil {
		w.log.Warn("Committing the worktree failed", "error", err)
		w.events(eventlog.Event{Type: eventlog.EvWarning, Agent: w.agent, Detail: "worktree not committed: " + err.Error()})
		return false
	}
	if m != nil {
		w.tellNested(m.ID, c.Nested)
	}
	if m != nil {
		w.turnCommit = turnCommit{msg: m.ID}
		if c.Made {
			w.turnCommit.head, w.turnCommit.files = c.Head, c.Files
		}
	}
	if !c.Made {
		return false
	}
	ev := eventlog.Event{Type: eventlog.EvWorkspaceCommitted, Agent: w.agent, Detail: why,
		Data: eventlog.WorkspaceCommitted{Commit: c.Head, WIP: wip, Branch: workspaces.Branch(w.agent)}}
	if m != nil {
		ev.Message = m.ID
	}
	w.events(ev)
	return true
}

// tellNested tells the agent, once per daemon, of the repositories nested
// in its worktree that its commits leave out (workspaces.Repo.Commit), in
// a message answering req, the message of the turn that made them; a
// warning says so in the event log.
func (w *worktree) tellNested(req string, nested []string) {
	fresh := untold(w.nestedTold, nested)
	if len(fresh) == 0 {
		return
	}
	if w.nestedTold == nil {
		w.nestedTold = map[string]bool{}
	}
	for _, p := range fresh {
		w.nestedTold[p] = true
	}
	w.events(eventlog.Event{Type: eventlog.EvWarning, Agent: w.agent, Message: req,
		Detail: "nested git repositories not committed: " + strings.Join(fresh, ", "), Data: eventlog.Warning{Paths: fresh}})
	w.tell(req, nestedNote(fresh))
}

// untold returns the paths of nested not in told, in order. It is a pure
// function.
func untold(told map[string]bool, nested []string) []string {
	var fresh []string
	for _, p := range nested {
		if !told[p] {
			fresh = append(fresh, p)
		}
	}
	return fresh
}

// nestedNote tells an agent, in plain words, that batty does not commit
// the git repositories nested in its worktree, why, and what to do. It is
// a pure function.
func nestedNote(paths []string) string {
	return fmt.Sprintf("[batty] Not committed: %s. Each is a git repository inside your worktree (it holds a .git directory or file). "+
		"batty never commits a nested repository: git would then look inside it every time batty reads your worktree, "+
		"and run what its configuration names, outside your sandbox. Its files are not part of your branch and will not land. "+
		"If they belong in the project, remove the nested .git (for example `rm -rf %s/.git`) and they are committed as ordinary files at the end of your turn; "+
		"if they do not, move the repository out of your worktree.",
		strings.Join(paths, ", "), paths[0])
}

// workspaceRead is the worktree's state as a step read it (err: it could
// not; both zero: not read).
type workspaceRead struct {
	st  *workspaces.State
	err error
}

// readState reads the worktree's state for status. It runs git: off run's
// goroutine only.
func (w *agentWorkspace) readState() workspaceRead {
	st, err := w.state()
	if err != nil {
		return workspaceRead{err: err}
	}
	return workspaceRead{st: &st}
}

// showWorkspace has status show r, the worktree's state a step read.
func (a *agent) showWorkspace(r workspaceRead) {
	if r.err != nil {
		a.log.Warn("Reading the worktree's state failed", "error", r.err)
	}
	if r.st == nil {
		return
	}
	a.setSnap(func(s *agentSnap) { s.workspace = r.st })
}

// workspaceStatus is what status shows of a worktree agent's workspace
// (nil: none, or not read yet).
func workspaceStatus(base string, st *workspaces.State) *control.WorkspaceStatus {
	if st == nil {
		return nil
	}
	return teamstatus.Workspace(base, *st)
}
