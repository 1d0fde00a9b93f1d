package project

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The daemon lock: a flock on daemon.lock, holding the pid of the daemon
// that holds it. The daemon holds it while it runs; the commands that
// change a project's state while no daemon runs take it first (WithLock),
// so they refuse to run next to a daemon.

// AcquireLock takes the project's daemon lock without blocking and records
// this process's pid in it (what `batty stop` and AlreadyRunningError
// read). A pid it cannot record (the lock file cannot be truncated,
// written or synced) is an error: the lock is released and not taken.
func AcquireLock(l Layout) (*os.File, error) {
	f, err := OpenLock(l, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		pid := readPID(l)
		return nil, AlreadyRunningError(pid, l.Socket())
	}
	if err := writePID(f, os.Getpid()); err != nil {
		ReleaseLock(f)
		return nil, fmt.Errorf("record the pid in lock %s: %w", l.LockFile(), err)
	}
	return f, nil
}

// writePID replaces the content of the lock file f with pid and syncs it.
func writePID(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(fmt.Appendf(nil, "%d\n", pid), 0); err != nil {
		return err
	}
	return f.Sync()
}

// ErrAlreadyRunning is returned (wrapped) by AcquireLock, and so by the
// daemon's start, when the project's daemon already runs.
var ErrAlreadyRunning = errors.New("already running")

// AlreadyRunningError is the error for a project whose daemon runs as pid,
// listening on socket: it wraps ErrAlreadyRunning and reads once after the
// command's "batty: " — "already running for this project (pid 41230,
// socket /p/.batty/daemon.sock); `batty stop` stops it".
func AlreadyRunningError(pid int, socket string) error {
	return fmt.Errorf("%w for this project (pid %d, socket %s); `batty stop` stops it", ErrAlreadyRunning, pid, socket)
}

// ReleaseLock empties and releases the lock taken by AcquireLock; a nil f
// is no lock.
func ReleaseLock(f *os.File) {
	if f == nil {
		return
	}
	f.Truncate(0)
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	f.Close()
}

// OpenLock opens the daemon lock file with flag, never through a link.
func OpenLock(l Layout, flag int) (*os.File, error) {
	dir, err := l.OpenDir("", false)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", l.LockFile(), err)
	}
	defer dir.Close()
	f, err := dir.OpenFile(lockName, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", l.LockFile(), err)
	}
	return f, nil
}

// readPID returns the pid recorded in the lock file, or 0.
func readPID(l Layout) int {
	b, err := l.readFile(lockName)
	if err != nil {
		return 0
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

// Running reports whether a daemon holds the project's lock, and its pid.
func Running(l Layout) (bool, int) {
	f, err := OpenLock(l, os.O_RDWR)
	if err != nil {
		return false, 0
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true, readPID(l)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false, 0
}

// RunningSettled is Running for a command about to start a daemon: a lock
// whose holder (the pid in the lock file) is dead or a zombie is a daemon
// killed a moment ago whose lock the kernel has not released yet, so it
// waits up to lockWait for that lock to go. A live holder answers at once.
func RunningSettled(l Layout) (bool, int) {
	deadline := time.Now().Add(lockWait)
	for {
		running, pid := Running(l)
		if !running || processAlive(pid) || !time.Now().Before(deadline) {
			return running, pid
		}
		time.Sleep(20 * time.Millisecond) // the kernel tears the process down
	}
}

// processAlive reports whether pid names a process that is not a zombie
// (false for pid 0, a process gone, or one that cannot be read).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	switch b[i+2] {
	case 'Z', 'X', 'x':
		return false
	}
	return true
}

// lockWait is how long WithLock waits for a lock that is held: a daemon
// killed a moment ago holds it until the kernel has torn it down, which a
// command run right after the kill must not take for a running daemon.
const lockWait = 2 * time.Second

// WithLock runs f while holding the daemon lock. A lock held for longer
// than lockWait is ErrAlreadyRunning.
func WithLock(l Layout, f func() error) error {
	if err := l.MkdirAll(); err != nil {
		return err
	}
	lock, err := AcquireLockWait(l)
	if err != nil {
		return err
	}
	defer ReleaseLock(lock)
	return f()
}

// AcquireLockWait takes the project's daemon lock, waiting up to lockWait
// while it is held; then it is ErrAlreadyRunning (wrapped).
func AcquireLockWait(l Layout) (*os.File, error) {
	deadline := time.Now().Add(lockWait)
	lock, err := AcquireLock(l)
	for err != nil && errors.Is(err, ErrAlreadyRunning) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		lock, err = AcquireLock(l)
	}
	return lock, err
}
