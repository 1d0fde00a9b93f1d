package landing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/battyhq/batty/workspaces"
)

// gitIn returns the git runner for dir: the project's top level (the
// user's checkout), never a worktree of batty's or an agent's (gitOn).
func (q *Queue) gitIn(dir string) workspaces.Git {
	return workspaces.Git{Dir: dir, Env: q.env, Starter: q.opt.Starter}
}

// gitWrite returns the git runner for commands in dir that write commits
// or reflogs: batty is their author and committer.
func (q *Queue) gitWrite(dir string) workspaces.Git {
	g := q.gitIn(dir)
	g.Vars = []string{
		"GIT_AUTHOR_NAME=" + q.name, "GIT_AUTHOR_EMAIL=" + q.email,
		"GIT_COMMITTER_NAME=" + q.name, "GIT_COMMITTER_EMAIL=" + q.email}
	return g
}

// gitOn returns the git runner (gitWrite's) for the work tree dir, one
// of the repository's worktrees. The top level is run in as it is; any
// other worktree (the integration worktree, an agent's, one of the
// user's) has its git dir and work tree named from the repository's own
// records (workspaces.WorktreeGitDir, --git-dir and --work-tree), so that
// no git batty runs there reads a .git file found in it, which whoever
// can write the worktree could have pointed at a repository of theirs
// (with a filter or an fsmonitor that git would run). ok is false when
// dir is not a worktree registered in the repository whose .git file
// points back at its registration.
func (q *Queue) gitOn(ctx context.Context, dir string) (g workspaces.Git, ok bool, err error) {
	if filepath.Clean(dir) == filepath.Clean(q.opt.TopLevel) {
		return q.gitWrite(dir), true, nil
	}
	common, err := q.commonDir(ctx)
	if err != nil {
		return workspaces.Git{}, false, err
	}
	admin, err := workspaces.WorktreeGitDir(common, dir)
	if err != nil || admin == "" {
		return workspaces.Git{}, false, err
	}
	g = q.gitWrite(dir)
	g.GitDir, g.WorkTree = admin, dir
	return g, true, nil
}

// gitOnChecked is gitOn for a worktree that must be one: its absence is
// an error naming it and the fix.
func (q *Queue) gitOnChecked(ctx context.Context, dir string) (workspaces.Git, error) {
	g, ok, err := q.gitOn(ctx, dir)
	if err != nil {
		return g, err
	}
	if !ok {
		return g, fmt.Errorf("%s is not a worktree of the repository whose .git file points back at its registration: batty runs no git there; repair it (git worktree repair %s)", dir, dir)
	}
	return g, nil
}

func (q *Queue) baseRef() string { return "refs/heads/" + q.opt.Base }

// resolve returns the commit ref names, "" when it does not exist.
func (q *Queue) resolve(ctx context.Context, ref string) (string, error) {
	out, err := q.gitIn(q.opt.TopLevel).Run(ctx, "rev-parse", "-q", "--verify", ref+"^{commit}")
	if workspaces.ExitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// isAncestor reports whether commit a is b or one of its ancestors.
func (q *Queue) isAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := q.gitIn(q.opt.TopLevel).Run(ctx, "merge-base", "--is-ancestor", a, b)
	switch workspaces.ExitCode(err) {
	case -1:
		return err == nil, err
	case 1:
		return false, nil
	}
	return false, err
}

// observe gathers the facts a decision about r needs.
func (q *Queue) observe(ctx context.Context, r Request) (Facts, error) {
	var f Facts
	var err error
	if f.BaseTip, err = q.resolve(ctx, q.baseRef()); err != nil {
		return f, err
	}
	if f.BranchTip, err = q.resolve(ctx, "refs/heads/"+r.Branch); err != nil {
		return f, err
	}
	if f.BaseTip != "" && f.BranchTip != "" {
		if f.BranchInBase, err = q.isAncestor(ctx, f.BranchTip, f.BaseTip); err != nil {
			return f, err
		}
	}
	if f.BaseTip != "" && r.Merged != "" {
		// The merge commit may be gone (never advanced to, then collected).
		merged, err := q.resolve(ctx, r.Merged)
		if err != nil {
			return f, err
		}
		if merged != "" {
			if f.MergedInBase, err = q.isAncestor(ctx, merged, f.BaseTip); err != nil {
				return f, err
			}
		}
	}
	out, err := q.gitIn(q.opt.TopLevel).Run(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return f, err
	}
	wts := parseWorktrees(out)
	f.Checkout = checkoutOf(wts, q.baseRef(), q.integ)
	if f.Checkout == "" {
		if f.Checkout, err = q.rebasing(ctx, wts); err != nil {
			return f, err
		}
		f.Rebasing = f.Checkout != ""
	}
	if f.Checkout != "" && !f.Rebasing {
		g, err := q.gitOnChecked(ctx, f.Checkout)
		if err != nil {
			return f, err
		}
		st, err := g.Run(ctx, "status", "--porcelain", "-z", "--untracked-files=no")
		if err != nil {
			return f, err
		}
		f.Dirty = st != ""
	}
	return f, nil
}

// rebasing returns the work tree where base is being rebased, "" when
// none: a rebase detaches HEAD and sets the branch when it ends, over
// whatever base was advanced to meanwhile.
func (q *Queue) rebasing(ctx context.Context, wts []worktree) (string, error) {
	for _, w := range wts {
		if !w.Detached || w.Prunable || filepath.Clean(w.Path) == filepath.Clean(q.integ) {
			continue
		}
		g, ok, err := q.gitOn(ctx, w.Path)
		if err != nil {
			return "", err
		}
		if !ok {
			continue // not a worktree git would rebase in (its .git file points elsewhere)
		}
		out, err := g.Run(ctx, "rev-parse", "--path-format=absolute",
			"--git-path", "rebase-merge/head-name", "--git-path", "rebase-apply/head-name")
		if err != nil {
			return "", err
		}
		for p := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			name, err := readSmall(p, 4096)
			if err != nil {
				return "", fmt.Errorf("is %s being rebased: %w", w.Path, err)
			}
			if strings.TrimSpace(name) == q.baseRef() {
				return w.Path, nil
			}
		}
	}
	return "", nil
}

// readSmall reads at most max bytes of the file path; a missing file is "".
func readSmall(path string, max int64) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(b), nil
}

// worktree is one entry of `git worktree list --porcelain`.
type worktree struct {
	Path     string
	Head     string
	Branch   string // refs/heads/..., "" when detached
	Detached bool
	Bare     bool
	Prunable bool
}

// parseWorktrees reads `git worktree list --porcelain`: records of
// "key value" lines separated by empty lines. Unknown keys are skipped.
// Pure.
func parseWorktrees(out string) []worktree {
	var wts []worktree
	var cur *worktree
	for line := range strings.SplitSeq(out, "\n") {
		key, val, _ := strings.Cut(line, " ")
		switch {
		case line == "":
			cur = nil
		case key == "worktree":
			wts = append(wts, worktree{Path: val})
			cur = &wts[len(wts)-1]
		case cur == nil:
		case key == "HEAD":
			cur.Head = val
		case key == "branch":
			cur.Branch = val
		case key == "detached":
			cur.Detached = true
		case key == "bare":
			cur.Bare = true
		case key == "prunable":
			cur.Prunable = true
		}
	}
	return wts
}

// checkoutOf returns the work tree that has ref checked out, leaving out
// stale registrations and the integration worktree; "" when none. Pure.
func checkoutOf(wts []worktree, ref, integ string) string {
	for _, w := range wts {
		if w.Branch == ref && !w.Prunable && !w.Bare && filepath.Clean(w.Path) != filepath.Clean(integ) {
			return w.Path
		}
	}
	return ""
}

// prepare makes the integration worktree a clean checkout of tip,
// creating it when missing and replacing whatever else is at its path,
// and returns the git runner for it (gitOn: its git dir named from the
// repository's records).
func (q *Queue) prepare(ctx context.Context, tip string) (workspaces.Git, error) {
	if fi, err := os.Lstat(q.opt.WorktreesDir); err == nil && !fi.IsDir() {
		return workspaces.Git{}, fmt.Errorf("integration worktree: %s is not a directory (a link?): remove it", q.opt.WorktreesDir)
	} else if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(q.opt.WorktreesDir, 0o700); err != nil {
			return workspaces.Git{}, fmt.Errorf("integration worktree: %w", err)
		}
	} else if err != nil {
		return workspaces.Git{}, fmt.Errorf("integration worktree: %w", err)
	}
	q.sweepCleared()
	g, ok, err := q.gitOn(ctx, q.integ)
	if err != nil {
		return workspaces.Git{}, err
	}
	if !ok {
		// Scratch by definition: whatever is there (a link, a stale
		// directory, a worktree whose .git file was replaced) goes.
		if err := q.clearInteg(); err != nil {
			return workspaces.Git{}, err
		}
		top := q.gitWrite(q.opt.TopLevel)
		if _, err := top.Run(ctx, "worktree", "prune"); err != nil {
			return workspaces.Git{}, err
		}
		if _, err := top.Run(ctx, "worktree", "add", "-q", "--detach", q.integ, tip); err != nil {
			return workspaces.Git{}, err
		}
		if g, err = q.gitOnChecked(ctx, q.integ); err != nil {
			return workspaces.Git{}, fmt.Errorf("integration worktree: %w", err)
		}
	}
	if q.afterCheck != nil {
		q.afterCheck()
	}
	// Detach first: a reset on a branch someone checked out there would
	// move that branch. reset --hard ends a merge left half done.
	for _, args := range [][]string{
		{"checkout", "-q", "--force", "--detach", tip},
		{"reset", "-q", "--hard", tip},
		{"clean", "-q", "-ffdx"},
	} {
		if _, err := g.Run(ctx, args...); err != nil {
			return workspaces.Git{}, err
		}
	}
	return g, nil
}

// clearedPrefix starts the names of integration worktrees set aside by
// clearInteg, in the worktrees directory (no agent's name starts with a
// dot).
const clearedPrefix = IntegrationName + "-cleared-"

// clearInteg frees the integration worktree's path: whatever is there is
// first renamed aside (which succeeds whatever it holds, however fast
// something writes in it), then removed; a removal that fails leaves the
// set-aside directory for the next sweepCleared, never the landing
// waiting.
func (q *Queue) clearInteg() error {
	if _, err := os.Lstat(q.integ); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("integration worktree: %w", err)
	}
	aside := filepath.Join(filepath.Dir(q.integ), clearedPrefix+hex.EncodeToString(b[:]))
	if err := os.Rename(q.integ, aside); err != nil {
		return fmt.Errorf("integration worktree: set %s aside: %w", q.integ, err)
	}
	_ = q.removeAll(aside) // what is left goes at the next sweepCleared
	return nil
}

// sweepCleared removes what clearInteg set aside and could not remove.
// Best effort: what still cannot be removed waits for the next time.
func (q *Queue) sweepCleared() {
	entries, err := os.ReadDir(filepath.Dir(q.integ))
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), clearedPrefix) {
			_ = q.removeAll(filepath.Join(filepath.Dir(q.integ), e.Name()))
		}
	}
}

// commonDir returns the repository's common git directory, links
// resolved: asked of git once, then kept (a failure is asked again).
func (q *Queue) commonDir(ctx context.Context) (string, error) {
	q.commonMu.Lock()
	defer q.commonMu.Unlock()
	if q.common != "" {
		return q.common, nil
	}
	out, err := q.gitIn(q.opt.TopLevel).Run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(strings.TrimSpace(out))
	if err != nil {
		return "", fmt.Errorf("git common dir: %w", err)
	}
	q.common = dir
	return dir, nil
}

// mergeMessage is the landing's merge commit message. Pure.
func mergeMessage(branch string, n int) string {
	if n == 1 {
		return fmt.Sprintf("Land %s (1 commit)", branch)
	}
	return fmt.Sprintf("Land %s (%d commits)", branch, n)
}

// merge merges f.BranchTip onto f.BaseTip in the prepared integration
// worktree and returns the merge commit, or the conflicting files.
func (q *Queue) merge(ctx context.Context, g workspaces.Git, r Request, f Facts) (merged string, conflicts []string, err error) {
	out, err := g.Run(ctx, "rev-list", "--count", f.BaseTip+".."+f.BranchTip)
	if err != nil {
		return "", nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return "", nil, fmt.Errorf("count the commits of %s: %q: %w", r.Branch, out, err)
	}
	// Hooks, signing and rerere are off for every git batty runs
	// (workspaces.Git).
	args := []string{"merge", "-q", "--no-ff", "--no-edit", "--no-log", "--no-verify-signatures", "-m", mergeMessage(r.Branch, n), f.BranchTip}
	if _, merr := g.Run(ctx, args...); merr != nil {
		if ctx.Err() != nil {
			return "", nil, merr
		}
		out, err := g.Run(ctx, "diff", "--name-only", "--diff-filter=U", "-z")
		if err != nil {
			return "", nil, fmt.Errorf("%w (and listing the conflicts: %v)", merr, err)
		}
		for p := range strings.SplitSeq(out, "\x00") {
			if p != "" {
				conflicts = append(conflicts, p)
			}
		}
		if len(conflicts) == 0 {
			return "", nil, merr
		}
		return "", conflicts, nil
	}
	out, err = g.Run(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(out), nil, nil
}

// advance moves base from r.BaseBefore to r.Merged as d says: by
// compare-and-swap of the ref, or by a fast-forward merge in the checkout
// that has base checked out (which moves its index and files too).
func (q *Queue) advance(ctx context.Context, r Request, d Decision, f Facts) error {
	if d.Action == ActAdvanceCheckout {
		g, err := q.gitOnChecked(ctx, f.Checkout)
		if err != nil {
			return err
		}
		_, err = g.Run(ctx,
			"merge", "-q", "--ff-only", "--no-verify-signatures", "--no-autostash", r.Merged)
		return err
	}
	_, err := q.gitWrite(q.opt.TopLevel).Run(ctx,
		"update-ref", "-m", "batty: land "+r.Branch, q.baseRef(), r.Merged, r.BaseBefore)
	return err
}
