package reap

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Pidfd pins one process (pidfd_open, Linux ≥ 5.3): unlike its pid, it
// never comes to name another process once that one has exited. Any
// process can be pinned, not only a child. Close it when done.
type Pidfd struct{ fd, pid int }

// OpenPidfd pins process pid. The error wraps unix.ESRCH when no such
// process exists, unix.ENOSYS when the kernel has no pidfds.
func OpenPidfd(pid int) (*Pidfd, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return &Pidfd{fd: fd, pid: pid}, nil
}

// WaitExit blocks until the process has exited (it may be a zombie, not
// yet reaped) or deadline passes, and reports whether it exited. It waits
// on the pidfd, which becomes readable at exit: no polling.
func (p *Pidfd) WaitExit(deadline time.Time) bool {
	for {
		ms := max(int(time.Until(deadline).Milliseconds()), 0)
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// Kill sends SIGKILL to the pinned process through the pidfd: never to a
// process that reused its pid. The error wraps unix.ESRCH when it has
// already exited.
func (p *Pidfd) Kill() error {
	if err := unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0); err != nil {
		return fmt.Errorf("pidfd_send_signal %d: %w", p.pid, err)
	}
	return nil
}

// Close releases the pidfd.
func (p *Pidfd) Close() error { return unix.Close(p.fd) }
