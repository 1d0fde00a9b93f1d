package workspaces

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestUnresolved(t *testing.T) {
	refused := fmt.Errorf("commit the work of eng: %w", &UnresolvedError{Files: []string{"a.txt", "b/c.go"}, Total: 2})
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"no error", nil, nil},
		{"another failure", errors.New("commit the work of eng: exit status 128"), nil},
		{"the bare sentinel", ErrUnresolved, nil},
		{"markers left", refused, []string{"a.txt", "b/c.go"}},
		{"markers left, wrapped again", fmt.Errorf("on host h: %w", refused), []string{"a.txt", "b/c.go"}},
		{"no file named", &UnresolvedError{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unresolved(tt.err); !slices.Equal(got, tt.want) {
				t.Fatalf("Unresolved(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
	if !errors.Is(refused, ErrUnresolved) {
		t.Fatal("an UnresolvedError is not ErrUnresolved")
	}
	many := &UnresolvedError{Files: []string{"a"}, Total: 3}
	if got := many.Error(); got != "unresolved merge conflicts: conflict markers left in a and 2 more" {
		t.Fatalf("Error() = %q", got)
	}
}

// conflictedMerge leaves agent eng's worktree in the middle of a merge of
// main whose README conflicts, as MergeBase leaves it for the agent, and
// returns the worktree.
func (f *fixture) conflictedMerge() string {
	f.t.Helper()
	path := f.ensure("eng")
	f.mainCommit("README", "user's\n")
	writeFile(f.t, filepath.Join(path, "README"), "agent's\n")
	f.commit("eng", "readme")
	res, err := f.repo.MergeBase(context.Background(), "eng", "main")
	if err != nil || !slices.Equal(res.Conflicts, []string{"README"}) {
		f.t.Fatalf("MergeBase = %+v, %v: want README conflicting", res, err)
	}
	return path
}

// A worktree that a stopped run left in the middle of a merge with
// conflict markers, and with other edits, is prepared: the merge stays in
// progress, nothing is committed, the files that hold markers are named,
// and the setup runs. Once the markers are gone, the next commit
// completes the merge with everything.
func TestPrepareKeepsAMergeLeftWithMarkers(t *testing.T) {
	f := newFixture(t, Options{})
	path := f.conflictedMerge()
	writeFile(t, filepath.Join(path, "notes.txt"), "written mid-turn\n")
	before := f.rev("refs/heads/batty/eng")

	p, err := Local{Repo: f.repo, Agent: "eng", Base: "main"}.Prepare(context.Background(),
		PrepareOptions{Setup: "touch setup-ran"})
	if err != nil {
		t.Fatalf("Prepare = %v, want the merge kept, no failure", err)
	}
	if !p.Made || p.Leftover != "" || !slices.Equal(p.Unresolved, []string{"README"}) {
		t.Fatalf("Prepared %+v, want README unresolved and no leftover commit", p)
	}
	if f.rev("refs/heads/batty/eng") != before {
		t.Fatal("the branch moved")
	}
	if _, err := runGit(f.env, path, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err != nil {
		t.Fatal("the merge is no longer in progress")
	}
	if !strings.Contains(readFile(t, filepath.Join(path, "README")), "<<<<<<<") || readFile(t, filepath.Join(path, "notes.txt")) != "written mid-turn\n" {
		t.Fatal("the worktree's files changed")
	}
	if _, err := os.Stat(filepath.Join(path, "setup-ran")); err != nil {
		t.Fatalf("the setup did not run: %v", err)
	}

	writeFile(t, filepath.Join(path, "README"), "both\n")
	sha := f.commit("eng", "resolved")
	if parents, _ := runGit(f.env, path, "log", "-1", "--format=%P", sha); len(strings.Fields(parents)) != 2 {
		t.Fatalf("the resolving commit has parents %q", parents)
	}
	if got, _ := runGit(f.env, path, "show", sha+":notes.txt"); got != "written mid-turn\n" {
		t.Fatalf("the merge's commit lost notes.txt: %q", got)
	}
}
