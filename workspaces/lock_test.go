package workspaces

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The Locker is the lock Commit takes: while another writer holds it, a
// commit waits, and it goes through once the lock is released.
func TestLockerHoldsOffCommits(t *testing.T) {
	f := newFixture(t, Options{})
	f.ensure("eng")
	l := f.repo.Locker()
	l.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"}); err == nil {
		t.Fatal("Commit went through while the Locker was held")
	}
	l.Unlock()
	if _, err := f.repo.Commit(context.Background(), CommitInfo{Agent: "eng", Subject: "s"}); err != nil {
		t.Fatalf("Commit after Unlock: %v", err)
	}
	// A second Repo on the same lock file (another process, say) waits
	// for it too.
	other, err := Open(context.Background(), Options{ProjectDir: f.top, WorktreesDir: filepath.Join(f.root, "state", "worktrees"),
		LockFile: filepath.Join(f.root, "state", "state", "git.lock"), Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	l.Lock()
	defer l.Unlock()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := other.Commit(ctx2, CommitInfo{Agent: "eng", Subject: "s"}); err == nil {
		t.Fatal("another Repo's Commit went through while the Locker was held")
	}
}
