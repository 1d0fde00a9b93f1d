package workspaces

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureIdempotentAndRestores(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	created, err := f.repo.Ensure(ctx, "eng", "main")
	if err != nil || !created {
		t.Fatalf("first Ensure = %v, %v; want created", created, err)
	}
	path := f.repo.Path("eng")
	if got := strings.TrimSpace(f.git(path, "symbolic-ref", "HEAD")); got != "refs/heads/batty/eng" {
		t.Fatalf("worktree HEAD = %q", got)
	}
	if got := readFile(t, filepath.Join(path, "README")); got != "hello\n" {
		t.Fatalf("README in the worktree = %q", got)
	}
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("worktrees dir mode = %v, %v; want 0700", fi.Mode(), err)
	}
	if created, err := f.repo.Ensure(ctx, "eng", "main"); err != nil || created {
		t.Fatalf("second Ensure = %v, %v; want nothing done", created, err)
	}

	writeFile(t, filepath.Join(path, "work.txt"), "kept\n")
	sha := f.commit("eng", "work")
	f.mainCommit("later.txt", "main moved on\n")

	// The directory is deleted behind git's back: Ensure checks the branch
	// out again, as it was, not reset to main.
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	created, err = f.repo.Ensure(ctx, "eng", "main")
	if err != nil || !created {
		t.Fatalf("Ensure after deletion = %v, %v; want created", created, err)
	}
	if got := f.rev("refs/heads/batty/eng"); got != sha {
		t.Fatalf("branch after restore = %s, want %s (its commit kept)", got, sha)
	}
	if got := readFile(t, filepath.Join(path, "work.txt")); got != "kept\n" {
		t.Fatalf("work.txt after restore = %q", got)
	}
	if exists(filepath.Join(path, "later.txt")) {
		t.Fatal("restored worktree has main's later commit: the branch was reset")
	}
	if c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "x"}); err != nil || c.Made {
		t.Fatalf("Commit in the restored, clean worktree = %v, %v", c.Made, err)
	}
}

func TestEnsureUnknownBase(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.repo.Ensure(context.Background(), "eng", "develop")
	if !errors.Is(err, ErrUnknownBase) || !strings.Contains(err.Error(), "main") {
		t.Fatalf("Ensure on an unknown base = %v, want ErrUnknownBase listing main", err)
	}
	if exists(f.repo.Path("eng")) {
		t.Fatal("a worktree was made on an unknown base")
	}
}

func TestEnsureRefusesAStrangersDirectory(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.repo.Path("eng")
	writeFile(t, filepath.Join(path, "precious.txt"), "mine\n")
	_, err := f.repo.Ensure(ctx, "eng", "main")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a worktree") {
		t.Fatalf("Ensure over a foreign directory = %v, want an error naming %s", err, path)
	}
	if got := readFile(t, filepath.Join(path, "precious.txt")); got != "mine\n" {
		t.Fatalf("precious.txt = %q, want it untouched", got)
	}
	if _, err := f.repo.Prune(ctx, "eng", "main", true, fixedNow); err == nil {
		t.Fatal("Prune with force removed a foreign directory")
	}
	if !exists(filepath.Join(path, "precious.txt")) {
		t.Fatal("Prune deleted a foreign directory's file")
	}

	// An empty directory holds nothing to lose: the worktree is made in it.
	empty := f.repo.Path("ops")
	if err := os.MkdirAll(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if created, err := f.repo.Ensure(ctx, "ops", "main"); err != nil || !created {
		t.Fatalf("Ensure in an empty directory = %v, %v", created, err)
	}
}

func TestSymlinkAtWorktreePathRefused(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	victim := filepath.Join(f.root, "victim")
	writeFile(t, filepath.Join(victim, "file.txt"), "outside\n")
	path := f.repo.Path("eng")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s through a link = %v, want it refused naming %s", what, err, path)
		}
	}
	_, err := f.repo.Ensure(ctx, "eng", "main")
	check("Ensure", err)
	_, err = f.repo.Commit(ctx, CommitInfo{Agent: "eng"})
	check("Commit", err)
	_, err = f.repo.State(ctx, "eng", "main")
	check("State", err)
	_, err = f.repo.Prune(ctx, "eng", "main", true, fixedNow)
	check("Prune", err)
	_, err = f.repo.Setup(ctx, "eng", SetupOptions{Command: "touch x", Timeout: 0})
	check("Setup", err)

	names, err := os.ReadDir(victim)
	if err != nil || len(names) != 1 || readFile(t, filepath.Join(victim, "file.txt")) != "outside\n" {
		t.Fatalf("the link's target was touched: %v %v", names, err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was removed or replaced")
	}
}

func TestReplacedGitFileRefused(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	// Another repository the agent would like batty to commit into.
	other := filepath.Join(f.root, "other")
	mustGit(t, f.env, f.root, "init", "-q", "-b", "main", other)
	writeFile(t, filepath.Join(other, "f"), "x\n")
	mustGit(t, f.env, other, "add", "f")
	otherHead := userCommit(t, f.env, other, "other")
	writeFile(t, filepath.Join(path, "change.txt"), "steered\n")
	branchHead := f.rev("refs/heads/batty/eng")

	for _, tc := range []struct {
		name  string
		plant func()
	}{
		{"a gitdir line to another repository", func() {
			writeFile(t, filepath.Join(path, ".git"), "gitdir: "+filepath.Join(other, ".git")+"\n")
		}},
		{"a gitdir line to another agent's worktree", func() {
			f.ensure("ops")
			writeFile(t, filepath.Join(path, ".git"), "gitdir: "+filepath.Join(f.top, ".git", "worktrees", "ops")+"\n")
		}},
		{"a repository of its own", func() {
			if err := os.Remove(filepath.Join(path, ".git")); err != nil {
				t.Fatal(err)
			}
			mustGit(t, f.env, path, "init", "-q")
		}},
	} {
		tc.plant()
		_, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "steer"})
		if err == nil || !strings.Contains(err.Error(), ".git") || !strings.Contains(err.Error(), `"gitdir: `+filepath.Join(f.top, ".git", "worktrees", "eng")+`"`) {
			t.Errorf("%s: Commit = %v, want it refused naming the .git file and the repair", tc.name, err)
		}
		if _, err := f.repo.SyncBase(ctx, "eng", "main"); err == nil {
			t.Errorf("%s: SyncBase succeeded", tc.name)
		}
		if got := strings.TrimSpace(mustGit(t, f.env, other, "rev-parse", "HEAD")); got != otherHead {
			t.Fatalf("%s: the other repository got a commit", tc.name)
		}
		if got := f.rev("refs/heads/batty/eng"); got != branchHead {
			t.Fatalf("%s: batty/eng moved", tc.name)
		}
		if tc.name != "a gitdir line to another repository" && f.rev("refs/heads/batty/ops") != f.rev("main") {
			t.Fatalf("%s: batty/ops moved", tc.name)
		}
		// Repair as the error says, for the next case.
		os.RemoveAll(filepath.Join(path, ".git"))
		writeFile(t, filepath.Join(path, ".git"), "gitdir: "+filepath.Join(f.top, ".git", "worktrees", "eng")+"\n")
	}
	if c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "after repair"}); err != nil || !c.Made {
		t.Fatalf("Commit after repair = %v, %v", c.Made, err)
	}
}

func TestLowDiskRefused(t *testing.T) {
	f := newFixture(t, Options{MinFreeBytes: 1 << 62})
	_, err := f.repo.Ensure(context.Background(), "eng", "main")
	if !errors.Is(err, ErrLowDisk) || !strings.Contains(err.Error(), "4611686018427387904 bytes") {
		t.Fatalf("Ensure = %v, want ErrLowDisk naming the threshold", err)
	}
	if exists(f.repo.Path("eng")) {
		t.Fatal("a worktree was made on a full disk")
	}
	if _, err := f.repo.State(context.Background(), "eng", "main"); err != nil {
		t.Fatal(err)
	}
}

func TestLowDiskDecision(t *testing.T) {
	if err := lowDisk("/d", 10, 10); err != nil {
		t.Errorf("free == min: %v", err)
	}
	err := lowDisk("/d", 1536, 3<<30)
	if !errors.Is(err, ErrLowDisk) {
		t.Fatalf("lowDisk = %v", err)
	}
	for _, want := range []string{"/d", "1536 bytes (1.5 KiB)", "3221225472 bytes (3.0 GiB)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1 << 62: "4.0 EiB", ^uint64(0): "16.0 EiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseGitFile(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"gitdir: /r/.git/worktrees/a\n", "/r/.git/worktrees/a", true},
		{"gitdir: ../x\r\n", "../x", true},
		{"gitdir: /a", "/a", true},
		{"gitdir: \n", "", false},
		{"gitdir:/a\n", "", false},
		{"gitdir: /a\n/b\n", "", false},
		{"gitdir: /a\x00b", "", false},
		{"", "", false},
		{"gitdir: " + strings.Repeat("a", maxSmall), "", false},
	} {
		got, err := parseGitFile([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseGitFile(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseGitFile(f *testing.F) {
	f.Add([]byte("gitdir: /r/.git/worktrees/a\n"))
	f.Add([]byte("gitdir: \r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseGitFile(b)
		if err == nil && (s == "" || strings.ContainsAny(s, "\x00\n")) {
			t.Fatalf("parseGitFile(%q) = %q", b, s)
		}
	})
}
