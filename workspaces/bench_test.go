package workspaces

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkCommitPerTurn measures Commit at the end of a turn in a
// repository of 10,000 small files in 100 directories (plus the fixture's
// README and .gitignore), in the agent's worktree:
//
//   - 3-files-changed: 3 files edited before each Commit, which makes a
//     commit (a different 3 each time);
//   - nothing-changed: a turn that changed nothing, which still scans the
//     tree to find that out and makes no commit.
//
// Making the repository and the worktree is not timed, nor are the edits.
func BenchmarkCommitPerTurn(b *testing.B) {
	const dirs, perDir = 100, 100
	name := func(file int) string {
		return filepath.Join(fmt.Sprintf("dir%03d", file/perDir), fmt.Sprintf("file%03d.txt", file%perDir))
	}
	f := newFixture(b, Options{})
	for file := range dirs * perDir {
		writeFile(b, filepath.Join(f.top, name(file)), fmt.Sprintf("file %d of dir %d\n", file%perDir, file/perDir))
	}
	mustGit(b, f.env, f.top, "add", "-A")
	userCommit(b, f.env, f.top, "10,000 files")
	if got := strings.Count(f.git(f.top, "ls-files"), "\n"); got < dirs*perDir {
		b.Fatalf("the repository tracks %d files, want at least %d", got, dirs*perDir)
	}
	ctx := context.Background()
	if _, err := f.repo.Ensure(ctx, "eng", "main"); err != nil {
		b.Fatal(err)
	}
	path := f.repo.Path("eng")
	turn := 0

	b.Run("3-files-changed", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			turn++
			for k := range 3 {
				writeFile(b, filepath.Join(path, name((turn*3+k)%(dirs*perDir))), "edited in turn "+strconv.Itoa(turn)+"\n")
			}
			b.StartTimer()
			if c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "turn " + strconv.Itoa(turn), MessageID: strconv.Itoa(turn)}); err != nil || !c.Made {
				b.Fatalf("Commit = %v, %v; want a commit", c.Made, err)
			}
		}
	})
	b.Run("nothing-changed", func(b *testing.B) {
		for b.Loop() {
			turn++
			if c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "turn " + strconv.Itoa(turn), MessageID: strconv.Itoa(turn)}); err != nil || c.Made {
				b.Fatalf("Commit = %v, %v; want no commit", c.Made, err)
			}
		}
	})
}
