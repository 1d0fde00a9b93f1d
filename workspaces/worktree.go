package workspaces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
)

// worktree is an agent's worktree that lookup found registered in the
// repository and whose .git file points back at its registration.
type worktree struct {
	agent string
	path  string // Path(agent), a real directory
	admin string // its private git dir, <common>/worktrees/<id>
}

// wtGit returns a Git that runs in the worktree with its git dir and work
// tree named explicitly, so that the worktree's .git entry is not read,
// and vars (Git.Vars) set.
func (r *Repo) wtGit(wt worktree, vars ...string) Git {
	g := r.git(wt.path)
	g.GitDir, g.WorkTree = wt.admin, wt.path
	g.Vars = vars
	return g
}

// notWorktreeError is a directory at an agent's worktree path that is not
// a worktree of the repository.
type notWorktreeError struct{ path, common string }

func (e *notWorktreeError) Error() string {
	return fmt.Sprintf("%s exists but is not a worktree of the repository %s: batty leaves it alone; move or remove it yourself", e.path, e.common)
}

// lookup finds agent's worktree. exists is false, with no error, when
// nothing is at Path(agent). It refuses (an error naming the path) a
// symbolic link or non-directory there, a directory that is not a worktree
// registered in this repository (a *notWorktreeError), and a worktree whose
// .git file does not point at its registration.
func (r *Repo) lookup(agent string) (wt worktree, exists bool, err error) {
	path := r.Path(agent)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return worktree{}, false, nil
	}
	if err != nil {
		return worktree{}, false, fmt.Errorf("worktree of %s: %w", agent, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return worktree{}, true, fmt.Errorf("worktree of %s: %s is a symbolic link: batty never follows one there; remove the link (rm %s)", agent, path, path)
	}
	if !fi.IsDir() {
		return worktree{}, true, fmt.Errorf("worktree of %s: %s is not a directory; move or remove it", agent, path)
	}
	admin, err := r.findAdmin(agent, fi)
	if err != nil {
		return worktree{}, true, fmt.Errorf("worktree of %s: %w", agent, err)
	}
	if admin == "" {
		return worktree{}, true, &notWorktreeError{path: path, common: r.common}
	}
	wt = worktree{agent: agent, path: path, admin: admin}
	if err := r.checkGitFile(wt); err != nil {
		return worktree{}, true, fmt.Errorf("worktree of %s: %w", agent, err)
	}
	return wt, true, nil
}

// findAdmin returns the private git dir (<common>/worktrees/<id>) whose
// gitdir file names the .git of the directory dir (the worktree path,
// lstat'ed), or "" when there is none. It reads the repository's own
// records, never the worktree's .git file. git names the private dir after
// the worktree's base name, so that one is tried first.
func (r *Repo) findAdmin(agent string, dir fs.FileInfo) (string, error) {
	return findAdmin(r.common, agent, dir)
}

// findAdmin is Repo.findAdmin in the repository whose common git dir is
// common, trying the private git dir called name first.
func findAdmin(common, name string, dir fs.FileInfo) (string, error) {
	agent := name
	root := filepath.Join(common, "worktrees")
	points := func(id string) bool {
		admin := filepath.Join(root, id)
		b, err := readSmall(filepath.Join(admin, "gitdir"))
		if err != nil {
			return false // not a complete registration
		}
		target := strings.TrimSuffix(string(b), "\n")
		if !filepath.IsAbs(target) {
			target = filepath.Join(admin, target)
		}
		fi, err := os.Stat(filepath.Dir(target))
		return err == nil && os.SameFile(fi, dir)
	}
	if points(agent) {
		return filepath.Join(root, agent), nil
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("list the repository's worktrees: %w", err)
	}
	for _, e := range entries {
		if e.Name() != agent && e.IsDir() && points(e.Name()) {
			return filepath.Join(root, e.Name()), nil
		}
	}
	return "", nil
}

// checkGitFile checks that the .git file at the root of wt points at wt's
// private git dir: whoever writes in the worktree could have replaced it
// to steer git elsewhere.
func (r *Repo) checkGitFile(wt worktree) error { return checkGitFile(wt.path, wt.admin) }

// checkGitFile is Repo.checkGitFile for the worktree at path whose private
// git dir is admin.
func checkGitFile(path, admin string) error {
	wt := worktree{path: path, admin: admin}
	name := filepath.Join(wt.path, ".git")
	fix := fmt.Sprintf("refusing to use the worktree; repair it: make %s a file holding the one line \"gitdir: %s\"", name, wt.admin)
	f, err := atomicfile.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("%s is not the worktree's .git file (%v): %s", name, err, fix)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSmall+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	target, err := parseGitFile(b)
	if err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, fix)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(wt.path, target)
	}
	got, err1 := os.Stat(target)
	want, err2 := os.Stat(wt.admin)
	if err1 != nil || err2 != nil || !os.SameFile(got, want) {
		return fmt.Errorf("%s points to %s, not to the worktree's git dir %s in this repository: %s", name, target, wt.admin, fix)
	}
	return nil
}

// WorktreeGitDir returns the private git dir (<common>/worktrees/<id>) of
// the linked worktree at dir, found from the records of the repository
// whose common git dir is common, never from dir's .git file; "" when dir
// is not a real directory (a link is not followed) registered there whose
// .git file points back at that git dir (a worktree someone tampered with
// is not one). An error is a failure to read the records. Whoever runs git
// on the worktree names the git dir and the work tree with it (Git.GitDir,
// Git.WorkTree), so that a .git file written since is never read.
func WorktreeGitDir(common, dir string) (string, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("worktree %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", nil
	}
	admin, err := findAdmin(common, filepath.Base(dir), fi)
	if err != nil || admin == "" {
		return "", err
	}
	if checkGitFile(dir, admin) != nil {
		return "", nil
	}
	return admin, nil
}

// maxSmall bounds the files of a few lines batty reads from git dirs.
const maxSmall = 4 << 10

// parseGitFile returns the path of a .git file's "gitdir: <path>" line.
func parseGitFile(b []byte) (string, error) {
	if len(b) > maxSmall {
		return "", errors.New("too long for a .git file")
	}
	s, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", errors.New(`does not start with "gitdir: "`)
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	if s == "" || strings.ContainsAny(s, "\x00\n\r") {
		return "", errors.New("not one gitdir line")
	}
	return s, nil
}

// readSmall reads a file of at most maxSmall bytes (an error if longer),
// following no symbolic link in its last component.
func readSmall(name string) ([]byte, error) {
	f, err := atomicfile.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSmall+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxSmall {
		return nil, fmt.Errorf("read %s: longer than %d bytes", name, maxSmall)
	}
	return b, nil
}

// checkHead checks that wt has its agent's branch checked out (the agent
// may have switched branches or detached HEAD).
func checkHead(wt worktree) error {
	b, err := readSmall(filepath.Join(wt.admin, "HEAD"))
	if err != nil {
		return fmt.Errorf("the HEAD of %s: %w", wt.path, err)
	}
	head := strings.TrimSpace(string(b))
	want := "ref: " + branchRef(wt.agent)
	if head != want {
		what := "a detached HEAD at " + head
		if ref, ok := strings.CutPrefix(head, "ref: "); ok {
			what = "branch " + strings.TrimPrefix(ref, "refs/heads/")
		}
		return fmt.Errorf("the worktree %s has %s checked out, not %s: switch it back (git -C %s switch %s)", wt.path, what, Branch(wt.agent), wt.path, Branch(wt.agent))
	}
	return nil
}

// checkIndexLock reports a leftover index.lock in wt's git dir: a git
// command is running there, or one was killed and left it. batty cannot
// tell which, so it does not remove it.
func checkIndexLock(wt worktree) error {
	name := filepath.Join(wt.admin, "index.lock")
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("the worktree %s is locked by %s: a git command is running in it, or one was killed and left the lock; when no git runs there, remove it (rm %s)", wt.path, name, name)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check %s: %w", name, err)
	}
	return nil
}

// branchHead returns the commit agent's branch points at, "" when the
// branch does not exist.
func (r *Repo) branchHead(ctx context.Context, agent string) (string, error) {
	out, err := r.git(r.top).Run(ctx, "rev-parse", "--verify", "--quiet", branchRef(agent)+"^{commit}")
	if err != nil {
		if ctx.Err() == nil && ExitCode(err) == 1 {
			return "", nil
		}
		return "", fmt.Errorf("the branch %s: %w", Branch(agent), err)
	}
	return strings.TrimSpace(out), nil
}

// Ensure makes sure agent has its worktree at Path(agent) on branch
// batty/<agent>, and reports whether it checked one out. It holds the
// repository lock and is idempotent:
//
//   - a valid worktree there: nothing is done;
//   - the branch exists but the worktree does not (its directory was
//     deleted, or never made): stale registrations are pruned (git worktree
//     prune) and the worktree is checked out again on the existing branch,
//     which is never reset, so its commits are kept;
//   - neither exists: base must exist (CheckBase) and the filesystem must
//     have Options.MinFreeBytes free (ErrLowDisk); then a new branch
//     batty/<agent> is made at base and checked out in a new worktree.
//
// Something else at Path(agent) — a symbolic link, a file, or a directory
// that is not a worktree of this repository and is not empty — is refused
// with an error naming it, and left alone. No hook runs.
func (r *Repo) Ensure(ctx context.Context, agent, base string) (created bool, err error) {
	if err := checkAgent(agent); err != nil {
		return false, err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	_, exists, err := r.lookup(agent)
	var nw *notWorktreeError
	switch {
	case err == nil && exists:
		return false, nil
	case errors.As(err, &nw):
		if empty, eerr := emptyDir(r.Path(agent)); eerr != nil || !empty {
			return false, err
		}
	case err != nil:
		return false, err
	}
	if err := atomicfile.MkdirAll(r.worktrees); err != nil {
		return false, fmt.Errorf("worktree of %s: %w", agent, err)
	}
	if err := r.checkFree(); err != nil {
		return false, fmt.Errorf("worktree of %s: %w", agent, err)
	}
	head, err := r.branchHead(ctx, agent)
	if err != nil {
		return false, err
	}
	g := r.git(r.top)
	if _, err := g.Run(ctx, "worktree", "prune"); err != nil {
		return false, fmt.Errorf("worktree of %s: %w", agent, err)
	}
	path := r.Path(agent)
	if head != "" {
		if _, err := g.Run(ctx, "worktree", "add", "--", path, Branch(agent)); err != nil {
			return false, fmt.Errorf("check out %s again in %s: %w", Branch(agent), path, err)
		}
		return true, nil
	}
	if err := r.CheckBase(ctx, base); err != nil {
		return false, fmt.Errorf("worktree of %s: %w", agent, err)
	}
	if _, err := g.Run(ctx, "worktree", "add", "--no-track", "-b", Branch(agent), "--", path, "refs/heads/"+base); err != nil {
		return false, fmt.Errorf("make the worktree of %s at %s: %w", agent, path, err)
	}
	return true, nil
}

// emptyDir reports whether dir (not followed if a link) is an empty
// directory.
func emptyDir(dir string) (bool, error) {
	d, err := atomicfile.OpenDir(dir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	names, err := d.Names()
	return err == nil && len(names) == 0, err
}

// checkFree refuses (ErrLowDisk) when the filesystem of the worktrees has
// less than the threshold free for an unprivileged user.
func (r *Repo) checkFree() error {
	var st unix.Statfs_t
	if err := unix.Statfs(r.worktrees, &st); err != nil {
		return fmt.Errorf("free space of %s: %w", r.worktrees, &os.PathError{Op: "statfs", Path: r.worktrees, Err: err})
	}
	return lowDisk(r.worktrees, st.Bavail*uint64(st.Bsize), r.minFree)
}

// lowDisk is checkFree's decision: nil when free >= min, else ErrLowDisk
// naming dir, the free bytes and the threshold.
func lowDisk(dir string, free, min uint64) error {
	if free >= min {
		return nil
	}
	return fmt.Errorf("%w: %s has %d bytes (%s) free, less than the %d bytes (%s) batty keeps free before checking out a worktree; free some space",
		ErrLowDisk, dir, free, HumanBytes(free), min, HumanBytes(min))
}

// HumanBytes writes n in binary units with one decimal ("1.5 GiB"). It is
// a pure function.
func HumanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
