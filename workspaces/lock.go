package workspaces

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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

// Locker returns the repository lock (the one Commit, Ensure, SyncBase and
// Prune hold: this Repo's mutex and the flock on Options.LockFile) as a
// sync.Locker, for other writers of the repository that must not run git
// beside them, such as the merge queue. Lock blocks until it holds both;
// when the lock file cannot be opened at all it holds the mutex alone
// (git's own locks still guard the refs). Unlock releases what Lock took.
func (r *Repo) Locker() sync.Locker { return &repoLocker{r: r} }

type repoLocker struct {
	r *Repo
	f *os.File // the flock held, nil when only the mutex is
}

func (l *repoLocker) Lock() {
	l.r.sem <- struct{}{}
	f, err := l.r.flock(context.Background())
	if err != nil {
		f = nil
	}
	l.f = f
}

func (l *repoLocker) Unlock() {
	if l.f != nil {
		l.f.Close() // closing the file releases the flock
		l.f = nil
	}
	<-l.r.sem
}
