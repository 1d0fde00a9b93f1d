package landing

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/workspaces"
)

// repo is a scratch project: a git repository on main whose top level is
// also the project directory, its state directory (with the worktrees)
// outside it, with
// a git configuration of its own (HOME in the test's temp dir, no system
// or global file).
type repo struct {
	t      *testing.T
	top    string
	env    []string
	layout project.Layout
	now    time.Time
	mu     sync.Mutex
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	root := t.TempDir()
	top := filepath.Join(root, "proj")
	home := filepath.Join(root, "home")
	for _, d := range []string{top, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := &repo{t: t, top: top, layout: project.Layout{Dir: filepath.Join(root, "state"), Project: top}, now: epoch,
		env: []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "PATH=" + os.Getenv("PATH")}}
	r.git(top, "init", "-q", "-b", "main")
	r.write(top, ".git/info/exclude", ".batty/\n")
	r.commit(top, "README", "hello\n", "initial")
	r.commit(top, "shared.txt", "one\ntwo\nthree\n", "shared file")
	return r
}

// git runs git in dir as the test's user and returns its output.
func (r *repo) git(dir string, args ...string) string {
	r.t.Helper()
	out, err := workspaces.Git{Dir: dir, Env: r.env}.Run(context.Background(),
		append([]string{"-c", "user.name=Tester", "-c", "user.email=tester@example.com"}, args...)...)
	if err != nil {
		r.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out)
}

func (r *repo) write(dir, name, content string) {
	r.t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) read(dir, name string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// commit writes name in the work tree dir and commits it as an agent's
// turn would, with a Batty-Message trailer.
func (r *repo) commit(dir, name, content, msg string) string {
	r.t.Helper()
	r.write(dir, name, content)
	r.git(dir, "add", name)
	r.git(dir, "commit", "-q", "-m", msg, "-m", "Batty-Message: "+strings.ReplaceAll(msg, " ", "-"))
	return r.git(dir, "rev-parse", "HEAD")
}

// agent makes the worktree of agent on batty/<agent>, from main, and
// returns its directory.
func (r *repo) agent(name string) string {
	r.t.Helper()
	dir := filepath.Join(r.worktrees(), name)
	r.git(r.top, "worktree", "add", "-q", "-b", "batty/"+name, dir, "main")
	return dir
}

func (r *repo) worktrees() string { return r.layout.WorktreesDir() }

func (r *repo) tip(ref string) string {
	r.t.Helper()
	return r.git(r.top, "rev-parse", ref)
}

// clock returns the test's clock; advance moves it.
func (r *repo) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *repo) advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.now.Add(d)
}

func (r *repo) options() Options {
	return Options{Layout: r.layout, TopLevel: r.top, WorktreesDir: r.worktrees(), Base: "main", Env: r.env, Now: r.clock}
}

func (r *repo) open(o Options) *Queue {
	r.t.Helper()
	q, err := Open(o)
	if err != nil {
		r.t.Fatal(err)
	}
	return q
}

func (r *repo) enqueue(q *Queue, agent string) Request {
	r.t.Helper()
	req, _, err := q.Enqueue(agent, "human", false)
	if err != nil {
		r.t.Fatal(err)
	}
	return req
}

func (r *repo) land(q *Queue, id string) Request {
	r.t.Helper()
	req, err := q.Land(context.Background(), id)
	if err != nil {
		r.t.Fatalf("Land(%s): %v", id, err)
	}
	return req
}

// drain lands every request that is due, in order.
func (r *repo) drain(q *Queue) {
	r.t.Helper()
	for {
		req, ok := q.Next()
		if !ok {
			return
		}
		if got := r.land(q, req.ID); !got.State.Finished() && got.State != Waiting {
			r.t.Fatalf("Land left %s %s", got.ID, got.State)
		}
	}
}

// merges lists the subjects of the merge commits on main, newest first.
func (r *repo) merges() []string {
	r.t.Helper()
	out := r.git(r.top, "log", "--merges", "--format=%s", "main")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// status is the top level's `git status --porcelain` (untracked included).
func (r *repo) status() string {
	r.t.Helper()
	return r.git(r.top, "status", "--porcelain")
}

// writeState writes the state file as a daemon killed at some point
// would have left it.
func (r *repo) writeState(reqs ...Request) {
	r.t.Helper()
	if err := project.SaveJSON(r.layout, stateFileName, fileState{Requests: reqs}); err != nil {
		r.t.Fatal(err)
	}
}

// heldLock is a sync.Locker that records whether it is held.
type heldLock struct {
	mu    sync.Mutex
	held  bool
	times int
}

func (l *heldLock) Lock() {
	l.mu.Lock()
	l.held = true
	l.times++
}

func (l *heldLock) Unlock() {
	l.held = false
	l.mu.Unlock()
}
