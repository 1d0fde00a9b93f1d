package orchestrator

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/leftovers"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim/shimclient"
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

	// forks carries starts of the daemon's own children to forkLoop, on
	// the thread they are forked from, until stop closes quit.
	forks    chan forkRequest
	quit     chan struct{}
	forkDone chan struct{} // closed when forkLoop has returned
	stopOnce sync.Once
}

// forkRequest is one child for forkLoop to start.
type forkRequest struct {
	start func() error
	err   chan error
}

// openTeamProcs sets up the project's cgroup (unless noCgroup, or none is
// available: then the mark alone serves, which the debug log says). A
// cgroup an earlier run left is killed and replaced by a fresh one: on some
// kernels a cgroup once killed (cgroup.kill) also kills every process
// started into it later. It returns how many processes the old cgroup held.
func openTeamProcs(l project.Layout, log hclog.Logger, noCgroup bool) (*teamProcs, int) {
	tp := &teamProcs{layout: l, log: log, forks: make(chan forkRequest), quit: make(chan struct{}), forkDone: make(chan struct{})}
	go tp.forkLoop()
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
	tp.stopOnce.Do(func() {
		close(tp.quit)
		<-tp.forkDone
	})
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
func (tp *teamProcs) spawn(ctx context.Context, o shimclient.SpawnOptions) (*shimclient.Client, error) {
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
	p, err := shimclient.Start(ctx, o)
	if err == nil || o.Cgroup == nil || !isStartError(err) {
		return p, err
	}
	o.Cgroup = nil
	p, err2 := shimclient.Start(ctx, o)
	if err2 != nil {
		return nil, err2
	}
	tp.log.Debug("Shims cannot start in the team cgroup; leftovers are found by their mark alone", "error", err)
	tp.mu.Lock()
	tp.broken = true
	tp.mu.Unlock()
	return p, nil
}

// childStarter starts the daemon's own long-lived children (the shared
// app-servers) as teamProcs.startChild says, through the daemon's reaper
// when it is a subreaper (nil: exec.Cmd.Start). It is a reap.Starter.
type childStarter struct {
	tp     *teamProcs
	reaper *reap.Reaper
}

// Start starts cmd: see teamProcs.startChild.
func (s childStarter) Start(cmd *exec.Cmd) error { return s.tp.startChild(cmd, s.reaper) }

// Release tells the reaper, if any, that pid has been reaped.
func (s childStarter) Release(pid int) {
	if s.reaper != nil {
		s.reaper.Release(pid)
	}
}

// startChild starts cmd, a long-lived child of the daemon itself (a shared
// app-server), placed as a shim is: in the team's cgroup where there is
// one, its caller having given it the project's mark; and it is SIGKILLed when the daemon
// dies (Pdeathsig), so a daemon killed with SIGKILL leaves it running no
// longer than its shims. The kernel sends that signal when the thread
// that forked the child ends, not the process: a Go thread may end while
// the daemon lives on (one a goroutine locked and left), which would kill
// the child behind its broker's back and pass for a crash. So the fork is
// made by forkLoop, on a thread of its own that lives until stop. When the
// kernel refuses to start it in the cgroup, the error is returned and
// later starts go outside (the broker starts it again). cmd's
// SysProcAttr is kept and added to (Setpgid stays as set). It blocks until
// cmd has started; reaper, when not nil, starts it as a managed child.
func (tp *teamProcs) startChild(cmd *exec.Cmd, reaper *reap.Reaper) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	start := func() error {
		if reaper != nil {
			return reaper.Start(cmd)
		}
		return cmd.Start()
	}
	tp.mu.Lock()
	cg := tp.cgroup
	if tp.broken {
		cg = nil
	}
	tp.mu.Unlock()
	if cg != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cg.FD()
	}
	err := tp.fork(start)
	if err == nil || cg == nil || !isStartError(err) {
		return err
	}
	// An exec.Cmd that failed to start cannot be started again (its pipes
	// are closed): the caller's next start (the broker starts the process
	// again) goes outside the cgroup, as later shims do.
	tp.log.Debug("A child of the daemon cannot start in the team cgroup; leftovers are found by their mark alone", "error", err)
	tp.mu.Lock()
	tp.broken = true
	tp.mu.Unlock()
	return err
}

// fork runs start on forkLoop's thread and returns its error; once stop
// has begun it starts nothing.
func (tp *teamProcs) fork(start func() error) error {
	req := forkRequest{start: start, err: make(chan error, 1)}
	select {
	case tp.forks <- req:
		return <-req.err
	case <-tp.quit:
		return errors.New("the team is stopping: no process starts")
	}
}

// forkLoop starts the daemon's own children on one OS thread, locked to
// it, until stop closes quit: the thread their Pdeathsig is tied to.
func (tp *teamProcs) forkLoop() {
	defer close(tp.forkDone)
	runtime.LockOSThread()
	// Left locked: the thread ends with the loop, after the children
	// forked from it (closeShared runs before stop).
	for {
		select {
		case req := <-tp.forks:
			req.err <- req.start()
		case <-tp.quit:
			return
		}
	}
}

// isStartError reports whether err is a failure to start a process
// (fork/exec), not one of the process once it ran.
func isStartError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Op, "fork/exec")
}
