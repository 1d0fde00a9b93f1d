package workspaces

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ArchiveStamp is the layout of the time in an archive ref's name.
const ArchiveStamp = "20060102T150405Z"

// PruneResult is what Prune did.
type PruneResult struct {
	Archived string // the ref keeping the branch's work, when force kept some
	Removed  bool   // a worktree or branch was removed
}

// ArchiveRef returns the ref under which Prune keeps the work of agent's
// branch removed at now: refs/batty/archive/<agent>/<now in UTC as
// ArchiveStamp>.
func ArchiveRef(agent string, now time.Time) string {
	return ArchivePrefix + agent + "/" + now.UTC().Format(ArchiveStamp)
}

// Prune removes agent's worktree (git worktree remove) and its branch,
// holding the repository lock. It is idempotent: with neither left it does
// nothing (Removed false).
//
// Unlanded work stops it: when the worktree has uncommitted changes or the
// branch has commits not on base, it returns ErrUnlanded, naming how many
// of each, unless force. With force it first commits the uncommitted work
// as WIP (as Commit does, but whatever is there: a merge left with
// conflict markers is archived with them, see CommitInfo.Archive), keeps
// the branch's tip under ArchiveRef(agent,
// now) (PruneResult.Archived), and only then removes the worktree and the
// branch. A branch that only has landed commits needs no archive.
//
// It deletes nothing itself: git removes the worktree's files; what lookup
// refuses (a symbolic link, a directory that is not a registered worktree,
// a .git file pointing elsewhere) is left alone with an error.
func (r *Repo) Prune(ctx context.Context, agent, base string, force bool, now time.Time) (PruneResult, error) {
	if err := checkAgent(agent); err != nil {
		return PruneResult{}, err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return PruneResult{}, err
	}
	defer unlock()
	wt, exists, err := r.lookup(agent)
	if err != nil {
		return PruneResult{}, fmt.Errorf("prune: %w", err)
	}
	head, err := r.branchHead(ctx, agent)
	if err != nil {
		return PruneResult{}, fmt.Errorf("prune: %w", err)
	}
	g := r.git(r.top)
	if !exists && head == "" {
		// A registration whose directory was deleted may remain.
		if _, err := g.Run(ctx, "worktree", "prune"); err != nil {
			return PruneResult{}, fmt.Errorf("prune: %w", err)
		}
		return PruneResult{}, nil
	}
	var dirty []string
	if exists {
		if dirty, err = r.dirty(ctx, wt); err != nil {
			return PruneResult{}, fmt.Errorf("prune: %w", err)
		}
	}
	ahead := 0
	if head != "" {
		if err := r.CheckBase(ctx, base); err != nil {
			return PruneResult{}, fmt.Errorf("prune: %w", err)
		}
		if _, ahead, err = r.aheadBehind(ctx, base, agent); err != nil {
			return PruneResult{}, fmt.Errorf("prune: %w", err)
		}
	}
	var res PruneResult
	if len(dirty) > 0 || ahead > 0 {
		if !force {
			return PruneResult{}, fmt.Errorf("prune %s: %w: %s", agent, ErrUnlanded, unlanded(agent, base, len(dirty), ahead))
		}
		if len(dirty) > 0 {
			c, err := r.commitLocked(ctx, CommitInfo{Agent: agent, Subject: "uncommitted work of " + agent + " at prune", WIP: true, Archive: true})
			if err != nil {
				return PruneResult{}, fmt.Errorf("prune %s: keep its uncommitted work: %w", agent, err)
			}
			head = c.Head
		}
		ref := ArchiveRef(agent, now)
		// An empty old value: the archive ref must not exist yet.
		if _, err := g.Run(ctx, "update-ref", "-m", "batty: archive "+Branch(agent), ref, head, ""); err != nil {
			return PruneResult{}, fmt.Errorf("prune %s: archive its branch as %s: %w", agent, ref, err)
		}
		res.Archived = ref
	}
	if exists {
		args := []string{"worktree", "remove"}
		if force {
			args = append(args, "--force")
		}
		if _, err := g.Run(ctx, append(args, "--", wt.path)...); err != nil {
			return res, fmt.Errorf("prune %s: remove the worktree %s: %w", agent, wt.path, err)
		}
		res.Removed = true
	} else if _, err := g.Run(ctx, "worktree", "prune"); err != nil {
		return res, fmt.Errorf("prune: %w", err)
	}
	if head != "" {
		// Only if the branch is still where it was checked and archived.
		if _, err := g.Run(ctx, "update-ref", "-m", "batty: prune", "-d", branchRef(agent), head); err != nil {
			return res, fmt.Errorf("prune %s: delete the branch %s: %w", agent, Branch(agent), err)
		}
		res.Removed = true
	}
	return res, nil
}

// unlanded says what work pruning agent's workspace would lose.
func unlanded(agent, base string, dirty, ahead int) string {
	var what []string
	if dirty > 0 {
		what = append(what, plural(dirty, "uncommitted path"))
	}
	if ahead > 0 {
		what = append(what, fmt.Sprintf("%s on %s not on %s", plural(ahead, "commit"), Branch(agent), base))
	}
	return strings.Join(what, " and ") + ": land the work (merge " + Branch(agent) + " into " + base + ") or prune with force, which commits and archives it under " + ArchivePrefix + agent + "/ first"
}

// Release gives up agent's worktree here, its branch kept, for the agent
// now works in a clone elsewhere: what is uncommitted in it is committed
// first (as Commit does, work in progress), then git removes the
// worktree. It returns that commit ("" when nothing was uncommitted). It
// holds the repository lock; without a worktree here it does nothing.
func (r *Repo) Release(ctx context.Context, agent string) (leftover string, err error) {
	if err := checkAgent(agent); err != nil {
		return "", err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	wt, exists, err := r.lookup(agent)
	if err != nil || !exists {
		return "", err
	}
	c, err := r.commitLocked(ctx, CommitInfo{Agent: agent, Subject: "work left in the worktree here when " + agent + " moved", WIP: true})
	if err != nil {
		return "", fmt.Errorf("release the worktree of %s: %w", agent, err)
	}
	if c.Made {
		leftover = c.Head
	}
	if _, err := r.git(r.top).Run(ctx, "worktree", "remove", "--", wt.path); err != nil {
		return leftover, fmt.Errorf("release the worktree of %s: remove %s: %w", agent, wt.path, err)
	}
	return leftover, nil
}
