package workspaces

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
)

// lock takes the repository lock: the in-process semaphore, then an
// exclusive flock on the lock file (created 0600 in a 0700 directory, never
// through a symbolic link). It blocks until both are held or ctx ends; the
// returned func releases them and must be called exactly once.
func (r *Repo) lock(ctx context.Context) (func(), error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the repository lock: %w", ctx.Err())
	}
	f, err := r.flock(ctx)
	if err != nil {
		<-r.sem
		return nil, err
	}
	return func() {
		f.Close() // closing the file releases the flock
		<-r.sem
	}, nil
}

// flock opens the lock file and waits for its exclusive flock. flock(2)
// cannot be interrupted, so it is tried without blocking, again after a
// pause growing to 50 ms, until it is taken or ctx ends.
func (r *Repo) flock(ctx context.Context) (*os.File, error) {
	if err := atomicfile.MkdirAll(filepath.Dir(r.lockFile)); err != nil {
		return nil, fmt.Errorf("repository lock: %w", err)
	}
	f, err := atomicfile.OpenFile(r.lockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("repository lock: %w", err)
	}
	pause := time.Millisecond
	var timer *time.Timer
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			if timer != nil {
				timer.Stop()
			}
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("repository lock %s: %w", r.lockFile, err)
		}
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			f.Close()
			return nil, fmt.Errorf("wait for the repository lock %s: %w", r.lockFile, ctx.Err())
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}
