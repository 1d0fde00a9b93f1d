package workspaces

import (
	"context"
	"strings"
	"testing"
)

func TestGitRunAndError(t *testing.T) {
	dir := t.TempDir()
	g := Git{Dir: dir, Env: []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}}
	ctx := context.Background()
	if _, err := g.Run(ctx, "init", "-q", "-b", "main"); err != nil {
		t.Fatal(err)
	}
	out, err := g.Run(ctx, "rev-parse", "--is-inside-work-tree")
	if err != nil || strings.TrimSpace(out) != "true" {
		t.Fatalf("rev-parse = %q, %v", out, err)
	}
	_, err = g.Run(ctx, "rev-parse", "--verify", "refs/heads/nope")
	if ExitCode(err) <= 0 || !strings.Contains(err.Error(), "git rev-parse --verify refs/heads/nope") {
		t.Fatalf("err = %v (code %d), want a failed git naming its command", err, ExitCode(err))
	}
	out, err = g.RunInput(ctx, "hello\n", "hash-object", "--stdin")
	if err != nil || len(strings.TrimSpace(out)) != 40 {
		t.Fatalf("hash-object = %q, %v", out, err)
	}
}

func TestGitRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Git{Dir: t.TempDir()}).Run(ctx, "--version"); err == nil {
		t.Fatal("a cancelled context ran git")
	}
}

func TestCleanEnv(t *testing.T) {
	got := CleanEnv([]string{"PATH=/bin", "GIT_DIR=/elsewhere", "GIT_WORK_TREE=/w", "GIT_INDEX_FILE=/i", "GIT_DIRX=keep", "HOME=/h", "GIT_QUARANTINE_PATH=/q"})
	if strings.Join(got, " ") != "PATH=/bin GIT_DIRX=keep HOME=/h" {
		t.Fatalf("CleanEnv = %q", got)
	}
}
