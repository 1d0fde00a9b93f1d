package clones

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// Serve is the host's end (`batty clone-host`, run in the project
// directory there): l is the project's state directory there (hosts.StateDir;
// l.Project the project directory). It reads one Request and its bundle
// from in, applies the commits it carries, runs the operation on the
// agent's clone (l.CloneRepo() and its worktree l.WorktreesDir()/<agent>,
// the repository made on first use) and writes the Answer and a bundle of
// the agent's branch to out. The end of in after the request — the
// connection cut, the daemon gone — cancels the operation (a setup is
// killed; a git step is left to finish). A request it cannot read is an
// error; a failed operation is an Answer with its Failure.
//
// The clones are kept out of the project directory, which an agent
// working in the project there may write: a state directory inside it is
// refused (an Answer with its Failure, no git run). A clone an earlier
// batty kept in the project (<project>/.batty/worktrees/<agent>, of the
// repository <project>/.batty/repo) is never used or read, git never run
// there (its configuration may be an agent's): the clone starts afresh in
// the state directory from the branch the daemon sends, and the answer
// names the old one (Answer.OldClone) for the user. It blocks until done.
func Serve(ctx context.Context, in io.Reader, out io.Writer, l project.Layout) error {
	br := bufio.NewReader(in)
	req, err := readRequest(br)
	if err != nil {
		return err
	}
	if !team.ValidName(req.Agent) {
		return fmt.Errorf("read the request: %q is not an agent's name", req.Agent)
	}
	if err := checkStateDir(l); err != nil {
		return writeLine(out, answerMark, Answer{Failure: failureOf(err)})
	}
	if _, err := exec.LookPath("git"); err != nil {
		// Said in an answer, so that the daemon parks the agent with
		// the fix rather than taking it for a host that did not answer.
		return writeLine(out, answerMark, Answer{Failure: &Failure{Kind: FailNoGit,
			Message: "git is not installed (or not on the PATH of a non-interactive shell) on this host: " + err.Error()}})
	}
	env := os.Environ()
	if err := workspaces.InitClone(ctx, l.CloneRepo(), l.GitLock(), env); err != nil {
		return err
	}
	repo, err := workspaces.Open(ctx, workspaces.Options{ProjectDir: l.CloneRepo(), WorktreesDir: l.WorktreesDir(),
		LockFile: l.GitLock(), MinFreeBytes: req.MinFree, Env: env})
	if err != nil {
		return err
	}
	// What a host's end killed mid-step left (no step runs that long).
	repo.SweepTemp(staleTemp, time.Now())
	var ans Answer
	if req.BundleSize > 0 {
		// Read before the stream's end is watched: the bundle is the
		// stream.
		if err := repo.ReadBundle(ctx, br, req.BundleSize); err != nil {
			ans.Failure = failureOf(err)
		}
	}
	// The end of the stream cuts a setup short, never a git command (a
	// git killed half way leaves its index.lock, which refuses every
	// later commit): those are bounded by the git time limit alone.
	gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), gitLimit(req))
	defer gcancel()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Owned by the process: it ends with the stream, at the latest
		// when the process exits.
		io.Copy(io.Discard, br)
		cancel()
	}()
	// The setup's sandbox as this host runs it.
	var serr error
	if req.SetupSandbox, serr = sandboxHere(req.SetupSandbox, l); serr != nil && ans.Failure == nil {
		ans.Failure = failureOf(serr)
	}
	if ans.Failure == nil {
		if err := run(ctx, gctx, repo, req, &ans); err != nil {
			ans.Failure = failureOf(err)
		}
	}
	ans.OldClone = oldClone(l, req.Agent)
	return answer(gctx, repo, req, ans, out)
}

// checkStateDir refuses a state directory l.Dir inside the project
// directory l.Project (compared as given and with links resolved), where
// an agent working in the project may write the clones.
func checkStateDir(l project.Layout) error {
	if l.Project == "" {
		return nil
	}
	err := project.CheckStateDir(l.Dir, []string{l.Project})
	if err == nil {
		root, rerr := filepath.EvalSymlinks(l.Project)
		state, serr := project.RealPath(l.Dir)
		if rerr == nil && serr == nil {
			err = project.CheckStateDir(state, []string{root})
		}
	}
	if err != nil {
		return fmt.Errorf("the clones cannot live here: %w; on this host, give the project a directory (the host's dir: in the team file) that does not hold %s", err, project.HomeStateDir)
	}
	return nil
}

// oldClone is the agent's clone an earlier batty kept in the project
// directory (l.LegacyWorktreesDir()/<agent>) when something is there, ""
// otherwise. It only looks (lstat).
func oldClone(l project.Layout, agent string) string {
	old := l.LegacyWorktreesDir()
	if old == "" {
		return ""
	}
	p := filepath.Join(old, agent)
	if _, err := os.Lstat(p); err != nil {
		return ""
	}
	return p
}

// defaultGitLimit bounds the git steps of a request that names no limit.
const defaultGitLimit = 2 * time.Minute

// gitLimit is how long the git steps of req may take in all: three
// times its git time limit (a preparation makes a worktree, commits and
// merges), defaultGitLimit when it names none. Pure.
func gitLimit(req Request) time.Duration {
	if req.GitTimeout > 0 {
		return 3 * req.GitTimeout
	}
	return defaultGitLimit
}

// staleTemp is the age past which Serve removes the temporary files of
// the host's repository: those of a step killed half way.
const staleTemp = 24 * time.Hour

// run applies the request's commits and runs its operation, filling ans:
// its git steps with gctx, a preparation's setup with ctx.
func run(ctx, gctx context.Context, repo *workspaces.Repo, req Request, ans *Answer) error {
	baseRef, branchRef := "refs/heads/"+req.Base, workspaces.BranchRef(req.Agent)
	tips, err := repo.Tips(gctx, baseRef, branchRef, workspaces.HereRef(req.Agent))
	if err != nil {
		return err
	}
	if req.BaseCommit != "" && tips[baseRef] != req.BaseCommit {
		// The base mirrors the project's: it moves as the project's does.
		if err := repo.SetRef(gctx, baseRef, req.BaseCommit, tips[baseRef]); err != nil {
			return err
		}
	}
	mergeHere := false
	if req.BranchCommit != "" && tips[branchRef] != req.BranchCommit {
		if tips[branchRef] == "" {
			err = repo.SetRef(gctx, branchRef, req.BranchCommit, "")
		} else {
			// The host's branch has work of its own: the project's is
			// merged into it once the worktree is ready.
			err = repo.SetRef(gctx, workspaces.HereRef(req.Agent), req.BranchCommit, tips[workspaces.HereRef(req.Agent)])
			mergeHere = true
		}
		if err != nil {
			return err
		}
	}
	ws := workspaces.Local{Repo: repo, Agent: req.Agent, Base: req.Base}
	switch req.Op {
	case OpTips, OpState:
		return nil
	case OpPrepare:
		p, err := ws.Prepare(ctx, workspaces.PrepareOptions{Setup: req.Setup, SetupTimeout: req.SetupTimeout, SetupSandbox: req.SetupSandbox, GitTimeout: req.GitTimeout})
		ans.Prepared = &p
		if p.Made && mergeHere {
			res, merr := repo.MergeRef(gctx, req.Agent, workspaces.HereRef(req.Agent), workspaces.Branch(req.Agent)+" of the project")
			if merr != nil && err == nil {
				err = merr
			}
			ans.Merged = &res
		}
		return err
	case OpCommit:
		if req.Commit == nil {
			return fmt.Errorf("a commit request without its commit")
		}
		c, err := ws.Commit(gctx, *req.Commit)
		ans.Committed, ans.Nested, ans.Files = c.Made, c.Nested, c.Files
		return err
	case OpMerge:
		res, err := ws.MergeBase(gctx)
		ans.Merge = &res
		return err
	case OpRelease:
		exists, dirty, err := repo.Dirty(gctx, req.Agent)
		if err != nil || !exists || dirty == 0 {
			return err
		}
		if !req.Force {
			return fmt.Errorf("%w: %d uncommitted paths in the clone of %s", workspaces.ErrUnlanded, dirty, req.Agent)
		}
		_, err = ws.Commit(gctx, workspaces.CommitInfo{Subject: "uncommitted work of " + req.Agent + " at prune", WIP: true})
		return err
	case OpPrune:
		// The daemon's side keeps the branch's work (archived with
		// force) before it asks: the clone's copy may go.
		res, err := repo.Prune(gctx, req.Agent, req.Base, true, time.Now())
		ans.Pruned = res.Removed
		return err
	}
	return fmt.Errorf("unknown operation %q", req.Op)
}

// answer writes ans, completed with the host's tips and the worktree's
// state, and a bundle of the agent's branch without req.Haves, to out.
func answer(ctx context.Context, repo *workspaces.Repo, req Request, ans Answer, out io.Writer) error {
	baseRef, branchRef := "refs/heads/"+req.Base, workspaces.BranchRef(req.Agent)
	tips, err := repo.Tips(ctx, baseRef, branchRef)
	if err != nil {
		return err
	}
	ans.BaseCommit, ans.BranchCommit = tips[baseRef], tips[branchRef]
	ans.Path = repo.Path(req.Agent)
	if exists, dirty, err := repo.Dirty(ctx, req.Agent); err == nil {
		ans.Exists, ans.Dirty = exists, dirty
	} else if ans.Failure == nil {
		ans.Failure = failureOf(err)
	}
	var bundle *os.File
	if ans.BranchCommit != "" && !slices.Contains(req.Haves, ans.BranchCommit) {
		if bundle, err = repo.CreateTemp("outgoing"); err != nil {
			return err
		}
		defer os.Remove(bundle.Name())
		defer bundle.Close()
		if _, err := repo.WriteBundle(ctx, bundle, []string{branchRef}, req.Haves); err != nil {
			return err
		}
		if ans.BundleSize, err = bundle.Seek(0, io.SeekCurrent); err != nil {
			return fmt.Errorf("bundle the branch: %w", err)
		}
		if _, err := bundle.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("bundle the branch: %w", err)
		}
	}
	w := bufio.NewWriter(out)
	if err := writeLine(w, answerMark, ans); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	if bundle != nil && ans.BundleSize > 0 {
		if _, err := io.CopyN(w, bundle, ans.BundleSize); err != nil {
			return fmt.Errorf("answer: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	return nil
}

// sandboxHere is p, the setup's sandbox as the daemon sent it, on this
// host: "~" expanded to the home directory here, each run's CODEX_HOME
// under the user's cache directory (batty/sandbox), out of the agents'
// worktrees; the children of the project's state directory here l.Dir
// that agents may not read denied (hosts.DeniedIn: the other agents'
// clones, the outboxes, state/; the clone set up is its working
// directory, given back; the clone repository left readable, so that git
// works in the setup) and the directories of tmux's and ssh's sockets
// here (hosts.SocketDirs). nil stays nil.
func sandboxHere(p *sandbox.Policy, l project.Layout) (*sandbox.Policy, error) {
	if p == nil {
		return nil, nil
	}
	home, _ := os.UserHomeDir()
	here := hosts.SandboxHere(p, home, sandbox.HomesIn(filepath.Join(home, ".cache", "batty", "sandbox")))
	deny := hosts.DeniedIn(l)
	if err := hosts.MakeDeniedState(l.Dir, deny); err != nil {
		return nil, fmt.Errorf("the setup's sandbox: %w", err)
	}
	for _, d := range append(deny, hosts.SocketDirs(os.Environ(), os.Getuid())...) {
		if filepath.IsAbs(d) {
			here.Deny = append(here.Deny, filepath.Clean(d))
		}
	}
	return here, nil
}
