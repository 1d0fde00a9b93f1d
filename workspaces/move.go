package workspaces

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/atomicfile"
)

// Moved is what MoveWorktrees did with the legacy worktrees directory.
type Moved struct {
	// Agents are the agents whose worktree was moved (git worktree move).
	Agents []string
	// Removed are the scratch worktrees removed (names starting with a
	// dot: the merge queue's, which it makes again when it needs one).
	Removed []string
	// Recheckout are the agents whose clean worktree could not be moved
	// (another filesystem) and was removed instead: Ensure checks their
	// branch out again at the new place.
	Recheckout []string
	// Left are the entries left alone: not worktrees of the repository.
	Left []string
}

// MoveWorktrees moves the worktrees an earlier batty made in old (its
// worktrees directory in the project, <project>/.batty/worktrees) to the
// repo's worktrees directory, holding the repository lock. It is
// idempotent: nothing at old is nothing to do.
//
// Each entry of old named as an agent and registered in the repository
// (its registration found from the repository's own records, its .git file
// pointing back at it, as lookup checks) is moved with git's own `git
// worktree move`, which keeps its branch, index and uncommitted files. One
// git cannot move (another filesystem, a submodule in it) is, when it holds
// nothing at all besides its commits (no change, no untracked or ignored
// file), removed instead, for Ensure to check its branch out again at the
// new place. A scratch worktree (a name starting with a dot: the merge
// queue's .landing) is removed. Anything else is left alone (Moved.Left);
// old is removed when that leaves it empty.
//
// It refuses, with an error naming the directory and the fix, a link at
// old, a worktree whose .git file points elsewhere, a worktree it can
// neither move nor safely remove, and an agent whose worktree already
// exists at the new place. No hook or filter runs (Git).
func (r *Repo) MoveWorktrees(ctx context.Context, old string) (Moved, error) {
	var m Moved
	old = filepath.Clean(old)
	if !filepath.IsAbs(old) || old == r.worktrees {
		return m, nil
	}
	fi, err := os.Lstat(old)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("move the worktrees from %s: %w", old, err)
	}
	if !fi.IsDir() {
		return m, fmt.Errorf("move the worktrees from %s: not a directory (a link?): batty keeps the agents' worktrees in %s now; remove it (rm %s)", old, r.worktrees, old)
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return m, err
	}
	defer unlock()
	d, err := atomicfile.OpenDir(old)
	if err != nil {
		return m, fmt.Errorf("move the worktrees from %s: %w", old, err)
	}
	names, err := d.Names()
	d.Close()
	if err != nil {
		return m, fmt.Errorf("move the worktrees from %s: %w", old, err)
	}
	g := r.git(r.top)
	pruned := false
	for _, name := range names {
		path := filepath.Join(old, name)
		if strings.HasPrefix(name, ".") {
			if err := r.removeScratch(ctx, path); err != nil {
				return m, err
			}
			m.Removed = append(m.Removed, name)
			pruned = true
			continue
		}
		wt, ok, err := r.legacyWorktree(name, path)
		if err != nil {
			return m, err
		}
		if !ok {
			m.Left = append(m.Left, name)
			continue
		}
		to := r.Path(name)
		if _, err := os.Lstat(to); err == nil {
			return m, fmt.Errorf("move the worktree of %s: both %s (where an earlier batty kept it) and %s exist; keep one: remove the other with git worktree remove", name, path, to)
		}
		if err := atomicfile.MkdirAll(r.worktrees); err != nil {
			return m, fmt.Errorf("move the worktree of %s: %w", name, err)
		}
		_, merr := g.Run(ctx, "worktree", "move", "--", path, to)
		if merr == nil {
			m.Agents = append(m.Agents, name)
			continue
		}
		if ctx.Err() != nil {
			return m, merr
		}
		clean, err := r.empty(ctx, wt)
		if err != nil || !clean {
			return m, fmt.Errorf("move the worktree of %s from %s to %s: %w; it holds work not committed, so batty leaves it: commit it there (git -C %s commit -a), then remove it (git worktree remove %s), and batty checks %s out again at the new place",
				name, path, to, merr, path, path, Branch(name))
		}
		if err := os.RemoveAll(path); err != nil {
			return m, fmt.Errorf("move the worktree of %s: remove %s: %w", name, path, err)
		}
		m.Recheckout = append(m.Recheckout, name)
		pruned = true
	}
	if pruned {
		if _, err := g.Run(ctx, "worktree", "prune"); err != nil {
			return m, fmt.Errorf("move the worktrees from %s: %w", old, err)
		}
	}
	if len(m.Left) == 0 {
		if err := os.Remove(old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return m, fmt.Errorf("move the worktrees from %s: %w", old, err)
		}
	}
	return m, nil
}

// legacyWorktree is lookup for the worktree of agent at path, a directory
// of the legacy worktrees directory: ok is false, with no error, when path
// is not an agent's name or not a registered worktree; a worktree whose
// .git file does not point back at its registration is an error.
func (r *Repo) legacyWorktree(agent, path string) (worktree, bool, error) {
	if checkAgent(agent) != nil {
		return worktree{}, false, nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return worktree{}, false, fmt.Errorf("move the worktree of %s: %w", agent, err)
	}
	if !fi.IsDir() {
		return worktree{}, false, nil
	}
	admin, err := r.findAdmin(agent, fi)
	if err != nil || admin == "" {
		return worktree{}, false, err
	}
	wt := worktree{agent: agent, path: path, admin: admin}
	if err := r.checkGitFile(wt); err != nil {
		return worktree{}, false, fmt.Errorf("move the worktree of %s: %w", agent, err)
	}
	return wt, true, nil
}

// empty reports whether wt holds nothing but its commits: no change to a
// tracked file, no untracked or ignored file.
func (r *Repo) empty(ctx context.Context, wt worktree) (bool, error) {
	out, err := r.wtGit(wt).Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=traditional")
	if err != nil {
		return false, err
	}
	return out == "", nil
}

// removeScratch removes the scratch worktree at path (its registration is
// pruned by the caller): whatever is there is batty's and made again when
// needed.
func (r *Repo) removeScratch(ctx context.Context, path string) error {
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove %s, which batty no longer uses: %w; remove it yourself (rm -r %s)", path, err, path)
	}
	return ctx.Err()
}
