package workspaces

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestState(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	st, err := f.repo.State(ctx, "eng", "main")
	if st.ReadAt.IsZero() {
		t.Fatal("State does not say when it read")
	}
	want := State{Agent: "eng", Path: f.repo.Path("eng"), Branch: "batty/eng", ReadAt: st.ReadAt}
	if err != nil || st != want {
		t.Fatalf("State before Ensure = %+v, %v; want %+v", st, err, want)
	}
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "one"), "1\n")
	f.commit("eng", "one")
	writeFile(t, filepath.Join(path, "two"), "2\n")
	head := f.commit("eng", "two")
	f.mainCommit("m", "m\n")
	writeFile(t, filepath.Join(path, "README"), "edited\n")       // modified
	writeFile(t, filepath.Join(path, "new.txt"), "n\n")           // untracked
	writeFile(t, filepath.Join(path, "newdir", "a", "b"), "b\n")  // an untracked directory: one path
	writeFile(t, filepath.Join(path, "newdir", "c"), "c\n")       // in the same directory
	writeFile(t, filepath.Join(path, ".batty", "x"), "ignored\n") // ignored
	if err := os.Remove(filepath.Join(path, "one")); err != nil { // deleted
		t.Fatal(err)
	}
	st, err = f.repo.State(ctx, "eng", "main")
	want = State{Agent: "eng", Path: path, Branch: "batty/eng", Head: head, Exists: true, Ahead: 2, Behind: 1, Dirty: 4, ReadAt: st.ReadAt}
	if err != nil || st != want {
		t.Fatalf("State = %+v, %v; want %+v", st, err, want)
	}

	// The worktree gone, the branch still counts.
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	st, err = f.repo.State(ctx, "eng", "main")
	want = State{Agent: "eng", Path: path, Branch: "batty/eng", Head: head, Ahead: 2, Behind: 1, ReadAt: st.ReadAt}
	if err != nil || st != want {
		t.Fatalf("State without the worktree = %+v, %v; want %+v", st, err, want)
	}
	if _, err := f.repo.State(ctx, "eng", "nope"); !errors.Is(err, ErrUnknownBase) {
		t.Fatalf("State on an unknown base = %v", err)
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{" M README\x00?? new dir/\x00", []string{"README", "new dir/"}, true},
		{"R  new\x00old\x00 D gone\x00", []string{"new", "gone"}, true},
		{" C a\x00b\x00", []string{"a"}, true},
		{"?? -rf\x00", []string{"-rf"}, true},
		{" M a", nil, false},
		{"M a\x00", nil, false},
		{"R  new\x00", nil, false},
		{"XY\x00", nil, false},
	} {
		got, err := parseStatus(tc.in)
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) && tc.ok {
			t.Errorf("parseStatus(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add(" M README\x00?? new\x00")
	f.Add("R  new\x00old\x00")
	f.Fuzz(func(t *testing.T, in string) {
		paths, err := parseStatus(in)
		if err == nil && len(paths) > strings.Count(in, "\x00") {
			t.Fatalf("parseStatus(%q) = %d paths from fewer entries", in, len(paths))
		}
	})
}

func TestDiff(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "feature.go"), "package feature\n")
	f.commit("eng", "feature")
	f.mainCommit("mainonly.txt", "only on main\n")

	var b bytes.Buffer
	if err := f.repo.Diff(ctx, "eng", "main", &b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "+package feature") || strings.Contains(out, "mainonly") || strings.Contains(out, "note:") {
		t.Fatalf("Diff =\n%s\nwant the branch's addition only, no note", out)
	}

	writeFile(t, filepath.Join(path, "README"), "dirty\n")
	writeFile(t, filepath.Join(path, "scratch"), "s\n")
	b.Reset()
	if err := f.repo.Diff(ctx, "eng", "main", &b, true); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	if !strings.Contains(out, "feature.go | 1 +") || strings.Contains(out, "package feature") {
		t.Fatalf("Diff --stat =\n%s", out)
	}
	if !strings.HasSuffix(out, "note: 2 paths in "+path+" not committed, not in this diff\n") {
		t.Fatalf("Diff --stat lacks the dirty note:\n%s", out)
	}
	if err := f.repo.Diff(ctx, "ghost", "main", &b, false); err == nil || !strings.Contains(err.Error(), "batty/ghost") {
		t.Fatalf("Diff without a branch = %v", err)
	}
}

func TestDiffRunsNoTextconv(t *testing.T) {
	f := newFixture(t, Options{})
	path := f.ensure("eng")
	ran := filepath.Join(f.root, "textconv-ran")
	f.git(f.top, "config", "diff.evil.textconv", "sh -c 'echo ran > "+ran+"; cat \"$1\"' -")
	f.git(f.top, "config", "diff.evil.command", "sh -c 'echo ran > "+ran+"'")
	writeFile(t, filepath.Join(path, ".gitattributes"), "* diff=evil\n")
	writeFile(t, filepath.Join(path, "x"), "x\n")
	f.commit("eng", "attrs")
	var b bytes.Buffer
	if err := f.repo.Diff(context.Background(), "eng", "main", &b, false); err != nil {
		t.Fatal(err)
	}
	if exists(ran) || !strings.Contains(b.String(), "+x") {
		t.Fatalf("a diff driver ran, or the diff is wrong:\n%s", b.String())
	}
}

func TestSyncBase(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")

	if res, err := f.repo.SyncBase(ctx, "eng", "main"); err != nil || !reflect.DeepEqual(res, SyncResult{UpToDate: true}) {
		t.Fatalf("SyncBase of a fresh branch = %+v, %v", res, err)
	}

	// A clean merge: the branch has a commit, main another.
	writeFile(t, filepath.Join(path, "mine.txt"), "mine\n")
	own := f.commit("eng", "mine")
	mainHead := f.mainCommit("theirs.txt", "theirs\n")
	res, err := f.repo.SyncBase(ctx, "eng", "main")
	if err != nil || !reflect.DeepEqual(res, SyncResult{Merged: true}) {
		t.Fatalf("SyncBase = %+v, %v; want Merged", res, err)
	}
	if got := readFile(t, filepath.Join(path, "theirs.txt")); got != "theirs\n" {
		t.Fatalf("theirs.txt = %q", got)
	}
	parents := strings.Fields(f.git(f.top, "log", "-1", "--format=%P %cn", "refs/heads/batty/eng"))
	if len(parents) != 3 || parents[0] != own || parents[1] != mainHead || parents[2] != "batty" {
		t.Fatalf("merge commit parents, committer = %v; want %s %s batty", parents, own, mainHead)
	}
	if res, err := f.repo.SyncBase(ctx, "eng", "main"); err != nil || !res.UpToDate {
		t.Fatalf("second SyncBase = %+v, %v; want UpToDate", res, err)
	}

	// Dirty: nothing done.
	f.mainCommit("more.txt", "more\n")
	writeFile(t, filepath.Join(path, "wip.txt"), "wip\n")
	before := f.rev("refs/heads/batty/eng")
	if res, err := f.repo.SyncBase(ctx, "eng", "main"); err != nil || !reflect.DeepEqual(res, SyncResult{Dirty: true}) {
		t.Fatalf("SyncBase of a dirty worktree = %+v, %v; want Dirty", res, err)
	}
	if f.rev("refs/heads/batty/eng") != before || exists(filepath.Join(path, "more.txt")) {
		t.Fatal("SyncBase of a dirty worktree changed it")
	}
	os.Remove(filepath.Join(path, "wip.txt"))

	// A conflict: undone, the branch and worktree as they were.
	writeFile(t, filepath.Join(path, "README"), "agent's\n")
	writeFile(t, filepath.Join(path, "sub dir", "-x"), "agent's\n")
	f.commit("eng", "readme")
	f.mainCommit("README", "user's\n")
	f.mainCommit("sub dir/-x", "user's\n")
	before = f.rev("refs/heads/batty/eng")
	res, err = f.repo.SyncBase(ctx, "eng", "main")
	if err != nil || res.Merged || !reflect.DeepEqual(res.Conflicts, []string{"README", "sub dir/-x"}) {
		t.Fatalf("SyncBase with conflicts = %+v, %v; want README and sub dir/-x", res, err)
	}
	if f.rev("refs/heads/batty/eng") != before {
		t.Fatal("the branch moved")
	}
	if s := f.git(path, "status", "--porcelain"); s != "" {
		t.Fatalf("worktree after the aborted merge: %q", s)
	}
	if exists(filepath.Join(f.top, ".git", "worktrees", "eng", "MERGE_HEAD")) {
		t.Fatal("a merge is still in progress")
	}
	if got := readFile(t, filepath.Join(path, "README")); got != "agent's\n" {
		t.Fatalf("README = %q", got)
	}
	if _, err := f.repo.SyncBase(ctx, "eng", "nope"); !errors.Is(err, ErrUnknownBase) {
		t.Fatalf("SyncBase on an unknown base = %v", err)
	}
}

func TestSyncBaseIgnoresMergeConfig(t *testing.T) {
	f := newFixture(t, Options{})
	path := f.ensure("eng")
	f.git(f.top, "config", "merge.ff", "only")
	writeFile(t, filepath.Join(path, "mine.txt"), "mine\n")
	f.commit("eng", "mine")
	f.mainCommit("theirs.txt", "theirs\n")
	if res, err := f.repo.SyncBase(context.Background(), "eng", "main"); err != nil || !res.Merged {
		t.Fatalf("SyncBase with merge.ff=only = %+v, %v; want a merge", res, err)
	}
}
