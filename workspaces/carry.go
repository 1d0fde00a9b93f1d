package workspaces

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
)

// Carrying commits between two repositories that share no filesystem (the
// project's here and an agent's clone on another host): the objects travel
// as a git bundle over whatever stream connects them, the refs are set by
// the receiver from commit ids it is told (compare and swap), so a bundle
// never moves a ref by itself.

// HereRef is the ref under which a clone keeps the agent's branch as the
// project's repository had it, to be merged into the clone's branch.
func HereRef(agent string) string { return "refs/batty/here/" + agent }

// BranchRef is the full name of agent's branch, refs/heads/batty/<agent>.
func BranchRef(agent string) string { return branchRef(agent) }

// Tips returns the commit each of refs (full names) points at, for those
// that exist. It only reads.
func (r *Repo) Tips(ctx context.Context, refs ...string) (map[string]string, error) {
	tips := map[string]string{}
	if len(refs) == 0 {
		return tips, nil
	}
	out, err := r.git(r.top).Run(ctx, append([]string{"for-each-ref", "--format=%(refname) %(objectname)"}, refs...)...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", strings.Join(refs, ", "), err)
	}
	for line := range strings.Lines(out) {
		name, sha, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if ok && contains(refs, name) && validCommit(sha) {
			tips[name] = sha
		}
	}
	return tips, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Known returns those of shas that are commits in the repository, in
// order. It only reads.
func (r *Repo) Known(ctx context.Context, shas ...string) ([]string, error) {
	var in strings.Builder
	var asked []string
	for _, s := range shas {
		if validCommit(s) {
			in.WriteString(s + "\n")
			asked = append(asked, s)
		}
	}
	if len(asked) == 0 {
		return nil, nil
	}
	out, err := r.git(r.top).RunInput(ctx, in.String(), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return nil, fmt.Errorf("look up commits: %w", err)
	}
	var known []string
	for line := range strings.Lines(out) {
		sha, typ, _ := strings.Cut(strings.TrimSpace(line), " ")
		if typ == "commit" && contains(asked, sha) {
			known = append(known, sha)
		}
	}
	return known, nil
}

// IsAncestor reports whether commit a is an ancestor of (or is) commit b,
// both in the repository. It only reads.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.git(r.top).Run(ctx, "merge-base", "--is-ancestor", a, b)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() == nil && ExitCode(err) == 1:
		return false, nil
	}
	return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, err)
}

// Missing counts the commits reachable from refs and not from haves
// (commit ids; those unknown here are ignored). It only reads.
func (r *Repo) Missing(ctx context.Context, refs, haves []string) (int, error) {
	known, err := r.Known(ctx, haves...)
	if err != nil {
		return 0, err
	}
	args := append([]string{"rev-list", "--count"}, refs...)
	for _, h := range known {
		args = append(args, "^"+h)
	}
	out, err := r.git(r.top).Run(ctx, append(args, "--")...)
	if err != nil {
		return 0, fmt.Errorf("count the commits to send: %w", err)
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// WriteBundle writes to w a git bundle of the commits reachable from refs
// (full names of refs that exist) and not from haves (commit ids; those
// unknown here are ignored), and reports whether it wrote one: nothing is
// written when there is no such commit. It only reads the repository.
func (r *Repo) WriteBundle(ctx context.Context, w io.Writer, refs, haves []string) (bool, error) {
	n, err := r.Missing(ctx, refs, haves)
	if err != nil || n == 0 {
		return false, err
	}
	known, err := r.Known(ctx, haves...)
	if err != nil {
		return false, err
	}
	args := append([]string{"bundle", "create", "-q", "-"}, refs...)
	for _, h := range known {
		args = append(args, "^"+h)
	}
	if err := r.git(r.top).RunTo(ctx, w, args...); err != nil {
		return false, fmt.Errorf("bundle %s: %w", strings.Join(refs, ", "), err)
	}
	return true, nil
}

// ReadBundle stores in the repository the objects of the git bundle read
// from in (exactly size bytes): no ref is changed. The bundle is written
// to a private temporary file in the repository's git directory first and
// removed after; a bundle whose prerequisites the repository lacks is
// refused by git.
func (r *Repo) ReadBundle(ctx context.Context, in io.Reader, size int64) error {
	f, err := r.CreateTemp("incoming")
	if err != nil {
		return fmt.Errorf("receive a bundle: %w", err)
	}
	defer os.Remove(f.Name())
	n, err := io.Copy(f, io.LimitReader(in, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("the stream ended after %d of %d bytes", n, size)
	}
	if err != nil {
		return fmt.Errorf("receive a bundle: %w", err)
	}
	if _, err := r.git(r.top).Run(ctx, "bundle", "unbundle", f.Name()); err != nil {
		return fmt.Errorf("receive a bundle: %w", err)
	}
	return nil
}

// tempPrefix starts the names of CreateTemp's files.
const tempPrefix = "batty-tmp-"

// CreateTemp creates a new private (0600) temporary file in the
// repository's git directory, its name saying what it is for; the caller
// removes it. A process killed before removing one leaves it:
// SweepTemp removes those.
func (r *Repo) CreateTemp(what string) (*os.File, error) {
	f, err := os.CreateTemp(r.common, tempPrefix+what+"-*")
	if err != nil {
		return nil, fmt.Errorf("a temporary file in %s: %w", r.common, err)
	}
	return f, nil
}

// SweepTemp removes CreateTemp's files not modified for age (every one
// when age is 0: only when no other process of the repository's can be
// using one) and returns how many it removed.
func (r *Repo) SweepTemp(age time.Duration, now time.Time) int {
	ents, err := os.ReadDir(r.common)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err != nil || now.Sub(fi.ModTime()) < age {
			continue
		}
		if os.Remove(filepath.Join(r.common, e.Name())) == nil {
			n++
		}
	}
	return n
}

// SetRef points ref (a full name) at commit sha, which must be in the
// repository, when it points at old ("": when it does not exist), holding
// the repository lock; a ref that moved meanwhile is an error. It does not
// check anything out: a branch checked out in a worktree must not be given
// to it.
func (r *Repo) SetRef(ctx context.Context, ref, sha, old string) error {
	if !validCommit(sha) || (old != "" && !validCommit(old)) {
		return fmt.Errorf("set %s: %q or %q is not a commit id", ref, sha, old)
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if old == "" {
		old = strings.Repeat("0", len(sha))
	}
	if _, err := r.git(r.top).Run(ctx, "update-ref", "-m", "batty: carried", ref, sha+"^{commit}", old); err != nil {
		return fmt.Errorf("set %s to %s: %w", ref, sha, err)
	}
	return nil
}

// TakeBranch fast-forwards agent's branch here to sha (in the
// repository), the branch as the agent's clone elsewhere has it, and
// reports whether it moved. A sha that does not contain the branch here
// (the clone has not merged what was done here yet) leaves it as it is:
// nothing here is ever dropped. The branch must not be checked out here.
func (r *Repo) TakeBranch(ctx context.Context, agent, sha string) (bool, error) {
	if err := checkAgent(agent); err != nil {
		return false, err
	}
	old, err := r.branchHead(ctx, agent)
	if err != nil || old == sha {
		return false, err
	}
	if old != "" {
		ff, err := r.IsAncestor(ctx, old, sha)
		if err != nil || !ff {
			return false, err
		}
	}
	return true, r.SetRef(ctx, branchRef(agent), sha, old)
}

// CheckedOut reports whether agent has a worktree here. It only reads.
func (r *Repo) CheckedOut(agent string) (bool, error) {
	_, exists, err := r.lookup(agent)
	var nw *notWorktreeError
	if errors.As(err, &nw) {
		return false, nil
	}
	return exists, err
}

// InitClone makes dir a repository for agents' clones when it is not one
// yet (git init, its HEAD on a branch that is never made, so that no
// branch is checked out in it), holding the flock of lockFile; its parent
// is created 0700. The repository is made beside dir and renamed into
// place, so a killed init leaves nothing at dir; an empty directory at
// dir is replaced, anything else there is refused. It is idempotent and
// safe for concurrent callers.
func InitClone(ctx context.Context, dir, lockFile string, env []string) error {
	r := &Repo{lockFile: lockFile, sem: make(chan struct{}, 1), env: env}
	if err := atomicfile.MkdirAll(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("clone repository %s: %w", dir, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git", "HEAD")); err == nil {
		return nil
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Lstat(filepath.Join(dir, ".git", "HEAD")); err == nil {
		return nil
	}
	// Made beside and renamed into place: a killed init leaves no
	// half-made repository where the next one would look.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".init-*")
	if err != nil {
		return fmt.Errorf("clone repository %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	g := r.git(tmp)
	if _, err := g.Run(ctx, "init", "-q"); err != nil {
		return fmt.Errorf("clone repository %s: %w", dir, err)
	}
	if _, err := g.Run(ctx, "symbolic-ref", "HEAD", "refs/heads/batty-clone-head"); err != nil {
		return fmt.Errorf("clone repository %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clone repository %s: not a repository, and not empty: move it away: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("clone repository %s: %w", dir, err)
	}
	parent, err := atomicfile.OpenDir(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("clone repository %s: %w", dir, err)
	}
	defer parent.Close()
	if err := parent.Sync(); err != nil {
		return fmt.Errorf("clone repository %s: %w", dir, err)
	}
	return nil
}

// TempSpace returns the free space, for an unprivileged user, of the
// filesystem of the repository's git directory, where CreateTemp's files
// go, and the space the repository keeps free (Options.MinFreeBytes,
// DefaultMinFree when 0).
func (r *Repo) TempSpace() (free, keep uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(r.common, &st); err != nil {
		return 0, r.minFree, fmt.Errorf("free space of %s: %w", r.common, &os.PathError{Op: "statfs", Path: r.common, Err: err})
	}
	return st.Bavail * uint64(st.Bsize), r.minFree, nil
}

// ObjectsSize returns the size in bytes of the repository's objects,
// loose and packed, as git count-objects reports them.
func (r *Repo) ObjectsSize(ctx context.Context) (uint64, error) {
	out, err := r.git(r.top).Run(ctx, "count-objects", "-v")
	if err != nil {
		return 0, fmt.Errorf("size of the repository: %w", err)
	}
	return countObjectsSize(out)
}

// countObjectsSize adds up the "size" and "size-pack" lines (KiB) of the
// output of git count-objects -v, in bytes. It is a pure function.
func countObjectsSize(out string) (uint64, error) {
	var total uint64
	for _, line := range strings.Split(out, "\n") {
		key, val, ok := strings.Cut(line, ": ")
		if !ok || (key != "size" && key != "size-pack") {
			continue
		}
		kib, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("git count-objects: %s: %w", line, err)
		}
		total += kib << 10
	}
	return total, nil
}
