package control

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
)

// Stop asks the project's daemon to stop, letting turns in flight run for
// timeout (0: the team's timeouts.shutdown) before they are interrupted,
// and blocks until the daemon has released its lock and its process has
// exited, or wait passes. It returns the daemon's pid, or ErrNotRunning
// (wrapped) when no daemon runs.
//
// The daemon process is pinned (pidfd) before the request is sent: a
// daemon releases its lock a moment before its process is gone, and the
// caller — `batty stop` — promises that nothing is left running.
func Stop(l project.Layout, timeout, wait time.Duration) (int, error) {
	d := pinDaemon(l)
	defer d.close()
	if d.pid == 0 {
		return 0, fmt.Errorf("%w (no daemon holds %s)", ErrNotRunning, l.LockFile())
	}
	if _, err := Call(l, Request{Op: OpStop, Timeout: timeout}, 0); err != nil {
		return d.pid, fmt.Errorf("stop daemon (pid %d): %w", d.pid, err)
	}
	return d.pid, d.wait(wait)
}

// daemonProc is a running daemon pinned by its lock file and, where the
// kernel has pidfds, by a pidfd on its process.
type daemonProc struct {
	l     project.Layout
	pid   int         // 0: no daemon ran when pinned
	pidfd *reap.Pidfd // nil: none (no pidfds, or the daemon is this process)
}

// pinDaemon pins the daemon running for l, if any: without pidfds, or
// when the daemon is gone already, the lock alone will have to do.
func pinDaemon(l project.Layout) *daemonProc {
	d := &daemonProc{l: l}
	running, pid := project.Running(l)
	if !running {
		return d
	}
	d.pid = pid
	if pid <= 0 || pid == os.Getpid() {
		return d
	}
	pidfd, err := reap.OpenPidfd(pid)
	if err != nil {
		// No pidfds (Linux < 5.3), or the daemon is already gone: the
		// lock alone will have to do.
		return d
	}
	// The pid in the lock file is the holder's only while it holds the
	// lock: check that it still does, so fd is not some reused pid's.
	if running, again := project.Running(l); !running || again != pid {
		pidfd.Close()
		return d
	}
	d.pidfd = pidfd
	return d
}

func (d *daemonProc) close() {
	if d.pidfd != nil {
		d.pidfd.Close()
		d.pidfd = nil
	}
}

// wait blocks until the daemon's lock is free and its process has exited,
// or timeout passes.
func (d *daemonProc) wait(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	f, err := project.OpenLock(d.l, os.O_RDWR)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	// The goroutine ends when the lock is released; flock cannot be
	// cancelled, so on timeout it is left to finish with the process.
	go func() {
		defer f.Close()
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err == nil {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("wait for the daemon to exit: %w", err)
		}
	case <-time.After(time.Until(deadline)):
		return fmt.Errorf("the daemon (pid %d) still holds %s after %s", d.pid, d.l.LockFile(), timeout)
	}
	if d.pidfd == nil {
		return nil
	}
	if !d.pidfd.WaitExit(deadline) {
		return fmt.Errorf("the daemon (pid %d) released %s but had not exited after %s", d.pid, d.l.LockFile(), timeout)
	}
	return nil
}
