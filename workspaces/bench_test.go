package workspaces

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkCommitPerTurn measures Commit after a typical turn: a
// repository of 10,000 small files in 100 directories, 3 of them edited
// before each Commit. Making the repository and the worktree is not timed,
// nor are the edits.
func BenchmarkCommitPerTurn(b *testing.B) {
	f := newFixture(b, Options{})
	for d := range 100 {
		for i := range 100 {
			writeFile(b, filepath.Join(f.top, fmt.Sprintf("dir%03d", d), fmt.Sprintf("file%03d.txt", i)), fmt.Sprintf("file %d of dir %d\n", i, d))
		}
	}
	mustGit(b, f.env, f.top, "add", "-A")
	userCommit(b, f.env, f.top, "10,000 files")
	ctx := context.Background()
	if _, err := f.repo.Ensure(ctx, "eng", "main"); err != nil {
		b.Fatal(err)
	}
	path := f.repo.Path("eng")
	for n := 0; b.Loop(); n++ {
		b.StopTimer()
		for k := range 3 {
			file := (n*3 + k) % 10000
			writeFile(b, filepath.Join(path, fmt.Sprintf("dir%03d", file/100), fmt.Sprintf("file%03d.txt", file%100)), "edited in turn "+strconv.Itoa(n)+"\n")
		}
		b.StartTimer()
		if _, ok, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "turn " + strconv.Itoa(n), MessageID: strconv.Itoa(n)}); err != nil || !ok {
			b.Fatalf("Commit = %v, %v", ok, err)
		}
	}
}
