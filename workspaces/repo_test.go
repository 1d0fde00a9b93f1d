package workspaces

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if f.repo.TopLevel() != f.top {
		t.Errorf("TopLevel = %q, want %q", f.repo.TopLevel(), f.top)
	}
	sub := filepath.Join(f.top, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	base := Options{WorktreesDir: filepath.Join(f.root, "wt"), LockFile: filepath.Join(f.root, "lock"), Env: f.env}

	opts := base
	opts.ProjectDir = sub
	r, err := Open(ctx, opts)
	if err != nil || r.TopLevel() != f.top {
		t.Fatalf("Open(subdir) top = %v, %v; want %s", r, err, f.top)
	}

	// An inherited GIT_DIR must not send batty to another repository.
	other := filepath.Join(f.root, "other")
	mustGit(t, f.env, f.root, "init", "-q", "-b", "main", other)
	opts.Env = append(append([]string(nil), f.env...), "GIT_DIR="+filepath.Join(other, ".git"), "GIT_WORK_TREE="+other)
	if r, err := Open(ctx, opts); err != nil || r.TopLevel() != f.top {
		t.Fatalf("Open with GIT_DIR inherited: top = %v, %v; want %s", r, err, f.top)
	}

	notRepo := filepath.Join(f.root, "plain")
	if err := os.Mkdir(notRepo, 0o755); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(f.root, "bare.git")
	mustGit(t, f.env, f.root, "init", "-q", "--bare", bare)
	for _, dir := range []string{notRepo, bare, filepath.Join(f.top, ".git")} {
		opts := base
		opts.ProjectDir = dir
		// A ceiling stops git from finding a repository above the temp dir.
		opts.Env = append(append([]string(nil), f.env...), "GIT_CEILING_DIRECTORIES="+filepath.Dir(f.root))
		if _, err := Open(ctx, opts); !errors.Is(err, ErrNotRepository) {
			t.Errorf("Open(%s) = %v, want ErrNotRepository", dir, err)
		}
	}

	opts = base
	opts.ProjectDir = f.top
	opts.Committer = "no email"
	if _, err := Open(ctx, opts); err == nil || !strings.Contains(err.Error(), "committer") {
		t.Errorf("Open with committer %q = %v, want an error naming the committer", opts.Committer, err)
	}
}

func TestDefaultBase(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if b, err := f.repo.DefaultBase(ctx); err != nil || b != "main" {
		t.Fatalf("DefaultBase = %q, %v; want main", b, err)
	}
	f.git(f.top, "switch", "-q", "-c", "feature/x")
	if b, err := f.repo.DefaultBase(ctx); err != nil || b != "feature/x" {
		t.Fatalf("DefaultBase = %q, %v; want feature/x", b, err)
	}
	f.git(f.top, "switch", "-q", "--detach")
	_, err := f.repo.DefaultBase(ctx)
	if err == nil || !strings.Contains(err.Error(), "detached HEAD") || !strings.Contains(err.Error(), "git switch") {
		t.Fatalf("DefaultBase on a detached HEAD = %v, want an error naming the fix", err)
	}
}

func TestCheckBase(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if err := f.repo.CheckBase(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	f.git(f.top, "branch", "dev")
	f.ensure("a") // batty/a exists: not offered as a base
	for _, base := range []string{"nope", "-x", "main..dev", "main@{1}", "HEAD~1", ""} {
		err := f.repo.CheckBase(ctx, base)
		if !errors.Is(err, ErrUnknownBase) {
			t.Errorf("CheckBase(%q) = %v, want ErrUnknownBase", base, err)
			continue
		}
		if base == "nope" {
			msg := err.Error()
			if !strings.Contains(msg, "main") || !strings.Contains(msg, "dev") || strings.Contains(msg, "batty/a") {
				t.Errorf("CheckBase(nope) = %q, want the existing branches main and dev listed, not batty/a", msg)
			}
		}
	}
}

func TestCheckBranchName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"main", true}, {"feature/x-1", true}, {"release/2.0", true},
		{"", false}, {"-rf", false}, {"a..b", false}, {"a@{1}", false}, {"@", false},
		{"a/", false}, {"/a", false}, {"a//b", false}, {".hidden", false}, {"a/.b", false},
		{"a.lock", false}, {"a.", false}, {"a b", false}, {"a~1", false}, {"a^", false},
		{"a:b", false}, {"a?", false}, {"a*", false}, {"a[", false}, {`a\b`, false}, {"a\x01", false}, {"a\x7f", false},
	} {
		if err := checkBranchName(tc.name); (err == nil) != tc.ok {
			t.Errorf("checkBranchName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestPathsAndBranch(t *testing.T) {
	f := newFixture(t, Options{})
	if got, want := f.repo.Path("eng-1"), filepath.Join(f.root, "state", "worktrees", "eng-1"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	if got := Branch("eng-1"); got != "batty/eng-1" {
		t.Errorf("Branch = %q", got)
	}
	for _, bad := range []string{"", "../x", "a/b", "-rf", "A", "x.lock"} {
		if _, err := f.repo.Ensure(context.Background(), bad, "main"); err == nil {
			t.Errorf("Ensure(%q) succeeded, want an invalid name refused", bad)
		}
	}
}

func TestAgentDir(t *testing.T) {
	tops := []string{"/real/proj", "/link/proj"}
	wt := "/state/worktrees/a"
	for _, tc := range []struct{ cwd, want string }{
		{"/real/proj", wt},
		{"/real/proj/", wt},
		{"/real/proj/svc/api", wt + "/svc/api"},
		{"/real/proj/svc/../web", wt + "/web"},
		{"/link/proj/svc", wt + "/svc"},
		{"/real/project", wt},           // a sibling sharing a prefix is outside
		{"/real/proj/..", wt},           // the parent is outside
		{"/elsewhere/dir", wt},          // outside the checkout
		{"/", wt},                       // outside
		{"relative/dir", wt},            // not absolute
		{"", wt},                        // empty
		{"/real/proj/..x", wt + "/..x"}, // a name starting with .. is inside
	} {
		if got := agentDir(tops, wt, tc.cwd); got != tc.want {
			t.Errorf("agentDir(%q) = %q, want %q", tc.cwd, got, tc.want)
		}
	}
	// Through a Repo: the top-level as git prints it.
	f := newFixture(t, Options{})
	if got, want := f.repo.AgentDir("a", filepath.Join(f.top, "x", "y")), filepath.Join(f.repo.Path("a"), "x", "y"); got != want {
		t.Errorf("AgentDir = %q, want %q", got, want)
	}
}

func TestStripPrefix(t *testing.T) {
	for _, tc := range []struct{ dir, prefix, want string }{
		{"/p", "", "/p"},
		{"/p/a/b", "a/b/", "/p"},
		{"/p/a/b/", "a/b/", "/p"},
		{"/p/xa/b", "a/b/", ""},
		{"/p/a", "b/", ""},
	} {
		if got := stripPrefix(tc.dir, tc.prefix); got != tc.want {
			t.Errorf("stripPrefix(%q, %q) = %q, want %q", tc.dir, tc.prefix, got, tc.want)
		}
	}
}

func TestParseIdent(t *testing.T) {
	for _, tc := range []struct {
		in         string
		name, mail string
		ok         bool
	}{
		{"batty <batty@localhost>", "batty", "batty@localhost", true},
		{"Ann Lee  <ann@x.org>", "Ann Lee", "ann@x.org", true},
		{"no email", "", "", false},
		{"<a@b>", "", "", false},
		{"a <>", "", "", false},
		{"a <b> c", "", "", false},
		{"a <b<c>", "", "", false},
		{"a\n <b>", "", "", false},
	} {
		id, err := parseIdent(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (id.name != tc.name || id.email != tc.mail)) {
			t.Errorf("parseIdent(%q) = %+v, %v; want %q %q ok=%v", tc.in, id, err, tc.name, tc.mail, tc.ok)
		}
	}
}

func TestDescribeBranches(t *testing.T) {
	if got := describeBranches("batty/a\n", 3); !strings.Contains(got, "no branch") {
		t.Errorf("only batty's = %q", got)
	}
	got := describeBranches("a\nbatty/x\nb\nc\nd\ne\n", 3)
	if got != "existing branches: a, b, c and 2 more" {
		t.Errorf("describeBranches = %q", got)
	}
}
