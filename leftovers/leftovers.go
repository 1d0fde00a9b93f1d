// Package leftovers finds and kills what a project's runs left running:
// the processes in the project's cgroup and those carrying its mark. The
// daemon sweeps at its start and stop; `batty stop` sweeps when no daemon
// runs.
package leftovers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
)

// sweepTimeout bounds each kill of leftovers (cgroup, then marked).
const sweepTimeout = 5 * time.Second

// CgroupName names the project's cgroup, below the daemon's own: one per
// .batty directory, the same for every run, so a daemon finds what an
// earlier run of the same project left in it.
func CgroupName(l project.Layout) string {
	sum := sha256.Sum256([]byte(l.Dir))
	return "batty-" + hex.EncodeToString(sum[:8])
}

// RemoveCgroup kills what is in cgroup name (below this process's own), if
// it exists, and removes it. It returns how many processes it held.
func RemoveCgroup(name string) (int, error) {
	cg, err := reap.OpenCgroup(name, false)
	if err != nil {
		return 0, nil // none: nothing to kill
	}
	n, err := cg.Kill(sweepTimeout)
	if err != nil {
		cg.Close()
		return n, fmt.Errorf("kill cgroup %s: %w", cg.Dir(), err)
	}
	return n, cg.Remove()
}

// Kill kills the processes in cg (nil: none) and the processes
// marked with l's directory, except this process and its ancestors, and
// waits for them to exit. It returns how many it killed.
func Kill(l project.Layout, cg *reap.Cgroup) (int, error) {
	var errs []error
	total := 0
	if cg != nil {
		n, err := cg.Kill(sweepTimeout)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("kill cgroup %s: %w", cg.Dir(), err))
		}
	}
	n, err := reap.SweepMarked(reap.MarkEnv, l.Dir, nil, sweepTimeout)
	total += n
	if err != nil {
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}

// Sweep kills what an earlier run of the project left running
// (its daemon and shims killed together): the processes in the project's
// cgroup, which it then removes, and the processes carrying the project's
// mark. It holds the project's lock meanwhile, so no daemon starts under
// it; when a daemon runs (holds the lock for longer than a daemon killed a
// moment ago takes to die) it does nothing and returns ErrAlreadyRunning
// (wrapped). It blocks until the leftovers are gone (a few seconds at
// most) and returns how many it killed. `batty stop` runs it when no
// daemon runs.
func Sweep(l project.Layout) (int, error) {
	if _, err := os.Stat(l.Dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	lock, err := project.AcquireLockWait(l)
	if err != nil {
		return 0, err
	}
	defer project.ReleaseLock(lock)
	n, err := RemoveCgroup(CgroupName(l))
	m, err2 := Kill(l, nil)
	return n + m, errors.Join(err, err2)
}
