package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim"
)

// sweepTimeout bounds each kill of leftovers (cgroup, then marked).
const sweepTimeout = 5 * time.Second

// Every process the daemon starts for a project carries the project's mark
// (reap.MarkEnv = the absolute .batty directory), which every descendant
// inherits, and — where a cgroup v2 is delegated to the daemon's user — is
// born in the project's cgroup. Subreapers catch what a dead shim or codex
// leaves; the mark and the cgroup catch what outlived the daemon and its
// shims killed together (their subreapers gone, it went to init). Both are
// swept when the daemon starts, before any shim, and when it stops, after
// every shim has exited.

// teamProcs is the daemon's hold on the processes it starts: the mark they
// carry and the team's cgroup, if any. Safe for concurrent use.
type teamProcs struct {
	layout project.Layout
	log    hclog.Logger

	mu     sync.Mutex
	cgroup *reap.Cgroup // nil: none (not available, or disabled)
	broken bool         // starting a shim into cgroup failed: start them outside it
}

// cgroupName names the project's cgroup, below the daemon's own: one per
// .batty directory, the same for every run, so a daemon finds what an
// earlier run of the same project left in it.
func cgroupName(l project.Layout) string {
	sum := sha256.Sum256([]byte(l.Dir))
	return "batty-" + hex.EncodeToString(sum[:8])
}

// openTeamProcs sets up the project's cgroup (unless noCgroup, or none is
// available: then the mark alone serves, which the debug log says). A
// cgroup an earlier run left is killed and replaced by a fresh one: on some
// kernels a cgroup once killed (cgroup.kill) also kills every process
// started into it later. It returns how many processes the old cgroup held.
func openTeamProcs(l project.Layout, log hclog.Logger, noCgroup bool) (*teamProcs, int) {
	tp := &teamProcs{layout: l, log: log}
	if noCgroup {
		return tp, 0
	}
	killed, err := removeCgroup(cgroupName(l))
	if err != nil {
		// Not a fresh cgroup, and maybe a killed one: no shim goes in.
		log.Error("Processes left running by the team survived; no cgroup for the team this run", "when", "daemon start", "error", err)
		return tp, killed
	}
	cg, err := reap.OpenCgroup(cgroupName(l), true)
	if err != nil {
		log.Debug("No cgroup for the team; leftovers are found by their mark alone", "error", err)
		return tp, killed
	}
	log.Debug("Team cgroup", "dir", cg.Dir())
	tp.cgroup = cg
	return tp, killed
}

// removeCgroup kills what is in cgroup name (below this process's own), if
// it exists, and removes it. It returns how many processes it held.
func removeCgroup(name string) (int, error) {
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

// sweepMarked kills every process carrying the project's mark except this
// process and its ancestors: what an earlier run left outside the cgroup.
// Only call it while no shim runs (before the first starts). It blocks
// until they are gone (bounded by sweepTimeout), logs what it killed and
// returns how many.
func (tp *teamProcs) sweepMarked(when string) int {
	n, err := killLeftovers(tp.layout, nil)
	return tp.report(when, n, err)
}

// stop kills what the team left once its last shim has exited: everything
// in its cgroup, which it then removes, and every process carrying its
// mark. It blocks until they are gone (bounded), logs what it killed and
// returns how many. No shim may start afterwards.
func (tp *teamProcs) stop() int {
	tp.mu.Lock()
	cg := tp.cgroup
	tp.cgroup = nil
	tp.mu.Unlock()
	n, err := killLeftovers(tp.layout, cg)
	tp.report("daemon stop", n, err)
	if cg != nil {
		if err := cg.Remove(); err != nil {
			tp.log.Warn("Removing the team cgroup failed", "error", err)
		}
	}
	return n
}

func (tp *teamProcs) report(when string, n int, err error) int {
	if n > 0 {
		tp.log.Warn("Killed processes left running by the team", "count", n, "when", when)
	}
	if err != nil {
		tp.log.Error("Processes left running by the team survived", "when", when, "error", err)
	}
	return n
}

// spawn starts a shim carrying the project's mark and, where the team has a
// cgroup, inside it. Should the kernel refuse to start it in the cgroup,
// it is started outside, and so are all later shims (the debug log says
// why).
func (tp *teamProcs) spawn(o shim.SpawnOptions) (*shim.Process, error) {
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	o.Env = append(append([]string(nil), env...), reap.MarkEnv+"="+tp.layout.Dir)
	tp.mu.Lock()
	if tp.cgroup != nil && !tp.broken {
		o.Cgroup = tp.cgroup
	}
	tp.mu.Unlock()
	p, err := shim.Spawn(o)
	if err == nil || o.Cgroup == nil || !isStartError(err) {
		return p, err
	}
	o.Cgroup = nil
	p, err2 := shim.Spawn(o)
	if err2 != nil {
		return nil, err2
	}
	tp.log.Debug("Shims cannot start in the team cgroup; leftovers are found by their mark alone", "error", err)
	tp.mu.Lock()
	tp.broken = true
	tp.mu.Unlock()
	return p, nil
}

// isStartError reports whether err is a failure to start a process
// (fork/exec), not one of the process once it ran.
func isStartError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Op, "fork/exec")
}

// killLeftovers kills the processes in cg (nil: none) and the processes
// marked with l's directory, except this process and its ancestors, and
// waits for them to exit. It returns how many it killed.
func killLeftovers(l project.Layout, cg *reap.Cgroup) (int, error) {
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

// SweepLeftovers kills what an earlier run of the project left running
// (its daemon and shims killed together): the processes in the project's
// cgroup, which it then removes, and the processes carrying the project's
// mark. It holds the project's lock meanwhile, so no daemon starts under
// it; when a daemon runs (holds the lock for longer than a daemon killed a
// moment ago takes to die) it does nothing and returns ErrAlreadyRunning
// (wrapped). It blocks until the leftovers are gone (a few seconds at
// most) and returns how many it killed. `batty stop` runs it when no
// daemon runs.
func SweepLeftovers(l project.Layout) (int, error) {
	if _, err := os.Stat(l.Dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	lock, err := project.AcquireLockWait(l)
	if err != nil {
		return 0, err
	}
	defer project.ReleaseLock(lock)
	n, err := removeCgroup(cgroupName(l))
	m, err2 := killLeftovers(l, nil)
	return n + m, errors.Join(err, err2)
}
