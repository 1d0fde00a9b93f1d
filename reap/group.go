package reap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Starter starts and releases the children of a process that is a child
// subreaper (a *Reaper satisfies it): a child started through it is never
// taken for an orphan by the reaper's scans. A nil Starter starts children
// with exec.Cmd.Start.
type Starter interface {
	Start(cmd *exec.Cmd) error
	Release(pid int)
}

// RunGroup runs cmd to its end in a process group of its own, which it
// sets up (Setpgid, and SIGKILL should this thread's process die), and
// reaps it; s, when not nil, starts and releases it. When ctx ends the
// whole group is killed. Once the command has exited, what it left running
// in its group is killed before it is reaped (while it is unreaped its pid,
// the group's id, cannot have been reused). A descendant that left the
// group and still holds the output does not hold RunGroup up for more
// than a second, nor make a command that succeeded fail.
//
// It blocks until the command is reaped and returns Wait's error, or
// ctx's error (wrapped) when ctx ended first; start is the error of a
// command that could not be started.
func RunGroup(ctx context.Context, cmd *exec.Cmd, s Starter) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Second
	}
	var err error
	if s != nil {
		err = s.Start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	if s != nil {
		defer s.Release(pid)
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()
	cancelled := false
	select {
	case <-exited:
	case <-ctx.Done():
		cancelled = true
	}
	unix.Kill(-pid, unix.SIGKILL)
	<-exited
	werr := cmd.Wait()
	if cancelled {
		return fmt.Errorf("%s: %w", cmd.Path, ctx.Err())
	}
	if errors.Is(werr, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		return nil
	}
	return werr
}

// ExitCode is the exit status of a process that has been waited for (ps,
// its exec.Cmd's ProcessState), or -1 when a signal killed it or it never
// ran (ps nil). Pure.
func ExitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1
	}
	return ps.ExitCode()
}
