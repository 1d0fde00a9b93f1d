package workspaces

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/battyhq/batty/team"
)

// DefaultMinFree is the free space Ensure keeps on the filesystem of the
// worktrees when Options.MinFreeBytes is 0: 1 GiB.
const DefaultMinFree = 1 << 30

// DefaultCommitter is the committer of the commits batty makes when
// Options.Committer is empty.
const DefaultCommitter = "batty <batty@localhost>"

// BranchPrefix starts the name of every agent's branch (Branch).
const BranchPrefix = "batty/"

// ArchivePrefix starts the refs under which Prune keeps the work of a
// branch it removes with force.
const ArchivePrefix = "refs/batty/archive/"

// Errors matched with errors.Is; each is wrapped with its details.
var (
	// ErrNotRepository: the project directory is not inside a git work
	// tree (a bare repository is not one).
	ErrNotRepository = errors.New("not inside a git work tree")
	// ErrUnknownBase: the base branch does not exist.
	ErrUnknownBase = errors.New("unknown base branch")
	// ErrLowDisk: the filesystem of the worktrees has less free space
	// than Options.MinFreeBytes.
	ErrLowDisk = errors.New("not enough free disk space")
	// ErrUnlanded: pruning would lose uncommitted work or commits that are
	// not on the base branch.
	ErrUnlanded = errors.New("unlanded work")
)

// Options configure Open.
type Options struct {
	// ProjectDir is where team.yaml lives: the top-level of the repository
	// or a directory below it.
	ProjectDir string
	// WorktreesDir holds one worktree per agent, <state>/worktrees
	// (created 0700 when the first worktree is).
	WorktreesDir string
	// LockFile is the file whose flock serialises batty's mutating git
	// commands on the repository across processes (daemon and CLI), e.g.
	// <project>/.batty/state/git.lock. Created 0600 (its directory 0700),
	// never through a symbolic link.
	LockFile string
	// MinFreeBytes: Ensure refuses to check out a worktree when the
	// filesystem of WorktreesDir has less free space (0: DefaultMinFree).
	MinFreeBytes uint64
	// Env and Starter are passed to every Git (and to Setup's command).
	Env     []string
	Starter Starter
	// Committer is the "Name <email>" of the commits batty makes
	// (DefaultCommitter when empty).
	Committer string
}

// Repo is a project's git repository as batty uses it: the user's checkout
// (its top-level), the repository's common git directory, and one worktree
// per agent under the worktrees directory, on branch batty/<agent>.
//
// A Repo is safe for concurrent use. Its mutating methods (Ensure, Setup's
// record of success, Commit, SyncBase, Prune) hold the repository lock: an
// in-process lock and an flock on Options.LockFile, so that they are
// serialised with each other and with other processes' Repos on the same
// lock file. State and Diff only read and take no lock.
type Repo struct {
	top       string   // top-level of the user's checkout, as git prints it
	tops      []string // top and the top-level spelled as ProjectDir spells it
	common    string   // the git common dir, absolute
	worktrees string   // Options.WorktreesDir, absolute
	lockFile  string
	minFree   uint64
	env       []string // never nil
	starter   Starter
	committer ident

	sem     chan struct{} // the in-process half of the repository lock
	setupMu sync.Mutex
	setups  map[string]chan struct{} // agent → its Setup in progress
}

// ident is a git identity.
type ident struct{ name, email string }

// Open finds the repository of opts.ProjectDir. It fails with
// ErrNotRepository when ProjectDir is not inside a git work tree (also when
// it is in a bare repository or inside a .git directory). It only reads:
// no directory or file is created.
func Open(ctx context.Context, opts Options) (*Repo, error) {
	if opts.ProjectDir == "" || opts.WorktreesDir == "" || opts.LockFile == "" {
		return nil, errors.New("workspaces: ProjectDir, WorktreesDir and LockFile are required")
	}
	project, err := filepath.Abs(opts.ProjectDir)
	if err != nil {
		return nil, fmt.Errorf("project directory %s: %w", opts.ProjectDir, err)
	}
	worktrees, err := filepath.Abs(opts.WorktreesDir)
	if err != nil {
		return nil, fmt.Errorf("worktrees directory %s: %w", opts.WorktreesDir, err)
	}
	lockFile, err := filepath.Abs(opts.LockFile)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", opts.LockFile, err)
	}
	committer := opts.Committer
	if committer == "" {
		committer = DefaultCommitter
	}
	id, err := parseIdent(committer)
	if err != nil {
		return nil, fmt.Errorf("workspaces: committer: %w", err)
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	r := &Repo{
		worktrees: worktrees,
		lockFile:  lockFile,
		minFree:   opts.MinFreeBytes,
		env:       append([]string(nil), env...),
		starter:   opts.Starter,
		committer: id,
		sem:       make(chan struct{}, 1),
		setups:    map[string]chan struct{}{},
	}
	if r.minFree == 0 {
		r.minFree = DefaultMinFree
	}
	if fi, err := os.Stat(project); err != nil {
		return nil, fmt.Errorf("project directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("project directory %s: not a directory", project)
	}
	g := r.git(project)
	out, err := g.Run(ctx, "rev-parse", "--is-inside-work-tree")
	if err != nil {
		if ctx.Err() == nil && ExitCode(err) > 0 {
			return nil, fmt.Errorf("%w: %s (%v)", ErrNotRepository, project, err)
		}
		return nil, fmt.Errorf("find the repository of %s: %w", project, err)
	}
	if strings.TrimSpace(out) != "true" {
		return nil, fmt.Errorf("%w: %s is in a bare repository or a .git directory", ErrNotRepository, project)
	}
	out, err = g.Run(ctx, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("find the repository of %s: %w", project, err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] == "" || lines[1] == "" {
		return nil, fmt.Errorf("find the repository of %s: unexpected git rev-parse output %q", project, out)
	}
	r.top, r.common = lines[0], lines[1]
	r.tops = []string{r.top}
	if lexical := stripPrefix(project, lines[2]); lexical != "" && lexical != r.top {
		r.tops = append(r.tops, lexical)
	}
	return r, nil
}

// stripPrefix returns dir without its last components spelled by prefix
// (git's --show-prefix, "a/b/" or ""), or "" when dir does not end with
// them.
func stripPrefix(dir, prefix string) string {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return dir
	}
	dir = filepath.Clean(dir)
	if !strings.HasSuffix(dir, string(filepath.Separator)+prefix) {
		return ""
	}
	return strings.TrimSuffix(dir, string(filepath.Separator)+prefix)
}

// parseIdent parses "Name <email>": a non-empty name and email, neither
// holding a control character or angle bracket.
func parseIdent(s string) (ident, error) {
	open := strings.IndexByte(s, '<')
	if open < 0 || !strings.HasSuffix(s, ">") {
		return ident{}, fmt.Errorf("%q is not \"Name <email>\"", s)
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		return ident{}, fmt.Errorf("%q is not \"Name <email>\": a control character", s)
	}
	id := ident{name: strings.TrimSpace(s[:open]), email: s[open+1 : len(s)-1]}
	if id.name == "" || id.email == "" {
		return ident{}, fmt.Errorf("%q is not \"Name <email>\": empty name or email", s)
	}
	if strings.ContainsAny(id.name+id.email, "<>") {
		return ident{}, fmt.Errorf("%q is not \"Name <email>\": a stray angle bracket", s)
	}
	return id, nil
}

// git returns a Git running in dir with the repo's environment.
func (r *Repo) git(dir string) Git {
	return Git{Dir: dir, Env: r.env, Starter: r.starter}
}

// TopLevel returns the top-level directory of the user's checkout.
func (r *Repo) TopLevel() string { return r.top }

// GitDir returns the repository's common git directory (absolute).
func (r *Repo) GitDir() string { return r.common }

// Path returns the directory of agent's worktree: WorktreesDir/<agent>.
func (r *Repo) Path(agent string) string { return filepath.Join(r.worktrees, agent) }

// Branch returns the branch of agent's worktree: "batty/<agent>".
func Branch(agent string) string { return BranchPrefix + agent }

// branchRef is the full ref of agent's branch.
func branchRef(agent string) string { return "refs/heads/" + Branch(agent) }

// AgentDir returns where agent's Codex runs: its worktree plus cwd's path
// relative to the top-level of the user's checkout, where cwd is the role's
// working directory in that checkout. A cwd outside the checkout (or not
// absolute) maps to the worktree's root. It is pure: paths are compared as
// spelled (the top-level as git prints it, or as Options.ProjectDir spells
// it), and the directory it returns may not exist in the worktree (a
// directory the branch does not track).
func (r *Repo) AgentDir(agent, cwd string) string {
	return agentDir(r.tops, r.Path(agent), cwd)
}

// agentDir is AgentDir's decision: worktree joined with cwd relative to the
// first of tops that contains it.
func agentDir(tops []string, worktree, cwd string) string {
	if !filepath.IsAbs(cwd) {
		return worktree
	}
	cwd = filepath.Clean(cwd)
	for _, top := range tops {
		rel, err := filepath.Rel(top, cwd)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		return filepath.Join(worktree, rel)
	}
	return worktree
}

// checkAgent refuses a name that is not a valid agent name (team.ValidName:
// lower-case letters, digits and inner dashes), so that it is one path
// element and one ref component.
func checkAgent(agent string) error {
	if !team.ValidName(agent) {
		return fmt.Errorf("workspaces: %q is not a valid agent name", agent)
	}
	return nil
}

// DefaultBase returns the branch checked out in the user's checkout, the
// base of new worktrees when the team names none. A detached HEAD is an
// error naming the fix. The branch may have no commit yet (CheckBase tells).
func (r *Repo) DefaultBase(ctx context.Context) (string, error) {
	out, err := r.git(r.top).Run(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		if ctx.Err() == nil && ExitCode(err) == 1 {
			return "", fmt.Errorf("the checkout at %s has a detached HEAD, so there is no branch for agents' worktrees to start from: check out a branch there (git switch <branch>) or name the base branch", r.top)
		}
		return "", fmt.Errorf("the branch of %s: %w", r.top, err)
	}
	return strings.TrimSpace(out), nil
}

// CheckBase checks that refs/heads/<base> exists and is a commit; else
// ErrUnknownBase listing some existing branches (batty's own left out).
func (r *Repo) CheckBase(ctx context.Context, base string) error {
	if err := checkBranchName(base); err != nil {
		return fmt.Errorf("%w: %v", ErrUnknownBase, err)
	}
	g := r.git(r.top)
	_, err := g.Run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+base+"^{commit}")
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || ExitCode(err) <= 0 {
		return fmt.Errorf("check base branch %q: %w", base, err)
	}
	out, lerr := g.Run(ctx, "for-each-ref", "--sort=-committerdate", "--format=%(refname:short)", "refs/heads/")
	if lerr != nil {
		return fmt.Errorf("%w %q in %s (listing the branches: %v)", ErrUnknownBase, base, r.top, lerr)
	}
	return fmt.Errorf("%w %q in %s: %s", ErrUnknownBase, base, r.top, describeBranches(out, 8))
}

// describeBranches says which branches of for-each-ref's output exist, at
// most max of them, batty's own left out.
func describeBranches(out string, max int) string {
	var names []string
	more := 0
	for _, name := range strings.Split(out, "\n") {
		if name == "" || strings.HasPrefix(name, BranchPrefix) {
			continue
		}
		if len(names) == max {
			more++
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return "the repository has no branch with a commit yet (commit something first)"
	}
	s := "existing branches: " + strings.Join(names, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// checkBranchName refuses a name git would not take as a branch, or that
// could be read as something else on a command line (an option, a range,
// a reflog selector).
func checkBranchName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%q is not a branch name: %s", name, why) }
	switch {
	case name == "":
		return bad("empty")
	case strings.HasPrefix(name, "-"):
		return bad("starts with -")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad("empty path component")
	case strings.Contains(name, ".."):
		return bad("contains ..")
	case strings.Contains(name, "@{") || name == "@":
		return bad("contains @{")
	case strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock"):
		return bad("ends with . or .lock")
	case strings.ContainsAny(name, " ~^:?*[\\"):
		return bad("contains one of space ~ ^ : ? * [ \\")
	case strings.IndexFunc(name, isControl) >= 0:
		return bad("contains a control character")
	}
	for _, comp := range strings.Split(name, "/") {
		if strings.HasPrefix(comp, ".") {
			return bad("a component starts with .")
		}
	}
	return nil
}

// isControl reports an ASCII control character or DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
