package workspaces

import (
	"context"
	"strings"
	"time"

	"github.com/battyhq/batty/sandbox"
)

// Workspace is one agent's workspace as the daemon drives it: where the
// agent works, on its branch batty/<agent> off the team's base branch.
// Local is the workspace in a worktree of the project's repository here;
// another implementation keeps the worktree on another host and the
// branch here in step with it. Every implementation passes the same
// conformance suite. A Workspace is used by one goroutine at a time (the
// agent's); each method blocks until done or ctx ends.
type Workspace interface {
	// Prepare makes the worktree when it is missing (never resetting one
	// that exists), commits what an earlier run left uncommitted in it,
	// and runs the setup command once. A merge left in the worktree with
	// conflict markers (see Unresolved) is no failure: it stays in
	// progress, nothing is committed, and Prepared.Unresolved names its
	// files. A failed setup is a *SetupError;
	// too little disk for a new worktree is ErrLowDisk. Ending ctx cuts
	// the setup short, never a git command (a git killed half way leaves
	// its index.lock), which o.GitTimeout bounds instead.
	Prepare(ctx context.Context, o PrepareOptions) (Prepared, error)
	// Commit commits what changed in the worktree (see Repo.Commit); ci's
	// Agent is the workspace's. It returns the branch's head, whether a
	// commit was made and the nested repositories left out.
	Commit(ctx context.Context, ci CommitInfo) (Committed, error)
	// MergeBase merges the base branch as it is here into the agent's
	// branch, leaving a conflict in the worktree (see Repo.MergeBase).
	MergeBase(ctx context.Context) (SyncResult, error)
	// State is the workspace against the base branch as it is here.
	State(ctx context.Context) (State, error)
	// Where is where the worktree is, for people: a path here, or
	// host:path.
	Where() string
}

// PrepareOptions configure Workspace.Prepare.
type PrepareOptions struct {
	Setup        string        // the team's workspace.setup, "" for none
	SetupTimeout time.Duration // its time limit (0: none)
	// SetupSandbox is how setup runs inside Codex's sandbox, writing only
	// the worktree and what it lists; nil runs it without a sandbox.
	SetupSandbox *sandbox.Policy
	GitTimeout   time.Duration // the limit of each git step (0: none but ctx's)
}

// Prepared is what Prepare did.
type Prepared struct {
	Made     bool   // the worktree exists (its setup may still have failed)
	Created  bool   // it was checked out now
	Leftover string // the commit of work an earlier run left uncommitted, "" when none
	// Released is the commit of what a worktree here held when the
	// workspace is elsewhere (a clone on a host): given up first, its
	// work committed on the branch (Repo.Release); "" when none.
	Released string `json:",omitempty"`
	// Unresolved are the files of a merge in progress that still hold
	// conflict markers (UnresolvedError.Files): what an earlier run left
	// stays uncommitted until the agent has resolved them.
	Unresolved []string `json:",omitempty"`
}

// SetupError is a setup command that failed, with the end of its output.
type SetupError struct {
	Err    error
	Output string
}

func (e *SetupError) Error() string {
	if strings.TrimSpace(e.Output) == "" {
		return "workspace setup failed: " + e.Err.Error()
	}
	return "workspace setup failed: " + e.Err.Error() + "\n" + e.Output
}

func (e *SetupError) Unwrap() error { return e.Err }

// Local is agent's Workspace in a worktree of Repo here.
type Local struct {
	Repo  *Repo
	Agent string
	Base  string
}

var _ Workspace = Local{}

// gitContext is the context of a git step of Prepare: not ended by ctx,
// bounded by limit (none when 0). cancel must be called.
func gitContext(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	g := context.WithoutCancel(ctx)
	if limit <= 0 {
		return context.WithCancel(g)
	}
	return context.WithTimeout(g, limit)
}

// Prepare implements Workspace.
func (l Local) Prepare(ctx context.Context, o PrepareOptions) (Prepared, error) {
	var p Prepared
	gctx, cancel := gitContext(ctx, o.GitTimeout)
	defer cancel()
	var err error
	if p.Created, err = l.Repo.Ensure(gctx, l.Agent, l.Base); err != nil {
		return p, err
	}
	p.Made = true
	c, err := l.Repo.Commit(gctx, CommitInfo{Agent: l.Agent, Subject: "work left uncommitted when the team last stopped", WIP: true})
	switch files := Unresolved(err); {
	case files != nil:
		// The agent's merge goes on: its files and what else it left
		// wait in the worktree, committed with the merge once resolved.
		p.Unresolved = files
	case err != nil:
		return p, err
	case c.Made:
		p.Leftover = c.Head
	}
	if o.Setup != "" {
		if out, err := l.Repo.Setup(ctx, l.Agent, SetupOptions{Command: o.Setup, Timeout: o.SetupTimeout, Sandbox: o.SetupSandbox}); err != nil {
			return p, &SetupError{Err: err, Output: out}
		}
	}
	return p, nil
}

// Commit implements Workspace.
func (l Local) Commit(ctx context.Context, ci CommitInfo) (Committed, error) {
	ci.Agent = l.Agent
	return l.Repo.Commit(ctx, ci)
}

// MergeBase implements Workspace.
func (l Local) MergeBase(ctx context.Context) (SyncResult, error) {
	return l.Repo.MergeBase(ctx, l.Agent, l.Base)
}

// State implements Workspace.
func (l Local) State(ctx context.Context) (State, error) {
	return l.Repo.State(ctx, l.Agent, l.Base)
}

// Where implements Workspace.
func (l Local) Where() string { return l.Repo.Path(l.Agent) }
