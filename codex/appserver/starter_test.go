package appserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// recStarter is a reap.Starter that records the pids it started and
// released; fail, when set, is Start's error.
type recStarter struct {
	mu                sync.Mutex
	started, released []int
	fail              error
}

func (s *recStarter) Start(cmd *exec.Cmd) error {
	if s.fail != nil {
		return s.fail
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.mu.Lock()
	s.started = append(s.started, cmd.Process.Pid)
	s.mu.Unlock()
	return nil
}

func (s *recStarter) Release(pid int) {
	s.mu.Lock()
	s.released = append(s.released, pid)
	s.mu.Unlock()
}

func (s *recStarter) record() (started, released []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.started), slices.Clone(s.released)
}

// catServer writes an executable that ignores its arguments and echoes
// its stdin: a process that stays up until its stdin closes.
func catServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec cat\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestStartThroughStarter checks that the server process is started by
// Options.Starter and released to it once Close has reaped it.
func TestStartThroughStarter(t *testing.T) {
	st := &recStarter{}
	c, err := Start(context.Background(), Options{Bin: catServer(t), Starter: st})
	if err != nil {
		t.Fatal(err)
	}
	started, released := st.record()
	if len(started) != 1 || started[0] != c.Pid() || c.Pid() == 0 {
		t.Fatalf("Starter started %v, want [%d]", started, c.Pid())
	}
	if len(released) != 0 {
		t.Fatalf("released %v while the server runs", released)
	}
	pid := c.Pid()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, released = st.record(); !slices.Equal(released, []int{pid}) {
		t.Fatalf("after Close, released %v, want [%d]", released, pid)
	}
}

// TestStartStarterFails checks that Start reports the Starter's error and
// starts nothing else.
func TestStartStarterFails(t *testing.T) {
	boom := errors.New("no room")
	st := &recStarter{fail: boom}
	c, err := Start(context.Background(), Options{Bin: catServer(t), Starter: st})
	if !errors.Is(err, boom) || c != nil {
		t.Fatalf("Start = %v, %v; want the Starter's error", c, err)
	}
	if started, released := st.record(); len(started)+len(released) != 0 {
		t.Fatalf("started %v, released %v", started, released)
	}
}
