package orchestrator

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/leftovers"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim"
)

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
	killed, err := leftovers.RemoveCgroup(leftovers.CgroupName(l))
	if err != nil {
		// Not a fresh cgroup, and maybe a killed one: no shim goes in.
		log.Error("Processes left running by the team survived; no cgroup for the team this run", "when", "daemon start", "error", err)
		return tp, killed
	}
	cg, err := reap.OpenCgroup(leftovers.CgroupName(l), true)
	if err != nil {
		log.Debug("No cgroup for the team; leftovers are found by their mark alone", "error", err)
		return tp, killed
	}
	log.Debug("Team cgroup", "dir", cg.Dir())
	tp.cgroup = cg
	return tp, killed
}

// sweepMarked kills every process carrying the project's mark except this
// process and its ancestors: what an earlier run left outside the cgroup.
// Only call it while no shim runs (before the first starts). It blocks
// until they are gone (bounded by leftovers.Kill), logs what it
// killed and returns how many.
func (tp *teamProcs) sweepMarked(when string) int {
	n, err := leftovers.Kill(tp.layout, nil)
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
	n, err := leftovers.Kill(tp.layout, cg)
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
func (tp *teamProcs) spawn(ctx context.Context, o shim.SpawnOptions) (*shim.Client, error) {
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
	p, err := shim.Start(ctx, o)
	if err == nil || o.Cgroup == nil || !isStartError(err) {
		return p, err
	}
	o.Cgroup = nil
	p, err2 := shim.Start(ctx, o)
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
