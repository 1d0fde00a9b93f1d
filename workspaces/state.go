package workspaces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// State is an agent's workspace against the base branch.
type State struct {
	Agent  string
	Path   string // Path(agent)
	Branch string // Branch(agent)
	Head   string // the branch's commit; "" when the branch does not exist
	Exists bool   // the worktree exists
	Ahead  int    // commits on the branch not on base
	Behind int    // commits on base not on the branch
	Dirty  int    // changed or untracked paths in the worktree (as git status --porcelain lists them)
	// ReadAt is when State read these figures: they hold for that
	// moment, not after (an agent may be editing its worktree since).
	ReadAt time.Time
}

// State returns agent's workspace state against base. Exists is false, with
// no error, when there is no worktree; Head, Ahead and Behind are still
// filled when the branch exists. It only reads and takes no lock; it errs
// on what lookup refuses (a link, a stranger's directory, a .git file
// pointing elsewhere) and on an unknown base.
func (r *Repo) State(ctx context.Context, agent, base string) (State, error) {
	if err := checkAgent(agent); err != nil {
		return State{}, err
	}
	st := State{Agent: agent, Path: r.Path(agent), Branch: Branch(agent), ReadAt: time.Now().UTC()}
	wt, exists, err := r.lookup(agent)
	if err != nil {
		return State{}, err
	}
	st.Exists = exists
	if st.Head, err = r.branchHead(ctx, agent); err != nil {
		return State{}, err
	}
	if st.Head != "" {
		if err := r.CheckBase(ctx, base); err != nil {
			return State{}, err
		}
		if st.Behind, st.Ahead, err = r.aheadBehind(ctx, base, agent); err != nil {
			return State{}, err
		}
	}
	if exists {
		paths, err := r.dirty(ctx, wt)
		if err != nil {
			return State{}, err
		}
		st.Dirty = len(paths)
	}
	return st, nil
}

// Dirty reports whether agent's worktree exists and how many paths in it
// are uncommitted (State's Exists and Dirty, without the branch's
// counts). It only reads and takes no lock.
func (r *Repo) Dirty(ctx context.Context, agent string) (exists bool, dirty int, err error) {
	if err := checkAgent(agent); err != nil {
		return false, 0, err
	}
	wt, exists, err := r.lookup(agent)
	if err != nil || !exists {
		return false, 0, err
	}
	paths, err := r.dirty(ctx, wt)
	return true, len(paths), err
}

// aheadBehind counts the commits only on base (behind) and only on agent's
// branch (ahead).
func (r *Repo) aheadBehind(ctx context.Context, base, agent string) (behind, ahead int, err error) {
	out, err := r.git(r.top).Run(ctx, "rev-list", "--left-right", "--count", "refs/heads/"+base+"..."+branchRef(agent), "--")
	if err != nil {
		return 0, 0, fmt.Errorf("compare %s with %s: %w", Branch(agent), base, err)
	}
	f := strings.Fields(out)
	if len(f) == 2 {
		behind, err1 := strconv.Atoi(f[0])
		ahead, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			return behind, ahead, nil
		}
	}
	return 0, 0, fmt.Errorf("compare %s with %s: unexpected git rev-list output %q", Branch(agent), base, out)
}

// dirty returns the paths git status lists as changed or untracked in wt
// (an untracked directory is one path, a nested repository too).
func (r *Repo) dirty(ctx context.Context, wt worktree) ([]string, error) {
	return r.status(ctx, wt, "--untracked-files=normal")
}

// uncommitted returns the paths a Commit of wt would record: those git
// status lists as changed or untracked, each untracked file on its own,
// the nested repositories (which Commit leaves out) left out.
func (r *Repo) uncommitted(ctx context.Context, wt worktree) ([]string, error) {
	paths, err := r.status(ctx, wt, "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	kept := paths[:0]
	for _, p := range paths {
		// With --untracked-files=all only a nested repository is listed
		// as a directory.
		if !strings.HasSuffix(p, "/") {
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// status returns the paths of git status in wt, untracked ones as the
// --untracked-files option untracked says.
func (r *Repo) status(ctx context.Context, wt worktree, untracked string) ([]string, error) {
	out, err := r.wtGit(wt).Run(ctx, "status", "--porcelain=v1", "-z", "--no-renames", untracked)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", wt.path, err)
	}
	paths, err := parseStatus(out)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", wt.path, err)
	}
	return paths, nil
}

// parseStatus returns the paths of git status --porcelain=v1 -z output:
// entries "XY path" ended by NUL, a rename or copy followed by its source
// path (which is not listed). It never panics; malformed output is an
// error.
func parseStatus(out string) ([]string, error) {
	var paths []string
	for len(out) > 0 {
		entry, rest, ok := strings.Cut(out, "\x00")
		if !ok {
			return nil, fmt.Errorf("unterminated status entry %q", entry)
		}
		if len(entry) < 4 || entry[2] != ' ' {
			return nil, fmt.Errorf("malformed status entry %q", entry)
		}
		paths = append(paths, entry[3:])
		out = rest
		if entry[0] == 'R' || entry[0] == 'C' || entry[1] == 'R' || entry[1] == 'C' {
			if _, rest, ok = strings.Cut(out, "\x00"); !ok {
				return nil, fmt.Errorf("rename entry %q without its source", entry)
			}
			out = rest
		}
	}
	return paths, nil
}

// Diff writes to w what agent's branch adds since it forked from base (git
// diff base...batty/<agent>), as a --stat summary when stat; then, when
// the worktree has uncommitted changes, a line saying how many paths are
// not in the diff. External diff drivers and textconv filters are not run
// (the agent writes the attributes that would name them), nor a pager,
// and the diff has no colours. What w gets is git's bytes as they are: the
// files are the agent's, and a caller showing them on a terminal cleans
// them (safetext.Block). It only reads and takes no lock.
func (r *Repo) Diff(ctx context.Context, agent, base string, w io.Writer, stat bool) error {
	if err := checkAgent(agent); err != nil {
		return err
	}
	if err := r.CheckBase(ctx, base); err != nil {
		return err
	}
	head, err := r.branchHead(ctx, agent)
	if err != nil {
		return err
	}
	if head == "" {
		return fmt.Errorf("diff: %s has no branch %s", agent, Branch(agent))
	}
	wt, exists, err := r.lookup(agent)
	if err != nil {
		return err
	}
	args := []string{"--no-pager", "diff", "--no-color", "--no-ext-diff", "--no-textconv"}
	if stat {
		args = append(args, "--stat")
	}
	args = append(args, "refs/heads/"+base+"..."+branchRef(agent), "--")
	if err := r.git(r.top).RunTo(ctx, w, args...); err != nil {
		return fmt.Errorf("diff of %s: %w", Branch(agent), err)
	}
	if !exists {
		return nil
	}
	paths, err := r.dirty(ctx, wt)
	if err != nil {
		return err
	}
	if n := len(paths); n > 0 {
		if _, err := fmt.Fprintf(w, "note: %s in %s not committed, not in this diff\n", plural(n, "path"), wt.path); err != nil {
			return fmt.Errorf("diff of %s: %w", Branch(agent), err)
		}
	}
	return nil
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// SyncResult is what SyncBase did.
type SyncResult struct {
	Merged    bool     // base was merged into the branch
	UpToDate  bool     // the branch already contained base: nothing done
	Dirty     bool     // the worktree has uncommitted changes: nothing done
	Conflicts []string // the paths that conflicted: the merge was undone (SyncBase) or left for the agent (MergeBase)
}

// SyncBase brings base's new commits into agent's branch, in its worktree,
// holding the repository lock:
//
//   - the branch already contains base: UpToDate, nothing done;
//   - the worktree has uncommitted changes (a nested repository, which
//     Commit leaves out, is not one): Dirty, nothing done;
//   - else git merge --no-edit base (a fast-forward when the branch has no
//     commit of its own): Merged. On conflicts the merge is aborted and
//     the conflicting paths returned, the branch and worktree left as they
//     were. No hook runs; the merge commit is the committer's.
//
// It refuses what Commit refuses (no worktree, HEAD not the branch, an
// index.lock) and an unknown base.
func (r *Repo) SyncBase(ctx context.Context, agent, base string) (SyncResult, error) {
	return r.syncBase(ctx, agent, base, false)
}

// MergeBase is SyncBase that leaves a conflicted merge in the worktree for
// the agent to resolve: the conflicting paths hold git's conflict markers
// and the merge is in progress, so the agent's next commit (Commit, at the
// end of its turn) completes it as a merge commit. An agent in Codex's
// sandbox cannot run the merge itself (the repository's git directory is
// outside its writable roots); this way it only edits files.
func (r *Repo) MergeBase(ctx context.Context, agent, base string) (SyncResult, error) {
	return r.syncBase(ctx, agent, base, true)
}

func (r *Repo) syncBase(ctx context.Context, agent, base string, keep bool) (SyncResult, error) {
	if err := checkAgent(agent); err != nil {
		return SyncResult{}, err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return SyncResult{}, err
	}
	defer unlock()
	if err := r.CheckBase(ctx, base); err != nil {
		return SyncResult{}, err
	}
	return r.syncRef(ctx, agent, "refs/heads/"+base, base, keep)
}

// MergeRef is MergeBase with the commit of ref (a full ref name, such as
// the agent's branch as another repository had it) in place of the base
// branch; label names it in the merge commit's message.
func (r *Repo) MergeRef(ctx context.Context, agent, ref, label string) (SyncResult, error) {
	if err := checkAgent(agent); err != nil {
		return SyncResult{}, err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return SyncResult{}, err
	}
	defer unlock()
	return r.syncRef(ctx, agent, ref, label, true)
}

// syncRef merges baseRef (named base in messages) into agent's branch in
// its worktree, the repository lock held: SyncBase's steps.
func (r *Repo) syncRef(ctx context.Context, agent, baseRef, base string, keep bool) (SyncResult, error) {
	wt, exists, err := r.lookup(agent)
	if err != nil {
		return SyncResult{}, fmt.Errorf("sync: %w", err)
	}
	if !exists {
		return SyncResult{}, fmt.Errorf("sync: %s has no worktree at %s", agent, r.Path(agent))
	}
	if err := checkHead(wt); err != nil {
		return SyncResult{}, fmt.Errorf("sync: %w", err)
	}
	if err := checkIndexLock(wt); err != nil {
		return SyncResult{}, fmt.Errorf("sync: %w", err)
	}
	g := r.wtGit(wt,
		"GIT_AUTHOR_NAME="+r.committer.name, "GIT_AUTHOR_EMAIL="+r.committer.email,
		"GIT_COMMITTER_NAME="+r.committer.name, "GIT_COMMITTER_EMAIL="+r.committer.email)
	_, err = g.Run(ctx, "merge-base", "--is-ancestor", baseRef, "HEAD")
	switch {
	case err == nil:
		return SyncResult{UpToDate: true}, nil
	case ctx.Err() != nil || ExitCode(err) != 1:
		return SyncResult{}, fmt.Errorf("sync %s with %s: %w", Branch(agent), base, err)
	}
	// A nested repository, which no commit records, does not hold the
	// merge back (git refuses to overwrite it).
	paths, err := r.uncommitted(ctx, wt)
	if err != nil {
		return SyncResult{}, err
	}
	if len(paths) > 0 {
		return SyncResult{Dirty: true}, nil
	}
	before, err := g.Run(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return SyncResult{}, fmt.Errorf("sync %s with %s: %w", Branch(agent), base, err)
	}
	_, merr := g.Run(ctx, "merge", "--no-edit", "--ff", "--no-verify", "--no-gpg-sign", "--no-autostash", "--no-stat",
		"-m", "Merge "+base+" into "+Branch(agent), baseRef)
	if merr == nil {
		return SyncResult{Merged: true}, nil
	}
	if _, err := os.Lstat(filepath.Join(wt.admin, "MERGE_HEAD")); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return SyncResult{}, fmt.Errorf("sync %s with %s: %w", Branch(agent), base, merr)
		}
		return SyncResult{}, fmt.Errorf("sync %s with %s: %w (and %v)", Branch(agent), base, merr, err)
	}
	// The merge stopped with conflicts (or was killed half way): list them
	// and undo it, even when ctx has ended, so that the branch is left as
	// it was.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	out, lerr := g.Run(actx, "diff", "--name-only", "-z", "--diff-filter=U", "--no-ext-diff")
	if keep && lerr == nil && out != "" && ctx.Err() == nil {
		return SyncResult{Conflicts: strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")}, nil
	}
	_, aerr := g.Run(actx, "merge", "--abort")
	if aerr != nil {
		return SyncResult{}, fmt.Errorf("sync %s with %s: the merge failed (%v) and could not be undone: %w; undo it yourself (git -C %s merge --abort)", Branch(agent), base, merr, aerr, wt.path)
	}
	after, err := g.Run(actx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil || after != before {
		return SyncResult{}, fmt.Errorf("sync %s with %s: after undoing the merge HEAD is %q, was %q (%v)", Branch(agent), base, strings.TrimSpace(after), strings.TrimSpace(before), err)
	}
	if ctx.Err() != nil {
		return SyncResult{}, fmt.Errorf("sync %s with %s: %w", Branch(agent), base, merr)
	}
	if lerr != nil {
		return SyncResult{}, fmt.Errorf("sync %s with %s: list the conflicts: %w", Branch(agent), base, lerr)
	}
	if out == "" {
		return SyncResult{}, fmt.Errorf("sync %s with %s: the merge stopped with no conflicting path and was undone: %w", Branch(agent), base, merr)
	}
	return SyncResult{Conflicts: strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")}, nil
}

// abortTimeout bounds undoing a merge after the caller's context ended.
const abortTimeout = 30 * time.Second
