package workspaces

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testEnv is the environment of every git run by the tests: a scratch
// HOME, no system or global config, so no user.name anywhere.
func testEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
	}
}

// fixture is a project repository with an initial commit on main and a
// Repo opened on it.
type fixture struct {
	t    testing.TB
	root string // the temp dir holding everything
	top  string // the repository's top-level
	env  []string
	repo *Repo
}

// newFixture makes a repository at <tmp>/proj with README and a
// .gitignore ignoring .batty/ committed on main, and opens it with the
// given options (ProjectDir, WorktreesDir, LockFile and Env filled in
// when empty).
func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, root: root, top: filepath.Join(root, "proj"), env: testEnv(root)}
	if err := os.Mkdir(f.top, 0o755); err != nil {
		t.Fatal(err)
	}
	mustGit(t, f.env, f.top, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(f.top, "README"), "hello\n")
	writeFile(t, filepath.Join(f.top, ".gitignore"), ".batty/\n")
	mustGit(t, f.env, f.top, "add", "-A")
	userCommit(t, f.env, f.top, "initial")
	if opts.ProjectDir == "" {
		opts.ProjectDir = f.top
	}
	if opts.WorktreesDir == "" {
		opts.WorktreesDir = filepath.Join(f.root, "state", "worktrees")
	}
	if opts.LockFile == "" {
		opts.LockFile = filepath.Join(f.root, "state", "state", "git.lock")
	}
	if opts.Env == nil {
		opts.Env = f.env
	}
	r, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	f.repo = r
	return f
}

// userCommit commits what is staged in dir as the user would, with an
// identity given on the command line.
func userCommit(t testing.TB, env []string, dir, msg string) string {
	t.Helper()
	mustGit(t, env, dir, "-c", "user.name=Test User", "-c", "user.email=user@example.invalid", "commit", "-q", "--no-verify", "-m", msg)
	return strings.TrimSpace(mustGit(t, env, dir, "rev-parse", "HEAD"))
}

// mustGit runs git in dir and returns its stdout, failing the test on error.
func mustGit(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	out, err := runGit(env, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runGit runs git in dir and returns its stdout (with stderr on failure).
func runGit(env []string, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// git runs git in dir with the fixture's environment.
func (f *fixture) git(dir string, args ...string) string {
	f.t.Helper()
	return mustGit(f.t, f.env, dir, args...)
}

// rev returns the commit rev names in the repository.
func (f *fixture) rev(rev string) string {
	f.t.Helper()
	return strings.TrimSpace(f.git(f.top, "rev-parse", "--verify", rev))
}

// ensure makes agent's worktree on main.
func (f *fixture) ensure(agent string) string {
	f.t.Helper()
	if _, err := f.repo.Ensure(context.Background(), agent, "main"); err != nil {
		f.t.Fatal(err)
	}
	return f.repo.Path(agent)
}

// commit commits agent's worktree and fails the test unless a commit was
// made.
func (f *fixture) commit(agent, subject string) string {
	f.t.Helper()
	c, err := f.repo.Commit(context.Background(), CommitInfo{Agent: agent, Subject: subject, MessageID: "m-" + subject})
	sha, ok := c.Head, c.Made
	if err != nil || !ok {
		f.t.Fatalf("Commit(%s, %q) = %s, %v, %v", agent, subject, sha, ok, err)
	}
	return sha
}

// mainCommit commits a file on main in the user's checkout.
func (f *fixture) mainCommit(name, content string) string {
	f.t.Helper()
	writeFile(f.t, filepath.Join(f.top, name), content)
	f.git(f.top, "add", "--", name)
	return userCommit(f.t, f.env, f.top, "main: "+name)
}

// exists reports whether name exists (not following a final link).
func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}
