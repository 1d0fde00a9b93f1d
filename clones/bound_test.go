package clones

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/workspaces"
)

func TestAnswerBound(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	for _, tc := range []struct {
		name             string
		repo, free, keep uint64
		want             int64
		why              string
		lowDisk          bool
	}{
		{"small repository, roomy disk", 1 * mib, 100 * gib, gib, MinAnswer, "least bound", false},
		{"repository of 500 MiB", 500 * mib, 100 * gib, gib, 1000 * mib, "twice the size of the repository here, 500.0 MiB", false},
		{"huge repository", 10 * gib, 100 * gib, gib, MaxAnswer, "the most an answer may hold", false},
		{"disk room binds", 500 * mib, gib + 300*mib, gib, 100 * mib, "a third of the 300.0 MiB free above the 1.0 GiB kept free", false},
		{"a little room", 1 * mib, gib + 3, gib, 1, "a third", false},
		{"no room", 1 * mib, gib, gib, 0, "", true},
		{"below the kept space", 1 * mib, 10 * mib, gib, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why, err := answerBound(tc.repo, tc.free, tc.keep)
			if tc.lowDisk {
				if !errors.Is(err, workspaces.ErrLowDisk) || !strings.Contains(err.Error(), "no room for the host's answer") {
					t.Fatalf("answerBound = %d, %q, %v; want ErrLowDisk", got, why, err)
				}
				return
			}
			if err != nil || got != tc.want || !strings.Contains(why, tc.why) {
				t.Fatalf("answerBound = %d, %q, %v; want %d, %q", got, why, err, tc.want, tc.why)
			}
		})
	}
}

// A host that streams more than an answer can need is cut off at the
// bound (twice the repository, at least MinAnswer), and nothing of it is
// left on the disk here.
func TestCloneHostThatStreamsTooMuch(t *testing.T) {
	f := newProject(t)
	w := remote(t, f, "eng-1", filepath.Join(t.TempDir(), "proj"))
	c := w.ws.(*Client)
	// A fake host that answers with MinAnswer + 1 MiB of zeros, whatever
	// it is asked.
	c.Host.Command = []string{"sh", "-c", "head -c 68157440 /dev/zero", "host"}
	_, err := c.Commit(ctx(t), workspaces.CommitInfo{Subject: "x"})
	if !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "sent more than 67108864 bytes (64.0 MiB), the least bound of an answer") {
		t.Fatalf("commit on a host that streams too much: %v", err)
	}
	ents, rerr := os.ReadDir(f.repo.GitDir())
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "batty-tmp-") {
			t.Fatalf("%s left in %s", e.Name(), f.repo.GitDir())
		}
	}
}

// With no room on the disk here for an answer, the step is refused
// before the host is asked.
func TestCloneRefusedOnAFullDiskHere(t *testing.T) {
	f := newProject(t)
	full, err := workspaces.Open(context.Background(), workspaces.Options{ProjectDir: f.top,
		WorktreesDir: filepath.Join(f.top, ".batty", "worktrees"), LockFile: filepath.Join(f.top, ".batty", "state", "git.lock"),
		Env: f.env, MinFreeBytes: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	w := remote(t, f, "eng-1", filepath.Join(t.TempDir(), "proj"))
	c := w.ws.(*Client)
	c.Repo = full
	asked := filepath.Join(t.TempDir(), "asked")
	c.Host.Command = []string{"sh", "-c", `touch "$0"; exec "$@"`, asked}
	if _, err := c.Prepare(ctx(t), workspaces.PrepareOptions{}); !errors.Is(err, workspaces.ErrLowDisk) || !strings.Contains(err.Error(), "no room for the host's answer") {
		t.Fatalf("prepare with a full disk here: %v", err)
	}
	if _, err := os.Stat(asked); !os.IsNotExist(err) {
		t.Fatalf("the host was asked: %v", err)
	}
}
