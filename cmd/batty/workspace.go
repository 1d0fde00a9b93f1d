package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
	"github.com/battyhq/batty/writable"
)

// repoOptions are the options of the project's repository as the daemon
// opens it.
func repoOptions(p project.Project) workspaces.Options {
	return workspaces.Options{ProjectDir: p.Layout.Root(), WorktreesDir: p.Layout.WorktreesDir(), LockFile: p.Layout.GitLock()}
}

// openTeamRepo opens the project's repository for the worktree agents of
// cfg, moves the worktrees an earlier batty kept in the project into the
// state directory (workspaces.Repo.MoveWorktrees, as the daemon does at
// start) and resolves the team's base branch.
func openTeamRepo(ctx context.Context, p project.Project, cfg *team.Config) (*workspaces.Repo, string, error) {
	repo, err := workspaces.Open(ctx, repoOptions(p))
	if err != nil {
		return nil, "", err
	}
	if _, err := repo.MoveWorktrees(ctx, p.Layout.LegacyWorktreesDir()); err != nil {
		return nil, "", err
	}
	base, err := repo.ResolveBase(ctx, cfg.Workspace.Base)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", cfg.Path, err)
	}
	return repo, base, nil
}

// loadStartableTeam is loadTeamProject for a command about to start the
// team's daemon: it also runs the checks of the team file that need git
// (repoProblems), so that a team whose worktree agents could not work is
// refused before anything starts, the way an invalid team file is. It only
// reads.
func (f *Factory) loadStartableTeam(ctx context.Context, teamFile string) (project.Project, *team.Config, error) {
	p, cfg, err := f.Team(teamFile)
	if err != nil {
		return p, nil, err
	}
	if verr := repoProblems(ctx, p, cfg); verr != nil {
		return p, nil, fmt.Errorf("team file %s is invalid:\n%w", p.TeamFile, verr)
	}
	// Before anything stops or starts: a named program an agent could
	// replace is refused, with the fix.
	if err := writable.CheckTeam(cfg, p.Layout, os.Getenv); err != nil {
		return p, nil, fmt.Errorf("team file %s: %w", p.TeamFile, err)
	}
	return p, cfg, nil
}

// repoProblems runs the checks of cfg's workspace settings that need git
// (team.Config.WorkspaceProblems) on the repository of project p: that the
// project is in a git work tree and that the base branch exists. It
// returns them as a *team.ValidationError, nil when there is none (always
// when no role works in a worktree: git is not run then). It blocks while
// git runs and only reads: nothing is created.
func repoProblems(ctx context.Context, p project.Project, cfg *team.Config) *team.ValidationError {
	problems := cfg.WorkspaceProblems(func(base string) error {
		repo, err := workspaces.Open(ctx, repoOptions(p))
		if err != nil {
			return classifyRepoError(p.Layout.Root(), err)
		}
		_, err = repo.ResolveBase(ctx, base)
		return classifyRepoError(p.Layout.Root(), err)
	})
	if len(problems) == 0 {
		return nil
	}
	return &team.ValidationError{Problems: problems}
}

// repoCheckError is an error of the repository check that
// team.Config.WorkspaceProblems classifies: it reads as text and matches
// both kind (team.ErrNotGitRepository, team.ErrNoBaseBranch) and the error
// of package workspaces it comes from (errors.Is).
type repoCheckError struct {
	kind  error
	text  string
	cause error
}

func (e *repoCheckError) Error() string   { return e.text }
func (e *repoCheckError) Unwrap() []error { return []error{e.kind, e.cause} }

// classifyRepoError turns an error of workspaces.Open or
// Repo.ResolveBase for the project in root into what
// team.Config.WorkspaceProblems reports: workspaces.ErrNotRepository
// becomes team.ErrNotGitRepository, workspaces.ErrUnknownBase
// team.ErrNoBaseBranch (naming the branch and the existing ones), so that
// the problem suggests the fix; any other error, and nil, is returned as
// it is. It is a pure function.
func classifyRepoError(root string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workspaces.ErrNotRepository):
		return &repoCheckError{kind: team.ErrNotGitRepository, cause: err,
			text: fmt.Sprintf("the project %s is not in a git repository", root)}
	case errors.Is(err, workspaces.ErrUnknownBase):
		// The problem is reported at the workspace key already.
		return &repoCheckError{kind: team.ErrNoBaseBranch, cause: err,
			text: strings.TrimPrefix(err.Error(), "workspace.base: ")}
	}
	return err
}

// loadWorktreeAgent loads the team of teamFile and checks that name is an
// agent of it working in a worktree (the start of merge, diff and prune).
func (f *Factory) loadWorktreeAgent(teamFile, name string) (project.Project, *team.Config, error) {
	p, cfg, err := f.Team(teamFile)
	if err != nil {
		return project.Project{}, nil, err
	}
	return p, cfg, worktreeAgent(cfg, name)
}

// worktreeAgent checks that name is an agent of cfg working in a worktree.
func worktreeAgent(cfg *team.Config, name string) error {
	a, ok := cfg.Agent(name)
	if !ok {
		return unknownAgentError(cfg, name)
	}
	if a.Workspace != team.WorkspaceWorktree {
		return fmt.Errorf("agent %q works in the project's checkout, not a worktree of its own: its role %q needs `workspace: worktree` in %s", name, a.Role, cfg.Path)
	}
	return nil
}

// queueLanding asks for the landing of agent's branch, from sender: a
// request in the landing inbox (the human's, with review when asked), or
// inside an agent (inAgent) in the agent's outbox, for the daemon to take
// as from that agent (whose landings workspace.review decides).
func queueLanding(p project.Project, sender, agent string, inAgent, review bool) (inbox.Message, error) {
	if inAgent {
		id, err := p.Layout.WriteRequest(sender, outbox.Request{Land: agent})
		return inbox.Message{ID: id, From: sender, To: team.LandingBox, Body: agent}, err
	}
	store, err := p.Layout.OpenInboxes()
	if err != nil {
		return inbox.Message{}, err
	}
	box, err := store.Box(team.LandingBox)
	if err != nil {
		return inbox.Message{}, err
	}
	return box.Deliver(inbox.Message{From: sender, To: team.LandingBox, Body: landing.RequestBody(agent, review)})
}

// signalContext is a context that ends on Ctrl-C or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newMergeCmd(f *Factory) *cobra.Command {
	var teamFile string
	var review bool
	cmd := &cobra.Command{
		Use:   "merge <agent>",
		Short: "Queue an agent's branch for landing on the team's base branch",
		Long: `merge queues the branch of a worktree agent (batty/<agent>) in the team's
merge queue. The daemon lands one branch at a time, in a worktree of its own
(worktrees/.landing in the state directory): it merges the branch into the latest base, runs
workspace.verify there, and only when verify passes advances base. A conflict
or a red verify leaves base unchanged; the agent gets a message saying what
to fix, the human a landing_failed event (and on_alert). A landing asked
for while the agent's turn is in flight (its own batty merge in that turn,
or yours) waits for the turn to end and batty to commit its work
(waiting_turn in batty status), then lands it.

The request is written into the team's landing inbox (inside an agent, into
its outbox, which its shim relays) and does not need the
daemon: a request made while the team is stopped is taken at batty start.
Inside an agent's Codex an agent may queue its own branch, or the branch of
an agent its role may message (talks_to: an architect lands its engineers').

With workspace.review: human in the team file, a landing an agent asks for
waits, once verified, for your review (batty review, batty approve, batty
reject). Yours lands without one, unless you ask for it with --review.

Exit status: 0 queued, 1 error, 2 usage.`,
		Example: `  batty merge engineer-1
  batty merge --review engineer-2   # verified, then waits for batty approve
  batty status   # the LANDING table follows the request`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := args[0]
			sender, inAgent, err := currentSenderIn("")
			if err != nil {
				return err
			}
			p, cfg, err := f.loadWorktreeAgent(teamFile, agent)
			if err != nil {
				return err
			}
			if !team.MayLand(cfg, sender, agent) {
				return fmt.Errorf("this command runs inside agent %q, which may land only its own branch or the branch of an agent it may message (talks_to)", sender)
			}
			if inAgent && review {
				return fmt.Errorf("--review is the human's: inside agent %q, the team file's workspace.review decides whether its landings wait for review", sender)
			}
			m, err := queueLanding(p, sender, agent, inAgent, review)
			if err != nil {
				return fmt.Errorf("queue the landing of %s: %w", workspaces.Branch(agent), err)
			}
			then := ""
			if inAgent && sender == agent {
				// What the turn wrote is on the branch once batty has
				// committed it, after the turn.
				then = "; it lands once this turn has ended and batty has committed its work"
			}
			if review || (inAgent && cfg.Workspace.ReviewsAgents()) {
				then += "; once verified it waits for the human's review (batty review)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "queued the landing of %s (request %s)%s; `batty status` shows the merge queue\n",
				workspaces.Branch(agent), inbox.ShortID(m.ID), then)
			if running, _ := project.Running(p.Layout); !running {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: the team is not running; the landing waits until `batty start`\n")
			}
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&review, "review", false, "once verified, wait for your review (batty approve) before landing")
	cmd.ValidArgsFunction = f.completeWorktreeAgents(&teamFile, true)
	return withUsageExit(cmd)
}

func newDiffCmd(f *Factory) *cobra.Command {
	var teamFile string
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff <agent>",
		Short: "Show what a worktree agent's branch adds to the base branch",
		Long: `diff shows git's diff of the agent's branch (batty/<agent>) against the
team's base branch since the branch forked from it: what landing it would
bring. Uncommitted changes in the worktree are counted after it (batty
commits them when the agent's turn ends). It does not need the daemon.

The files are the agent's: on a terminal the diff is cleaned as it is
shown (escape sequences that could set the clipboard or the window title
or clear the screen are dropped; other control characters, a lone CR and
bidirectional controls are shown as escapes such as \x0d or \u202e), so
every line of the diff is a line on the screen. Into a pipe or a file it
is git's diff byte for byte, for git apply; a pager such as less shows
control characters visibly.`,
		Example: `  batty diff engineer-1
  batty diff --stat engineer-2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := f.loadWorktreeAgent(teamFile, args[0])
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			repo, base, err := openTeamRepo(ctx, p, cfg)
			if err != nil {
				return err
			}
			return writeDiff(cmd.OutOrStdout(), f.IOStreams.IsStdoutTTY(), func(w io.Writer) error {
				return repo.Diff(ctx, args[0], base, w, stat)
			})
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&stat, "stat", false, "list the changed files and their line counts only")
	cmd.ValidArgsFunction = f.completeWorktreeAgents(&teamFile, false)
	return withUsageExit(cmd)
}

// writeDiff runs diff, which writes an agent's diff, into out: cleaned by
// safetext.Block when out is a terminal (the agent wrote the files; one
// shown line per line of the diff), as it is otherwise (a pipe or a file,
// for git apply).
func writeDiff(out io.Writer, terminal bool, diff func(io.Writer) error) error {
	if !terminal {
		return diff(out)
	}
	clean := safetext.NewWriter(out, safetext.Block)
	return errors.Join(diff(clean), clean.Flush())
}

func newWorkspaceCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workspace",
		Short: "Manage the worktree agents' workspaces",
		Long: `workspace manages the git worktrees of the agents whose role says
workspace: worktree (worktrees/<agent> in the project's state directory,
branch batty/<agent>).`,
		Example: `  batty workspace prune engineer-1`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newWorkspacePruneCmd(f))
	return cmd
}

func newWorkspacePruneCmd(f *Factory) *cobra.Command {
	var teamFile string
	var force bool
	cmd := &cobra.Command{
		Use:   "prune <agent>",
		Short: "Remove an agent's worktree and branch, never losing unlanded work",
		Long: `prune removes the agent's worktree and its branch batty/<agent>. It refuses
while the worktree has uncommitted changes or the branch has commits that are
not on the base branch, unless --force; even then it first commits the
uncommitted changes and keeps the branch's last commit under
refs/batty/archive/<agent>/<time> (git log that ref to find it again).
For an agent on another host, its clone there goes too: its uncommitted
work is committed there first (with --force; refused without), its commits
come here, and only then are the branch here and the clone removed.
The team must be stopped: a running agent may be editing its worktree.`,
		Example: `  batty workspace prune engineer-1
  batty workspace prune --force engineer-2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := f.loadWorktreeAgent(teamFile, args[0])
			if err != nil {
				return err
			}
			if err := refuseInsider(p.Layout, control.OpPrune); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			var res workspaces.PruneResult
			var removal string
			err = project.WithLock(p.Layout, func() error {
				repo, base, err := openTeamRepo(ctx, p, cfg)
				if err != nil {
					return err
				}
				def, _ := cfg.Agent(args[0])
				res, removal, err = pruneOn(ctx, p, cfg, repo, def, base, force)
				return err
			})
			if errors.Is(err, project.ErrAlreadyRunning) {
				return fmt.Errorf("%w: stop the team first (`batty stop`), then prune", err)
			}
			if errors.Is(err, workspaces.ErrUnlanded) {
				return fmt.Errorf("%w\nland it first (`batty merge %s`), or prune with --force, which keeps the branch under refs/batty/archive/%s/", err, args[0], args[0])
			}
			if err != nil {
				return err
			}
			msg := "removed " + removal
			if !res.Removed {
				msg = args[0] + " has no worktree or branch: nothing to prune"
			}
			if res.Archived != "" {
				msg += "; its work is kept under " + res.Archived
			}
			fmt.Fprintln(cmd.OutOrStdout(), "batty: "+msg)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&force, "force", false, "prune unlanded or uncommitted work too (kept under refs/batty/archive/ first)")
	cmd.ValidArgsFunction = f.completeWorktreeAgents(&teamFile, false)
	return withUsageExit(cmd)
}

// pruneTimeout bounds the prune of an agent's workspace: on another
// host, installing batty there, and three steps over the connection.
const pruneTimeout = 10 * time.Minute

// pruneOn prunes the workspace of agent def where it runs (its worktree
// here, or its clone on its host: host.Workspace.Prune), batty installed
// there first when needed, and closes the connection to its host after.
// It returns what the prune did and what it removes (host.Workspace's
// Removal). It blocks until done.
func pruneOn(ctx context.Context, p project.Project, cfg *team.Config, repo *workspaces.Repo, def team.Agent, base string, force bool) (workspaces.PruneResult, string, error) {
	h, err := host.For(cfg, def)
	if err != nil {
		return workspaces.PruneResult{}, "", err
	}
	tr := &hosts.Transport{}
	on := host.On(h, host.Local{}, host.Remote{Transport: tr, Root: p.Layout.Root(),
		Batty: func(ctx context.Context) (string, error) {
			self, err := hosts.Self(versionString(), protocol.Version)
			if err != nil {
				return "", err
			}
			return hosts.EnsureBatty(ctx, tr, h, self)
		}})
	ctx, cancel := context.WithTimeout(ctx, pruneTimeout)
	defer cancel()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hosts.CloseTimeout)
		defer cancel()
		// A connection that cannot be closed ends by itself after
		// ControlPersist.
		_ = on.Close(cctx)
	}()
	w := on.Workspace(repo, def.Name, base)
	res, err := w.Prune(ctx, force, time.Now())
	return res, w.Removal(), err
}
