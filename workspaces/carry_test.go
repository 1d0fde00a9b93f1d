package workspaces

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A bundle written in one repository and read in another carries the
// commits only; the receiver sets its refs itself.
func TestBundleCarriesCommitsNotRefs(t *testing.T) {
	a := newFixture(t, Options{MinFreeBytes: 1})
	b := newFixture(t, Options{MinFreeBytes: 1})
	ctx := context.Background()
	if _, err := a.repo.Ensure(ctx, "eng", "main"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(a.repo.Path("eng"), "x.txt"), "x\n")
	c, err := a.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "x"})
	sha := c.Head
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	wrote, err := a.repo.WriteBundle(ctx, &buf, []string{BranchRef("eng")}, nil)
	if err != nil || !wrote {
		t.Fatalf("WriteBundle: %v %v", wrote, err)
	}
	if err := b.repo.ReadBundle(ctx, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatal(err)
	}
	if tips, _ := b.repo.Tips(ctx, BranchRef("eng")); len(tips) != 0 {
		t.Fatalf("reading a bundle set refs: %v", tips)
	}
	if known, _ := b.repo.Known(ctx, sha, strings.Repeat("a", 40)); len(known) != 1 || known[0] != sha {
		t.Fatalf("Known after the bundle: %v", known)
	}
	// Nothing new: no bundle.
	if wrote, err := a.repo.WriteBundle(ctx, &bytes.Buffer{}, []string{BranchRef("eng")}, []string{sha}); err != nil || wrote {
		t.Fatalf("WriteBundle of nothing new: %v %v", wrote, err)
	}
	// A bundle cut short is refused.
	if err := b.repo.ReadBundle(ctx, bytes.NewReader(buf.Bytes()[:buf.Len()/2]), int64(buf.Len())); err == nil {
		t.Fatal("a cut bundle was read")
	}
}

// TakeBranch only ever fast-forwards the branch here.
func TestTakeBranchOnlyFastForwards(t *testing.T) {
	f := newFixture(t, Options{MinFreeBytes: 1})
	ctx := context.Background()
	if _, err := f.repo.Ensure(ctx, "eng", "main"); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSpace(f.git(f.top, "rev-parse", "main"))
	writeFile(t, filepath.Join(f.repo.Path("eng"), "x.txt"), "x\n")
	c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "x"})
	ahead := c.Head
	if err != nil {
		t.Fatal(err)
	}
	f.git(f.top, "worktree", "remove", "--force", f.repo.Path("eng"))
	if moved, err := f.repo.TakeBranch(ctx, "eng", base); err != nil || moved {
		t.Fatalf("TakeBranch backwards: %v %v", moved, err)
	}
	if tips, _ := f.repo.Tips(ctx, BranchRef("eng")); tips[BranchRef("eng")] != ahead {
		t.Fatalf("the branch moved back: %v", tips)
	}
	f.git(f.top, "update-ref", "-d", BranchRef("eng"))
	if moved, err := f.repo.TakeBranch(ctx, "eng", ahead); err != nil || !moved {
		t.Fatalf("TakeBranch of a missing branch: %v %v", moved, err)
	}
}

// InitClone makes the repository once, beside and renamed into place; it
// replaces an empty directory and refuses a stranger's.
func TestInitClone(t *testing.T) {
	root := t.TempDir()
	env := testEnv(root)
	dir, lock := filepath.Join(root, ".batty", "repo"), filepath.Join(root, ".batty", "state", "git.lock")
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := InitClone(ctx, dir, lock, env); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD")); err != nil || !strings.Contains(string(b), "batty-clone-head") {
		t.Fatalf("HEAD %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dir)); len(ents) != 2 { // repo and state
		t.Fatalf("left beside the repository: %v", ents)
	}
	other := filepath.Join(root, "other")
	writeFile(t, filepath.Join(other, "mine.txt"), "mine\n")
	if err := InitClone(ctx, other, lock, env); err == nil {
		t.Fatal("a stranger's directory was taken")
	}
	if b, _ := os.ReadFile(filepath.Join(other, "mine.txt")); string(b) != "mine\n" {
		t.Fatal("a stranger's file was touched")
	}
}

// SweepTemp removes CreateTemp's files past the age, nothing else.
func TestSweepTemp(t *testing.T) {
	f := newFixture(t, Options{MinFreeBytes: 1})
	tmp, err := f.repo.CreateTemp("answer")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if fi, _ := os.Stat(tmp.Name()); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	now := time.Now()
	if n := f.repo.SweepTemp(time.Hour, now); n != 0 {
		t.Fatalf("a fresh file swept: %d", n)
	}
	if n := f.repo.SweepTemp(time.Hour, now.Add(2*time.Hour)); n != 1 {
		t.Fatalf("swept %d, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(f.repo.GitDir(), "HEAD")); err != nil {
		t.Fatal("the sweep removed git's own file")
	}
}
