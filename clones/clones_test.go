package clones

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/procstat"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// TestMain makes the test binary the host's batty: run as `<binary>
// clone-host --state-dir <dir>` in a project directory, it serves one
// request as `batty clone-host` does.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "clone-host" && os.Args[2] == "--state-dir" {
		dir, err := os.Getwd()
		if err == nil {
			err = Serve(context.Background(), os.Stdin, os.Stdout, project.Layout{Dir: os.Args[3], Project: dir})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "clone-host:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// gitEnv is the environment of every git of the tests: a scratch HOME, no
// system or global config (no user.name anywhere).
func gitEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
}

func git(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// userCommit commits everything in the checkout dir as the user would.
func userCommit(t testing.TB, env []string, dir, msg string) string {
	t.Helper()
	git(t, env, dir, "add", "-A")
	git(t, env, dir, "-c", "user.name=Test User", "-c", "user.email=user@example.invalid", "commit", "-q", "--no-verify", "-m", msg)
	return git(t, env, dir, "rev-parse", "HEAD")
}

// project is a repository here with a commit on main, opened.
type fixture struct {
	env  []string
	top  string
	repo *workspaces.Repo
}

func newProject(t testing.TB) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{env: gitEnv(root), top: filepath.Join(root, "proj")}
	if err := os.Mkdir(f.top, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, f.env, f.top, "init", "-q", "-b", "main")
	write(t, filepath.Join(f.top, "README"), "hello\n")
	write(t, filepath.Join(f.top, ".gitignore"), ".batty/\n")
	userCommit(t, f.env, f.top, "initial")
	r, err := workspaces.Open(context.Background(), workspaces.Options{ProjectDir: f.top,
		WorktreesDir: filepath.Join(f.top, ".batty", "worktrees"), LockFile: filepath.Join(f.top, ".batty", "state", "git.lock"),
		Env: f.env, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.repo = r
	return f
}

// impl is one Workspace under test and where its worktree's files are.
type impl struct {
	ws  workspaces.Workspace
	dir string // the worktree's directory, as the test reaches it
}

// local is agent's workspace in a worktree here.
func local(f *fixture, agent string) impl {
	return impl{ws: workspaces.Local{Repo: f.repo, Agent: agent, Base: "main"}, dir: f.repo.Path(agent)}
}

// remote is agent's workspace in a clone on a host: a command host whose
// project directory is hostDir and whose home directory is hostDir's
// parent, with the test binary as its batty.
func remote(t testing.TB, f *fixture, agent, hostDir string) impl {
	return remoteIn(t, f, agent, hostDir, filepath.Dir(hostDir))
}

// remoteIn is remote with the host's home directory home.
func remoteIn(t testing.TB, f *fixture, agent, hostDir, home string) impl {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{
		Transport: &hosts.Transport{Env: append(gitEnv(home), "CLONES_TEST=1")},
		Host:      team.Host{Name: "box", Command: []string{"env"}},
		Dir:       hostDir,
		Batty:     func(context.Context) (string, error) { return self, nil },
		Repo:      f.repo, Agent: agent, Base: "main", MinFree: 1,
	}
	return impl{ws: c, dir: filepath.Join(stateThere(hostDir, home), "worktrees", agent)}
}

// stateThere is the project's state directory on a host whose project
// directory is hostDir and home directory home, where its clones are.
func stateThere(hostDir, home string) string {
	return hosts.ExpandHome(hosts.StateDir(hostDir), home)
}

// both runs test on the local workspace and on the clone on a host.
func both(t *testing.T, test func(t *testing.T, f *fixture, w impl)) {
	t.Run("local", func(t *testing.T) {
		f := newProject(t)
		test(t, f, local(f, "eng-1"))
	})
	t.Run("host", func(t *testing.T) {
		f := newProject(t)
		test(t, f, remote(t, f, "eng-1", filepath.Join(t.TempDir(), "host", "proj")))
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// branchHere is the agent's branch in the project's repository here.
func branchHere(t *testing.T, f *fixture) string {
	t.Helper()
	tips, err := f.repo.Tips(context.Background(), workspaces.BranchRef("eng-1"))
	if err != nil {
		t.Fatal(err)
	}
	return tips[workspaces.BranchRef("eng-1")]
}

// The conformance suite: what the daemon relies on, for every Workspace.

func TestWorkspacePrepareCommitState(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, w impl) {
		p, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{GitTimeout: time.Minute})
		if err != nil || !p.Made || !p.Created || p.Leftover != "" {
			t.Fatalf("first prepare: %+v, %v", p, err)
		}
		if b, _ := os.ReadFile(filepath.Join(w.dir, "README")); string(b) != "hello\n" {
			t.Fatalf("the worktree has README %q", b)
		}
		write(t, filepath.Join(w.dir, "feature.go"), "package feature\n")
		c, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "add the feature", MessageID: "m-1"})
		sha, committed := c.Head, c.Made
		if err != nil || !committed {
			t.Fatalf("commit: %v %v", committed, err)
		}
		if here := branchHere(t, f); here != sha {
			t.Fatalf("the branch here is %q, the commit %q", here, sha)
		}
		msg := git(t, f.env, f.top, "log", "-1", "--format=%an%n%B", "batty/eng-1")
		if !strings.Contains(msg, "eng-1\nadd the feature") || !strings.Contains(msg, "Batty-Message: m-1") {
			t.Fatalf("the commit here reads %q", msg)
		}
		st, err := w.ws.State(ctx(t))
		if err != nil || !st.Exists || st.Ahead != 1 || st.Behind != 0 || st.Dirty != 0 || st.Head != sha {
			t.Fatalf("state: %+v, %v", st, err)
		}
		// Nothing changed: no commit.
		if c, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "nothing"}); err != nil || c.Made {
			t.Fatalf("empty commit: %v %v", c.Made, err)
		}
		// What a killed run left is committed by the next prepare.
		write(t, filepath.Join(w.dir, "half.txt"), "half\n")
		p, err = w.ws.Prepare(ctx(t), workspaces.PrepareOptions{GitTimeout: time.Minute})
		if err != nil || p.Created || !p.Made || p.Leftover == "" {
			t.Fatalf("second prepare: %+v, %v", p, err)
		}
		if here := branchHere(t, f); here != p.Leftover {
			t.Fatalf("the branch here is %q, the leftover commit %q", here, p.Leftover)
		}
	})
}

func TestWorkspaceMergeBaseLeavesTheConflict(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, w impl) {
		if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(w.dir, "README"), "agent's\n")
		if _, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "readme"}); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(f.top, "README"), "user's\n")
		base := userCommit(t, f.env, f.top, "the user's readme")
		res, err := w.ws.MergeBase(ctx(t))
		if err != nil || !slices.Equal(res.Conflicts, []string{"README"}) {
			t.Fatalf("merge: %+v, %v", res, err)
		}
		if b, _ := os.ReadFile(filepath.Join(w.dir, "README")); !strings.Contains(string(b), "<<<<<<<") {
			t.Fatalf("no markers in README: %q", b)
		}
		// Markers left: nothing is committed.
		if c, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "too early"}); err == nil && c.Made {
			t.Fatal("c.Made with markers in the worktree")
		}
		write(t, filepath.Join(w.dir, "README"), "both\n")
		c, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "resolved"})
		sha, committed := c.Head, c.Made
		if err != nil || !committed {
			t.Fatalf("commit of the resolution: %v %v", committed, err)
		}
		if parents := git(t, f.env, f.top, "log", "-1", "--format=%P", sha); !strings.Contains(parents, base) {
			t.Fatalf("the merge commit here has parents %q, not the base %s", parents, base)
		}
		st, err := w.ws.State(ctx(t))
		if err != nil || st.Behind != 0 || st.Ahead != 2 {
			t.Fatalf("state after the merge: %+v, %v", st, err)
		}
		// A clean merge of a new base.
		write(t, filepath.Join(f.top, "OTHER"), "other\n")
		userCommit(t, f.env, f.top, "other")
		if res, err := w.ws.MergeBase(ctx(t)); err != nil || !res.Merged {
			t.Fatalf("clean merge: %+v, %v", res, err)
		}
		if b, _ := os.ReadFile(filepath.Join(w.dir, "OTHER")); string(b) != "other\n" {
			t.Fatalf("the merged file in the worktree: %q", b)
		}
	})
}

func TestWorkspaceFailedSetup(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, w impl) {
		_, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{Setup: "echo preparing; echo broken >&2; exit 3", SetupTimeout: time.Minute})
		var se *workspaces.SetupError
		if !errors.As(err, &se) || !strings.Contains(se.Output, "broken") {
			t.Fatalf("prepare with a failing setup: %v", err)
		}
		if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{Setup: "touch ok", SetupTimeout: time.Minute}); err != nil {
			t.Fatalf("prepare with a good setup: %v", err)
		}
		if _, err := os.Stat(filepath.Join(w.dir, "ok")); err != nil {
			t.Fatalf("setup did not run in the worktree: %v", err)
		}
	})
}

// The setup runs in Codex's sandbox on a host as it does here: it writes
// its worktree; a write outside it (the project's checkout, the
// directory above) fails the preparation and writes nothing.
func TestWorkspaceSetupInTheSandbox(t *testing.T) {
	bin := codextest.Sandbox(t)
	both(t, func(t *testing.T, f *fixture, w impl) {
		sb := &sandbox.Policy{Bin: bin, Homes: filepath.Join(t.TempDir(), "homes"), Network: true}
		escaped := filepath.Join(filepath.Dir(filepath.Dir(w.dir)), "escaped")
		// The directory of the worktrees, in the state directory: here the
		// daemon denies it, on a host the host does.
		state := filepath.Dir(filepath.Dir(w.dir))
		if _, ok := w.ws.(workspaces.Local); ok {
			sb.Deny = []string{state}
		}
		// Another agent's outbox there: what no setup may read (on a host
		// the state directory is denied child by child, its clone
		// repository left readable).
		private := filepath.Join(state, "outboxes", "other", "private")
		if err := os.MkdirAll(filepath.Dir(private), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(private, []byte("classified\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The setup passes the first time when it can read the state
		// directory (the test then fails).
		_, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{Setup: `touch ok; cat "` + private + `" && exit 0; echo pwned > "` + escaped + `"`, SetupTimeout: time.Minute, SetupSandbox: sb})
		var se *workspaces.SetupError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), sandbox.KeyOff) {
			t.Fatalf("a setup that writes outside its worktree: %v", err)
		}
		if _, err := os.Stat(escaped); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the setup wrote %s: %v", escaped, err)
		}
		if _, err := os.Stat(filepath.Join(w.dir, "ok")); err != nil {
			t.Fatalf("the setup did not run in its worktree: %v", err)
		}
	})
}

func TestWorkspaceLowDisk(t *testing.T) {
	both(t, func(t *testing.T, f *fixture, w impl) {
		switch ws := w.ws.(type) {
		case workspaces.Local:
			r, err := workspaces.Open(context.Background(), workspaces.Options{ProjectDir: f.top,
				WorktreesDir: filepath.Join(f.top, ".batty", "worktrees"), LockFile: filepath.Join(f.top, ".batty", "state", "git.lock"),
				Env: f.env, MinFreeBytes: 1 << 62})
			if err != nil {
				t.Fatal(err)
			}
			w.ws = workspaces.Local{Repo: r, Agent: ws.Agent, Base: ws.Base}
		case *Client:
			ws.MinFree = 1 << 62
		}
		if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{}); !errors.Is(err, workspaces.ErrLowDisk) {
			t.Fatalf("prepare on a full disk: %v", err)
		}
	})
}

// What the clone on a host adds.

// The host lost its clone (a new machine, a wiped disk): the next prepare
// makes it again from the branch here, commits kept.
func TestCloneMadeAgainFromTheBranchHere(t *testing.T) {
	f := newProject(t)
	hostDir := filepath.Join(t.TempDir(), "proj")
	w := remote(t, f, "eng-1", hostDir)
	if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, "a.txt"), "a\n")
	c, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "a"})
	sha := c.Head
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(stateThere(hostDir, filepath.Dir(hostDir))); err != nil {
		t.Fatal(err)
	}
	w = remote(t, f, "eng-1", hostDir)
	p, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{})
	if err != nil || !p.Created {
		t.Fatalf("prepare on a host without the clone: %+v, %v", p, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(b) != "a\n" {
		t.Fatalf("the commit is not in the new clone: %q", b)
	}
	if here := branchHere(t, f); here != sha {
		t.Fatalf("the branch here moved: %s, was %s", here, sha)
	}
}

// The agent worked here meanwhile (its role ran here, then on the host
// again): its commits here are merged into the host's branch, and both
// sides' work is on the branch here after.
func TestCloneMergesWorkDoneHere(t *testing.T) {
	f := newProject(t)
	w := remote(t, f, "eng-1", filepath.Join(t.TempDir(), "proj"))
	if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, "there.txt"), "there\n")
	if _, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "there"}); err != nil {
		t.Fatal(err)
	}
	// The branch here moves on (a worktree here, made and removed).
	l := local(f, "eng-1")
	if _, err := l.ws.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(l.dir, "here.txt"), "here\n")
	c, err := l.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "here"})
	hereCommit := c.Head
	if err != nil {
		t.Fatal(err)
	}
	git(t, f.env, f.top, "worktree", "remove", l.dir)
	// Meanwhile the host's clone has uncommitted work too.
	write(t, filepath.Join(w.dir, "pending.txt"), "pending\n")

	p, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{})
	if err != nil || p.Leftover == "" {
		t.Fatalf("prepare: %+v, %v", p, err)
	}
	for _, name := range []string{"there.txt", "here.txt", "pending.txt"} {
		if _, err := os.Stat(filepath.Join(w.dir, name)); err != nil {
			t.Errorf("%s is not in the clone: %v", name, err)
		}
	}
	head := branchHere(t, f)
	if ok, err := f.repo.IsAncestor(context.Background(), hereCommit, head); err != nil || !ok {
		t.Fatalf("the branch here (%s) lost the commit made here (%s): %v", head, hereCommit, err)
	}
	if out := git(t, f.env, f.top, "show", head+":pending.txt"); out != "pending" {
		t.Fatalf("the host's leftover is not on the branch here: %q", out)
	}
}

// The answer is found after what a login shell prints, and a bundle is
// read exactly.
func TestCloneSkipsWhatTheShellPrints(t *testing.T) {
	f := newProject(t)
	hostDir := filepath.Join(t.TempDir(), "proj")
	w := remote(t, f, "eng-1", hostDir)
	c := w.ws.(*Client)
	c.Host.Command = []string{"sh", "-c", `echo "Welcome to the host {"; echo "batty-clonex"; exec "$@"`, "host"}
	if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, "big.bin"), strings.Repeat("0123456789abcdef", 1<<16))
	done, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "big"})
	sha := done.Head
	if err != nil || branchHere(t, f) != sha {
		t.Fatalf("commit through a chatty shell: %v", err)
	}
}

// Prune of an agent on a host never loses its work and leaves nothing
// there that the next start would bring back.
func TestClonePrune(t *testing.T) {
	f := newProject(t)
	w := remote(t, f, "eng-1", filepath.Join(t.TempDir(), "proj"))
	c := w.ws.(*Client)
	if _, err := c.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, "pending.txt"), "pending\n")
	if _, err := c.Prune(ctx(t), false, time.Now()); !errors.Is(err, workspaces.ErrUnlanded) {
		t.Fatalf("prune of a clone with uncommitted work: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "pending.txt")); err != nil {
		t.Fatalf("a refused prune touched the clone: %v", err)
	}
	res, err := c.Prune(ctx(t), true, time.Now())
	if err != nil || res.Archived == "" || !res.Removed {
		t.Fatalf("forced prune: %+v, %v", res, err)
	}
	if got := git(t, f.env, f.top, "show", res.Archived+":pending.txt"); got != "pending" {
		t.Fatalf("the archive holds %q", got)
	}
	if branchHere(t, f) != "" {
		t.Fatal("the branch here survived the prune")
	}
	if _, err := os.Stat(w.dir); !os.IsNotExist(err) {
		t.Fatalf("the clone's worktree survived the prune: %v", err)
	}
	// The next start makes a new clone from base: nothing comes back.
	p, err := c.Prepare(ctx(t), workspaces.PrepareOptions{})
	if err != nil || !p.Created {
		t.Fatalf("prepare after the prune: %+v, %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "pending.txt")); !os.IsNotExist(err) {
		t.Fatalf("the pruned work came back: %v", err)
	}
}

// A host that takes the request and never answers is ErrHost once the
// step's time limit passes, with nothing left running.
func TestCloneHostThatNeverAnswers(t *testing.T) {
	f := newProject(t)
	w := remote(t, f, "eng-1", filepath.Join(t.TempDir(), "proj"))
	c := w.ws.(*Client)
	c.Host.Command = []string{"sh", "-c", "exec sleep 613", "host"}
	c.Timeout = 200 * time.Millisecond
	if _, err := c.Commit(ctx(t), workspaces.CommitInfo{Subject: "x"}); !errors.Is(err, ErrHost) {
		t.Fatalf("commit on a silent host: %v", err)
	}
	if _, err := c.Prepare(ctx(t), workspaces.PrepareOptions{}); !errors.Is(err, ErrHost) {
		t.Fatalf("prepare on a silent host: %v", err)
	}
	procs, err := procstat.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if len(p.Args) == 2 && p.Args[0] == "sleep" && p.Args[1] == "613" && p.State != "Z" {
			t.Fatalf("the silent host's command is left running: pid %d", p.PID)
		}
	}
}

// Retire brings the clone's work here, uncommitted work included, then
// removes the clone; a clone whose branch the branch here does not
// contain is never removed.
func TestCloneRetire(t *testing.T) {
	f := newProject(t)
	w := remote(t, f, "eng-1", filepath.Join(t.TempDir(), "proj"))
	c := w.ws.(*Client)
	if _, err := c.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, "left.txt"), "left\n")
	head, err := c.Retire(ctx(t))
	if err != nil || head == "" || branchHere(t, f) != head {
		t.Fatalf("Retire: %q, %v", head, err)
	}
	if got := git(t, f.env, f.top, "show", head+":left.txt"); got != "left" {
		t.Fatalf("the clone's uncommitted work here: %q", got)
	}
	if _, err := os.Stat(w.dir); !os.IsNotExist(err) {
		t.Fatalf("the clone survived: %v", err)
	}

	// Diverged: the branch here moved elsewhere while the clone went on.
	if _, err := c.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.dir, "there.txt"), "there\n")
	if _, err := c.Commit(ctx(t), workspaces.CommitInfo{Subject: "there"}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.top, "elsewhere.txt"), "elsewhere\n")
	git(t, f.env, f.top, "update-ref", workspaces.BranchRef("eng-1"), userCommit(t, f.env, f.top, "elsewhere"))
	if _, err := c.Retire(ctx(t)); err == nil || !strings.Contains(err.Error(), "merge them by hand") {
		t.Fatalf("Retire of a diverged clone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "there.txt")); err != nil {
		t.Fatalf("a diverged clone was touched: %v", err)
	}
}

// A host without git answers so: the error says it (ErrNoGit), it is no
// host that did not answer.
func TestCloneHostWithoutGit(t *testing.T) {
	f := newProject(t)
	w := remote(t, f, "eng-1", filepath.Join(t.TempDir(), "proj"))
	c := w.ws.(*Client)
	bin := t.TempDir() // sh and mkdir, no git
	for _, tool := range []string{"sh", "mkdir"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	c.Host.Command = []string{env, "PATH=" + bin}
	_, err = c.Prepare(ctx(t), workspaces.PrepareOptions{})
	if !errors.Is(err, ErrNoGit) || errors.Is(err, ErrHost) || !strings.Contains(err.Error(), "on host box") {
		t.Fatalf("prepare on a host without git: %v", err)
	}
}

// The clones on a host live in the project's state directory there,
// never in the project directory there, which an agent working in the
// project there may write; Where names that place.
func TestCloneInTheStateDirectoryThere(t *testing.T) {
	f := newProject(t)
	hostDir := filepath.Join(t.TempDir(), "proj")
	w := remote(t, f, "eng-1", hostDir)
	if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{}); err != nil {
		t.Fatal(err)
	}
	state := stateThere(hostDir, filepath.Dir(hostDir))
	if _, err := os.Stat(filepath.Join(w.dir, "README")); err != nil {
		t.Fatalf("the clone is not in the state directory there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(project.Layout{Dir: state}.CloneRepo(), ".git", "HEAD")); err != nil {
		t.Fatalf("the clone repository is not in the state directory there: %v", err)
	}
	for _, p := range []string{w.dir, state} {
		if hosts.InProject(hostDir, p) {
			t.Errorf("%s is inside the project directory there %s", p, hostDir)
		}
	}
	if _, err := os.Lstat(filepath.Join(hostDir, project.DirName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clone-host made %s: %v", filepath.Join(hostDir, project.DirName), err)
	}
	if got, want := w.ws.Where(), "box:"+hosts.WorktreesThere(hostDir)+"/eng-1"; got != want {
		t.Fatalf("Where = %q, want %q", got, want)
	}
	// Every directory clone-host keeps there is one the agents' profiles
	// there deny (hosts.DeniedThere), or the clone repository.
	kept := map[string]bool{filepath.Base(project.Layout{Dir: state}.CloneRepo()): true}
	for _, d := range hosts.DeniedThere(hostDir) {
		kept[filepath.Base(d)] = true
	}
	ents, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !kept[e.Name()] {
			t.Errorf("clone-host keeps %s in the state directory there, which no agent's profile there denies", e.Name())
		}
	}
}

// A state directory there inside the project there (the project is the
// home directory) would put the clones where the agents working in the
// project write: refused, nothing made, no git run.
func TestCloneStateDirectoryInTheProjectRefused(t *testing.T) {
	f := newProject(t)
	home := filepath.Join(t.TempDir(), "home")
	w := remoteIn(t, f, "eng-1", home, home)
	_, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{})
	if err == nil || errors.Is(err, ErrHost) || !strings.Contains(err.Error(), "which the agents working there may write") {
		t.Fatalf("prepare with the state directory in the project there: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(home, ".local")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something was made in the project there: %v", err)
	}
}

// A clone an earlier batty kept in the project directory there
// (.batty/repo, .batty/worktrees/<agent>), where a shared-checkout agent
// could have planted a filter in its configuration: batty never runs git
// there again. The clone starts afresh in the state directory from the
// branch here, the old one is left as it is (its uncommitted work
// included) and named once to the caller.
func TestCloneEarlierOneInTheProjectLeftAlone(t *testing.T) {
	f := newProject(t)
	hostDir := filepath.Join(t.TempDir(), "proj")
	// The branch here: what the old clone brought at its last step.
	git(t, f.env, f.top, "checkout", "-q", "-b", "batty/eng-1")
	write(t, filepath.Join(f.top, "done.txt"), "done\n")
	sha := userCommit(t, f.env, f.top, "done there")
	git(t, f.env, f.top, "checkout", "-q", "main")
	// The old clone, as an earlier batty made it, with a filter an agent
	// planted and work left uncommitted.
	oldRepo := filepath.Join(hostDir, project.DirName, "repo")
	old := filepath.Join(hostDir, project.DirName, "worktrees", "eng-1")
	git(t, f.env, filepath.Dir(hostDir), "clone", "-q", f.top, oldRepo)
	git(t, f.env, oldRepo, "worktree", "add", "-q", old, "origin/batty/eng-1")
	marker := filepath.Join(t.TempDir(), "filter-ran")
	git(t, f.env, oldRepo, "config", "filter.evil.clean", "touch "+marker+"; cat")
	git(t, f.env, oldRepo, "config", "filter.evil.smudge", "touch "+marker+"; cat")
	git(t, f.env, oldRepo, "config", "filter.evil.required", "true")
	write(t, filepath.Join(oldRepo, ".git", "info", "attributes"), "* filter=evil\n")
	write(t, filepath.Join(old, "uncommitted.txt"), "left\n")
	if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}

	w := remote(t, f, "eng-1", hostDir)
	var told []string
	w.ws.(*Client).OldClone = func(p string) { told = append(told, p) }
	p, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{})
	if err != nil || !p.Created {
		t.Fatalf("prepare with an old clone in the project there: %+v, %v", p, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "done.txt")); string(b) != "done\n" {
		t.Fatalf("the new clone does not hold the branch here: %q", b)
	}
	write(t, filepath.Join(w.dir, "next.txt"), "next\n")
	c, err := w.ws.Commit(ctx(t), workspaces.CommitInfo{Subject: "next"})
	if err != nil || !c.Made {
		t.Fatalf("commit in the new clone: %+v, %v", c, err)
	}
	if parent := git(t, f.env, f.top, "rev-parse", "batty/eng-1^"); parent != sha {
		t.Fatalf("the branch here does not follow on from %s: parent %s", sha, parent)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old clone's filter ran: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(old, "uncommitted.txt")); string(b) != "left\n" {
		t.Fatalf("the old clone's uncommitted work: %q", b)
	}
	if !slices.Equal(told, []string{old}) {
		t.Fatalf("OldClone was told %q, want %q once", told, old)
	}
}

// A setup in the sandbox can run git in its worktree, here and on a host
// (where the clone's repository lies in the state directory there, whose
// other children the sandbox denies).
func TestWorkspaceSetupRunsGitInTheSandbox(t *testing.T) {
	bin := codextest.Sandbox(t)
	both(t, func(t *testing.T, f *fixture, w impl) {
		sb := &sandbox.Policy{Bin: bin, Homes: filepath.Join(t.TempDir(), "homes")}
		if _, err := w.ws.Prepare(ctx(t), workspaces.PrepareOptions{Setup: `git log --oneline -1 >/dev/null && git status --short > git-ok`, SetupTimeout: time.Minute, SetupSandbox: sb}); err != nil {
			t.Fatalf("a setup running git: %v", err)
		}
		if _, err := os.Stat(filepath.Join(w.dir, "git-ok")); err != nil {
			t.Fatalf("the setup's git did not run: %v", err)
		}
	})
}
