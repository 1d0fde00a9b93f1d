package workspaces

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fixedNow is the clock of the tests that archive.
var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("X", 3600))

func TestCommitNothingChanged(t *testing.T) {
	f := newFixture(t, Options{})
	f.ensure("eng")
	c, err := f.repo.Commit(context.Background(), CommitInfo{Agent: "eng", Subject: "nothing", MessageID: "m1"})
	sha, ok := c.Head, c.Made
	if err != nil || ok || sha != f.rev("main") {
		t.Fatalf("Commit of a clean worktree = %s, %v, %v; want main's head, not committed", sha, ok, err)
	}
	if got := f.rev("refs/heads/batty/eng"); got != f.rev("main") {
		t.Fatal("a commit was made")
	}
}

func TestCommitAuthorTrailerAndFiles(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	mainHead := f.rev("main")
	writeFile(t, filepath.Join(path, "README"), "changed\n")
	writeFile(t, filepath.Join(path, "-rf"), "an option-like name\n")
	writeFile(t, filepath.Join(path, "--all"), "another\n")
	writeFile(t, filepath.Join(path, "deep", "dir", "new.go"), "package x\n")
	writeFile(t, filepath.Join(path, ".batty", "ignored"), "ignored by .gitignore\n")
	c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "Fix the parser\nand more\tstuff\x1b[31m", MessageID: "20250304-abc\n"})
	sha, ok := c.Head, c.Made
	if err != nil || !ok {
		t.Fatalf("Commit = %s, %v, %v", sha, ok, err)
	}
	if got := f.rev("refs/heads/batty/eng"); got != sha {
		t.Fatalf("branch = %s, Commit returned %s", got, sha)
	}
	log := f.git(f.top, "log", "-1", "--format=%an <%ae>%n%cn <%ce>%n%s%n%(trailers:key=Batty-Message,valueonly)%n%P", sha)
	want := "eng <eng@batty.invalid>\nbatty <batty@localhost>\nFix the parser and more stuff[31m\n20250304-abc\n\n" + mainHead + "\n"
	if log != want {
		t.Fatalf("log =\n%q\nwant\n%q", log, want)
	}
	files := f.git(f.top, "show", "--name-only", "--format=", sha)
	for _, name := range []string{"README", "-rf", "--all", "deep/dir/new.go"} {
		if !strings.Contains(files, name+"\n") {
			t.Errorf("commit lacks %s: %q", name, files)
		}
	}
	if strings.Contains(files, ".batty") {
		t.Errorf("commit has an ignored file: %q", files)
	}
	// Committed names what the commit changed, as git does.
	if got, want := strings.Join(c.Files, "\n")+"\n", files; got != want {
		t.Errorf("Committed.Files = %q, git names %q", got, want)
	}
	if got := f.rev("main"); got != mainHead {
		t.Fatal("main moved")
	}
	if s := f.git(path, "status", "--porcelain"); s != "" {
		t.Fatalf("the worktree after Commit: %q, want its index and HEAD matching it", s)
	}
	if got := f.git(path, "reflog", "-1", "--format=%gs", "batty/eng"); got != "commit: Fix the parser and more stuff[31m\n" {
		t.Fatalf("reflog = %q", got)
	}
	if s := f.git(f.top, "status", "--porcelain"); s != "" {
		t.Fatalf("the user's checkout changed: %q", s)
	}
}

func TestCommitWIPAndCommitter(t *testing.T) {
	f := newFixture(t, Options{Committer: "Team Bot <bot@example.invalid>"})
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "a"), "1\n")
	c, err := f.repo.Commit(context.Background(), CommitInfo{Agent: "eng", Subject: strings.Repeat("x", 100), WIP: true})
	sha := c.Head
	if err != nil {
		t.Fatal(err)
	}
	got := f.git(f.top, "log", "-1", "--format=%s%n%cn <%ce>%n%b", sha)
	want := "WIP: " + strings.Repeat("x", MaxSubject-6) + "…\nTeam Bot <bot@example.invalid>\n\n"
	if got != want {
		t.Fatalf("log = %q, want %q (no trailer without a message id)", got, want)
	}
}

func TestCommitMessage(t *testing.T) {
	for _, tc := range []struct {
		subject, id string
		wip         bool
		want        string
	}{
		{"Add x", "m1", false, "Add x\n\nBatty-Message: m1\n"},
		{"Add x", "", true, "WIP: Add x\n"},
		{"", "m1", false, "Turn of eng\n\nBatty-Message: m1\n"},
		{" \n\t ", "", true, "WIP: Turn of eng\n"},
		{"# not a comment", "", false, "# not a comment\n"},
		{"a\r\nb\u2028c\u202ed\u200be\x00f\x7fg\xffh", "x\ny\x1bz", false, "a b cdefg\ufffdh\n\nBatty-Message: x yz\n"},
		{strings.Repeat("é", 80), "", false, strings.Repeat("é", 71) + "…\n"},
		{"s", strings.Repeat("i", 300), false, "s\n\nBatty-Message: " + strings.Repeat("i", maxMessageID) + "\n"},
	} {
		if got := commitMessage(tc.subject, "eng", tc.id, tc.wip); got != tc.want {
			t.Errorf("commitMessage(%q, %q, %v) = %q, want %q", tc.subject, tc.id, tc.wip, got, tc.want)
		}
	}
}

func FuzzCommitMessage(f *testing.F) {
	f.Add("Fix\nit", "m1", true)
	f.Fuzz(func(t *testing.T, subject, id string, wip bool) {
		msg := commitMessage(subject, "eng", id, wip)
		first, rest, _ := strings.Cut(msg, "\n")
		if first == "" || len([]rune(first)) > MaxSubject || strings.HasPrefix(first, " ") {
			t.Fatalf("subject %q", first)
		}
		if rest != "" && !strings.HasPrefix(rest, "\n"+TrailerKey+": ") {
			t.Fatalf("body %q", rest)
		}
		if strings.Count(msg, "\n") > 3 {
			t.Fatalf("message %q has more lines than subject, blank, trailer", msg)
		}
	})
}

func TestCommitRunsNoHooks(t *testing.T) {
	f := newFixture(t, Options{})
	path := f.ensure("eng")
	f.mainCommit("b", "2\n") // for the merge below, before any hook exists
	ran := filepath.Join(f.root, "hook-ran")
	hook := "#!/bin/sh\necho $0 >> " + ran + "\nexit 1\n"
	// Hooks in .git/hooks, and in a hooks path set in the repository's
	// config, as a team might set.
	alt := filepath.Join(f.root, "alt-hooks")
	for _, dir := range []string{filepath.Join(f.top, ".git", "hooks"), alt} {
		for _, name := range []string{"pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "pre-merge-commit", "post-merge", "post-checkout", "reference-transaction"} {
			writeFile(t, filepath.Join(dir, name), hook)
			if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := runGit(f.env, f.top, "-c", "core.hooksPath=/dev/null", "config", "core.hooksPath", alt); err != nil {
		t.Fatal(err)
	}
	f.git(f.top, "config", "commit.gpgSign", "true") // would fail: no key
	writeFile(t, filepath.Join(path, "a"), "1\n")
	if c, err := f.repo.Commit(context.Background(), CommitInfo{Agent: "eng", Subject: "s", MessageID: "m"}); err != nil || !c.Made {
		t.Fatalf("Commit = %v, %v; want hooks and signing skipped", c.Made, err)
	}
	// A merge, a new worktree, a prune: no hook either.
	if res, err := f.repo.SyncBase(context.Background(), "eng", "main"); err != nil || !res.Merged {
		t.Fatalf("SyncBase = %+v, %v", res, err)
	}
	f.ensure("ops")
	writeFile(t, filepath.Join(f.repo.Path("ops"), "x"), "x\n")
	if _, err := f.repo.Prune(context.Background(), "ops", "main", true, fixedNow); err != nil {
		t.Fatal(err)
	}
	if exists(ran) {
		t.Fatalf("a hook ran: %q", readFile(t, ran))
	}
}

func TestCommitRefusesIndexLockAndOtherBranch(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "a"), "1\n")
	lock := filepath.Join(f.top, ".git", "worktrees", "eng", "index.lock")
	writeFile(t, lock, "")
	_, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"})
	if err == nil || !strings.Contains(err.Error(), lock) {
		t.Fatalf("Commit with a stale index.lock = %v, want an error naming %s", err, lock)
	}
	if !exists(lock) {
		t.Fatal("the lock was removed")
	}
	os.Remove(lock)

	f.git(path, "switch", "-q", "-c", "elsewhere")
	_, err = f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"})
	if err == nil || !strings.Contains(err.Error(), "elsewhere") || !strings.Contains(err.Error(), "batty/eng") {
		t.Fatalf("Commit on another branch = %v, want it refused", err)
	}
	f.git(path, "switch", "-q", "--detach")
	if _, err = f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"}); err == nil || !strings.Contains(err.Error(), "detached") {
		t.Fatalf("Commit on a detached HEAD = %v, want it refused", err)
	}
	f.git(path, "switch", "-q", "batty/eng")
	if c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"}); err != nil || !c.Made {
		t.Fatalf("Commit back on the branch = %v, %v", c.Made, err)
	}

	// A merge left with a conflict: refused while its markers are there,
	// committed as a merge (two parents) once they are gone.
	f.mainCommit("README", "user's\n")
	writeFile(t, filepath.Join(path, "README"), "agent's\n")
	f.commit("eng", "readme")
	if _, err := runGit(f.env, path, "-c", "user.name=a", "-c", "user.email=a@b", "merge", "main"); err == nil {
		t.Fatal("the agent's merge did not conflict")
	}
	before := f.rev("refs/heads/batty/eng")
	if _, err = f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"}); !errors.Is(err, ErrUnresolved) || !strings.Contains(err.Error(), "README") {
		t.Fatalf("Commit in the middle of a conflicted merge = %v, want ErrUnresolved naming README", err)
	}
	if f.rev("refs/heads/batty/eng") != before {
		t.Fatal("the branch moved")
	}
	writeFile(t, filepath.Join(path, "README"), "both\n")
	c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "resolved"})
	sha, ok := c.Head, c.Made
	if err != nil || !ok {
		t.Fatalf("Commit of the resolved merge = %v, %v", ok, err)
	}
	if parents, _ := runGit(f.env, path, "log", "-1", "--format=%P", sha); len(strings.Fields(parents)) != 2 {
		t.Fatalf("the resolved merge's commit has parents %q", parents)
	}
	if _, err := runGit(f.env, path, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err == nil {
		t.Fatal("the merge is still in progress after its commit")
	}

	if _, err := f.repo.Commit(ctx, CommitInfo{Agent: "ghost", Subject: "s"}); err == nil || !strings.Contains(err.Error(), "no worktree") {
		t.Fatalf("Commit without a worktree = %v", err)
	}
}

func TestCommitNestedGitInSubdirectory(t *testing.T) {
	f := newFixture(t, Options{})
	path := f.ensure("eng")
	// The agent makes a repository of its own in a subdirectory: it is
	// left out (no gitlink), and batty's commit still lands on the agent's
	// branch of the project.
	sub := filepath.Join(path, "vendor", "lib")
	mustGit(t, f.env, f.root, "init", "-q", "-b", "main", sub)
	writeFile(t, filepath.Join(sub, "x"), "x\n")
	mustGit(t, f.env, sub, "add", "x")
	subHead := userCommit(t, f.env, sub, "sub")
	writeFile(t, filepath.Join(path, "top.txt"), "t\n")
	c, err := f.repo.Commit(context.Background(), CommitInfo{Agent: "eng", Subject: "nested"})
	sha, ok := c.Head, c.Made
	if err != nil || !ok || f.rev("refs/heads/batty/eng") != sha {
		t.Fatalf("Commit = %s, %v, %v", sha, ok, err)
	}
	if got := strings.TrimSpace(mustGit(t, f.env, sub, "rev-parse", "HEAD")); got != subHead {
		t.Fatal("the nested repository got a commit")
	}
	if tree := f.treePaths(sha); strings.Contains(tree, "vendor") || !strings.Contains(tree, " top.txt\n") {
		t.Fatalf("the commit's tree:\n%s\nwant top.txt, nothing of vendor/lib", tree)
	}
}

func TestConcurrentCommits(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	const n = 8
	agents := make([]string, n)
	for i := range agents {
		agents[i] = fmt.Sprintf("eng-%d", i)
		f.ensure(agents[i])
	}
	// A second Repo on the same lock file stands for another process.
	other, err := Open(ctx, Options{ProjectDir: f.top, WorktreesDir: filepath.Dir(f.repo.Path("x")), LockFile: f.repo.lockFile, Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	shas := make([]string, n)
	for i, agent := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeFile(t, filepath.Join(f.repo.Path(agent), agent+".txt"), agent+"\n")
			r := f.repo
			if i%2 == 1 {
				r = other
			}
			c, err := r.Commit(ctx, CommitInfo{Agent: agent, Subject: "turn of " + agent, MessageID: agent})
			sha, ok := c.Head, c.Made
			if err == nil && !ok {
				err = errors.New("not committed")
			}
			errs[i], shas[i] = err, sha
		}()
	}
	wg.Wait()
	for i, agent := range agents {
		if errs[i] != nil {
			t.Errorf("%s: %v", agent, errs[i])
			continue
		}
		if got := f.rev("refs/heads/batty/" + agent); got != shas[i] {
			t.Errorf("%s: branch %s, Commit said %s", agent, got, shas[i])
		}
		if files := f.git(f.top, "show", "--name-only", "--format=", shas[i]); files != agent+".txt\n" {
			t.Errorf("%s: commit has %q", agent, files)
		}
	}
}

func TestCommitWaitsForTheLockOfAnotherProcess(t *testing.T) {
	f := newFixture(t, Options{})
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "a"), "1\n")
	// Hold the flock as another process would.
	lf, err := os.OpenFile(f.repo.lockFile, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Commit while the lock is held = %v, want it to wait until its deadline", err)
	}
	if got := f.rev("refs/heads/batty/eng"); got != f.rev("main") {
		t.Fatal("committed without the lock")
	}
	lf.Close()
	if c, err := f.repo.Commit(context.Background(), CommitInfo{Agent: "eng", Subject: "s"}); err != nil || !c.Made {
		t.Fatalf("Commit after the lock was freed = %v, %v", c.Made, err)
	}
	fi, err := os.Lstat(f.repo.lockFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode = %v, %v; want 0600", fi.Mode(), err)
	}
}

func TestLockFileSymlinkRefused(t *testing.T) {
	f := newFixture(t, Options{})
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "a"), "1\n")
	victim := filepath.Join(f.root, "victim")
	writeFile(t, victim, "v\n")
	if err := os.Remove(f.repo.lockFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, f.repo.lockFile); err != nil {
		t.Fatal(err)
	}
	if _, err := f.repo.Commit(context.Background(), CommitInfo{Agent: "eng", Subject: "s"}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Commit with the lock file a link = %v, want it refused", err)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o644 || readFile(t, victim) != "v\n" {
		t.Fatal("the link's target was touched")
	}
}
