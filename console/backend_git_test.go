package console

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/battyhq/batty/project"
)

// countingStarter starts processes as exec.Cmd.Start does and counts the
// starts and releases.
type countingStarter struct {
	mu                sync.Mutex
	started, released int
}

func (s *countingStarter) Start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	s.mu.Lock()
	s.started++
	s.mu.Unlock()
	return nil
}

func (s *countingStarter) Release(int) {
	s.mu.Lock()
	s.released++
	s.mu.Unlock()
}

// TestDaemonBackendStartsGitWithItsStarter: the git commands of the
// Landings and landing pages start through the backend's Starter (in the
// daemon, its reaper's: a git started plainly may be reaped under its
// owner, whose page then shows "waitid: no child processes"), each
// released once waited for.
func TestDaemonBackendStartsGitWithItsStarter(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	state := filepath.Join(dir, ".batty")
	if err := os.MkdirAll(filepath.Join(state, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := &countingStarter{}
	b := DaemonBackend{Layout: project.Layout{Dir: state, Project: dir}, Base: "main", Starter: s}
	if _, err := b.Landings(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started == 0 || s.released != s.started {
		t.Fatalf("git started %d times through the starter, released %d times", s.started, s.released)
	}
}
