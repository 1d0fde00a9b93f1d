package workspaces

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/reap"
)

func TestSetupRunsOnce(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	path := f.ensure("eng")
	count := filepath.Join(f.root, "count")
	cmd := "echo run >> " + count + "; pwd; echo to-stderr >&2"
	out, err := f.repo.Setup(ctx, "eng", SetupOptions{Command: cmd, Timeout: time.Minute})
	if err != nil || out != path+"\nto-stderr\n" {
		t.Fatalf("Setup = %q, %v; want it run in %s", out, err, path)
	}
	marker := filepath.Join(f.top, ".git", "worktrees", "eng", SetupMarker)
	if got := readFile(t, marker); got != cmd {
		t.Fatalf("marker = %q", got)
	}
	if out, err := f.repo.Setup(ctx, "eng", SetupOptions{Command: cmd, Timeout: time.Minute}); err != nil || out != "" {
		t.Fatalf("second Setup = %q, %v", out, err)
	}
	if got := readFile(t, count); got != "run\n" {
		t.Fatalf("the command ran %d times", strings.Count(got, "run"))
	}
	// The marker is in git's dir, not in the worktree: nothing to commit.
	if c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "s"}); err != nil || c.Made {
		t.Fatalf("Commit after Setup = %v, %v; want nothing to commit", c.Made, err)
	}
	// A changed command runs.
	if _, err := f.repo.Setup(ctx, "eng", SetupOptions{Command: cmd + " ", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, count); got != "run\nrun\n" {
		t.Fatalf("the changed command did not run: %q", got)
	}
	// A worktree checked out anew runs it again.
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	f.ensure("eng")
	if _, err := f.repo.Setup(ctx, "eng", SetupOptions{Command: cmd, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, count); got != "run\nrun\nrun\n" {
		t.Fatalf("setup did not run in the restored worktree: %q", got)
	}
	if _, err := f.repo.Setup(ctx, "ghost", SetupOptions{Command: cmd, Timeout: time.Minute}); err == nil || !strings.Contains(err.Error(), "no worktree") {
		t.Fatalf("Setup without a worktree = %v", err)
	}
}

func TestSetupFailureRecordsNothing(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.ensure("eng")
	count := filepath.Join(f.root, "count")
	cmd := "echo run >> " + count + "; i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done; echo the end >&2; exit 3"
	out, err := f.repo.Setup(ctx, "eng", SetupOptions{Command: cmd, Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "setup of eng") {
		t.Fatalf("Setup = %v, want exit status 3", err)
	}
	if len(out) > MaxSetupOutput || !strings.HasSuffix(out, "line 1999\nthe end\n") || !strings.HasPrefix(out, "… ") || strings.Contains(out, "line 0\n") {
		t.Fatalf("output (%d bytes) = %q..., want the clipped tail", len(out), out[:min(len(out), 80)])
	}
	if exists(filepath.Join(f.top, ".git", "worktrees", "eng", SetupMarker)) {
		t.Fatal("a failure was recorded")
	}
	if _, err := f.repo.Setup(ctx, "eng", SetupOptions{Command: cmd, Timeout: time.Minute}); err == nil {
		t.Fatal("second run succeeded")
	}
	if got := readFile(t, count); got != "run\nrun\n" {
		t.Fatalf("the failed setup did not run again: %q", got)
	}
}

func TestSetupKilledAtTimeout(t *testing.T) {
	f := newFixture(t, Options{})
	f.ensure("eng")
	pidFile := filepath.Join(f.root, "pid")
	start := time.Now()
	// A child in the background and the shell waiting: both must die.
	out, err := f.repo.Setup(context.Background(), "eng", SetupOptions{Command: "sleep 60 & echo $! > " + pidFile + "; echo started; wait", Timeout: 300 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "time limit of 300ms") {
		t.Fatalf("Setup = %v, want killed at the time limit", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("Setup waited for the sleep")
	}
	if out != "started\n" {
		t.Fatalf("output = %q", out)
	}
	waitGone(t, pidFile)
	if exists(filepath.Join(f.top, ".git", "worktrees", "eng", SetupMarker)) {
		t.Fatal("a killed setup was recorded")
	}
}

func TestSetupKillsWhatItLeavesBehind(t *testing.T) {
	f := newFixture(t, Options{})
	f.ensure("eng")
	pidFile := filepath.Join(f.root, "pid")
	out, err := f.repo.Setup(context.Background(), "eng", SetupOptions{Command: "sleep 60 & echo $! > " + pidFile + "; echo ok", Timeout: time.Minute})
	if err != nil || out != "ok\n" {
		t.Fatalf("Setup = %q, %v", out, err)
	}
	waitGone(t, pidFile)
}

func TestSetupWithAReaper(t *testing.T) {
	f := newFixture(t, Options{Starter: reap.New()})
	f.ensure("eng")
	if out, err := f.repo.Setup(context.Background(), "eng", SetupOptions{Command: "echo ok", Timeout: time.Minute}); err != nil || out != "ok\n" {
		t.Fatalf("Setup = %q, %v", out, err)
	}
}

// waitGone waits until the process whose pid is in pidFile has exited.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := reap.OpenPidfd(pid)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.WaitExit(time.Now().Add(10 * time.Second)) {
		p.Kill()
		t.Fatalf("process %d outlived the setup", pid)
	}
}
