package workspaces

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPruneRefusesUnlandedWork(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")

	writeFile(t, filepath.Join(path, "wip.txt"), "uncommitted\n")
	_, err := f.repo.Prune(ctx, "eng", "main", false, fixedNow)
	if !errors.Is(err, ErrUnlanded) || !strings.Contains(err.Error(), "1 uncommitted path") {
		t.Fatalf("Prune of a dirty worktree = %v, want ErrUnlanded naming 1 uncommitted path", err)
	}
	if !exists(filepath.Join(path, "wip.txt")) {
		t.Fatal("the dirty file is gone")
	}

	f.commit("eng", "one")
	writeFile(t, filepath.Join(path, "b"), "b\n")
	f.commit("eng", "two")
	_, err = f.repo.Prune(ctx, "eng", "main", false, fixedNow)
	if !errors.Is(err, ErrUnlanded) || !strings.Contains(err.Error(), "2 commits on batty/eng not on main") || strings.Contains(err.Error(), "uncommitted") {
		t.Fatalf("Prune of an unmerged branch = %v, want ErrUnlanded naming 2 commits", err)
	}
	if !exists(path) || f.rev("refs/heads/batty/eng") == f.rev("main") {
		t.Fatal("Prune removed something it refused")
	}

	// The worktree deleted by hand: the branch's commits still stop it.
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.repo.Prune(ctx, "eng", "main", false, fixedNow); !errors.Is(err, ErrUnlanded) {
		t.Fatalf("Prune of an unmerged branch without worktree = %v", err)
	}
}

func TestPruneForceArchivesFirst(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "done.txt"), "committed\n")
	committed := f.commit("eng", "done")
	writeFile(t, filepath.Join(path, "README"), "the dirty edit\n")
	writeFile(t, filepath.Join(path, "untracked.txt"), "also kept\n")
	writeFile(t, filepath.Join(path, ".batty", "ignored"), "dropped with the worktree\n")

	res, err := f.repo.Prune(ctx, "eng", "main", true, fixedNow)
	wantRef := "refs/batty/archive/eng/20250304T040607Z"
	if err != nil || res != (PruneResult{Archived: wantRef, Removed: true}) {
		t.Fatalf("Prune(force) = %+v, %v; want archived as %s and removed", res, err, wantRef)
	}
	if got := f.git(f.top, "show", wantRef+":README"); got != "the dirty edit\n" {
		t.Fatalf("README in the archive = %q", got)
	}
	if got := f.git(f.top, "show", wantRef+":untracked.txt"); got != "also kept\n" {
		t.Fatalf("untracked.txt in the archive = %q", got)
	}
	if got := strings.TrimSpace(f.git(f.top, "log", "-1", "--format=%P%n%s", wantRef)); got != committed+"\nWIP: uncommitted work of eng at prune" {
		t.Fatalf("archive tip = %q, want a WIP commit on %s", got, committed)
	}
	if exists(path) {
		t.Fatal("the worktree is still there")
	}
	if _, err := runGit(f.env, f.top, "rev-parse", "--verify", "--quiet", "refs/heads/batty/eng"); err == nil {
		t.Fatal("the branch is still there")
	}
	if list := f.git(f.top, "worktree", "list", "--porcelain"); strings.Contains(list, "batty/eng") {
		t.Fatalf("the worktree is still registered:\n%s", list)
	}

	// Idempotent.
	if res, err := f.repo.Prune(ctx, "eng", "main", true, fixedNow.Add(time.Second)); err != nil || res != (PruneResult{}) {
		t.Fatalf("second Prune = %+v, %v; want nothing done", res, err)
	}
	// The archive survives a new worktree for the same agent.
	f.ensure("eng")
	if f.rev(wantRef) == f.rev("main") {
		t.Fatal("archive lost")
	}
}

// A worktree left in the middle of a merge with conflict markers is
// archived by a forced prune as it is, markers included, then pruned.
func TestPruneForceArchivesAnUnresolvedMerge(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	f.mainCommit("README", "user's\n")
	writeFile(t, filepath.Join(path, "README"), "agent's\n")
	agentTip := f.commit("eng", "readme")
	if _, err := runGit(f.env, path, "-c", "user.name=a", "-c", "user.email=a@b", "merge", "main"); err == nil {
		t.Fatal("the agent's merge did not conflict")
	}
	writeFile(t, filepath.Join(path, "notes.txt"), "work beside the conflict\n")

	if _, err := f.repo.Prune(ctx, "eng", "main", false, fixedNow); !errors.Is(err, ErrUnlanded) {
		t.Fatalf("Prune without force = %v, want ErrUnlanded", err)
	}
	res, err := f.repo.Prune(ctx, "eng", "main", true, fixedNow)
	wantRef := "refs/batty/archive/eng/20250304T040607Z"
	if err != nil || res != (PruneResult{Archived: wantRef, Removed: true}) {
		t.Fatalf("Prune(force) of an unresolved merge = %+v, %v; want archived as %s and removed", res, err, wantRef)
	}
	if got := f.git(f.top, "show", wantRef+":README"); !strings.Contains(got, "<<<<<<<") || !strings.Contains(got, "agent's") || !strings.Contains(got, "user's") {
		t.Fatalf("README in the archive = %q, want it with its conflict markers", got)
	}
	if got := f.git(f.top, "show", wantRef+":notes.txt"); got != "work beside the conflict\n" {
		t.Fatalf("notes.txt in the archive = %q", got)
	}
	tip := strings.Fields(f.git(f.top, "log", "-1", "--format=%P", wantRef))
	if len(tip) != 2 || tip[0] != agentTip || tip[1] != f.rev("main") {
		t.Fatalf("archive tip's parents = %q, want the branch's tip %s and main's %s", tip, agentTip, f.rev("main"))
	}
	if subject := f.git(f.top, "log", "-1", "--format=%s", wantRef); !strings.Contains(subject, "conflict markers in README") {
		t.Fatalf("archive subject %q does not say so", subject)
	}
	if exists(path) {
		t.Fatal("the worktree is still there")
	}
	if _, err := runGit(f.env, f.top, "rev-parse", "--verify", "--quiet", "refs/heads/batty/eng"); err == nil {
		t.Fatal("the branch is still there")
	}
}

func TestPruneForceWithoutWorktreeArchivesTheBranch(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "a"), "a\n")
	head := f.commit("eng", "a")
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	res, err := f.repo.Prune(ctx, "eng", "main", true, fixedNow)
	if err != nil || !res.Removed || f.rev(res.Archived) != head {
		t.Fatalf("Prune = %+v, %v; want the branch archived at %s", res, err, head)
	}
	// The registration of the deleted directory is gone too.
	if list := f.git(f.top, "worktree", "list", "--porcelain"); strings.Contains(list, path) {
		t.Fatalf("stale registration left:\n%s", list)
	}
}

func TestPruneLandedBranch(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	writeFile(t, filepath.Join(path, "feature"), "f\n")
	f.commit("eng", "feature")
	f.git(f.top, "merge", "-q", "--ff-only", "batty/eng") // the user lands it
	writeFile(t, filepath.Join(path, ".batty", "cache"), "ignored files go with the worktree\n")

	res, err := f.repo.Prune(ctx, "eng", "main", false, fixedNow)
	if err != nil || res != (PruneResult{Removed: true}) {
		t.Fatalf("Prune of a landed branch = %+v, %v; want removed, nothing archived", res, err)
	}
	if exists(path) {
		t.Fatal("worktree left")
	}
	if refs := f.git(f.top, "for-each-ref", "--format=%(refname)", "refs/heads/batty/", "refs/batty/"); refs != "" {
		t.Fatalf("refs left: %q", refs)
	}
	if got := readFile(t, filepath.Join(f.top, "feature")); got != "f\n" {
		t.Fatal("the user's checkout lost the landed file")
	}
}

func TestArchiveRef(t *testing.T) {
	now := time.Date(2031, 12, 31, 23, 59, 58, 999, time.FixedZone("W", -5*3600))
	if got := ArchiveRef("eng-2", now); got != "refs/batty/archive/eng-2/20320101T045958Z" {
		t.Fatalf("ArchiveRef = %q", got)
	}
}

// Release commits what the worktree holds and removes it; the branch
// stays, with the commit.
func TestReleaseCommitsAndRemoves(t *testing.T) {
	f := newFixture(t, Options{MinFreeBytes: 1})
	ctx := context.Background()
	if leftover, err := f.repo.Release(ctx, "eng"); err != nil || leftover != "" {
		t.Fatalf("Release without a worktree: %q, %v", leftover, err)
	}
	if _, err := f.repo.Ensure(ctx, "eng", "main"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.repo.Path("eng"), "wip.txt"), "half\n")
	leftover, err := f.repo.Release(ctx, "eng")
	if err != nil || leftover == "" {
		t.Fatalf("Release: %q, %v", leftover, err)
	}
	if _, err := os.Stat(f.repo.Path("eng")); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	if got := f.git(f.top, "show", "batty/eng:wip.txt"); got != "half\n" && got != "half" {
		t.Fatalf("the branch holds %q", got)
	}
	st, err := f.repo.State(ctx, "eng", "main")
	if err != nil || st.Exists || st.Head != leftover || st.Ahead != 1 {
		t.Fatalf("state after Release: %+v, %v", st, err)
	}
}
