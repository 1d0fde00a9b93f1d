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
