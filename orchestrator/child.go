package orchestrator

import (
	"os/exec"

	"github.com/battyhq/batty/reap"
)

// RunChild runs cmd to completion as a child of the daemon process that is
// not one of its shims (the cockpit's tmux calls). With Options.Subreaper
// the daemon reaps every child it did not register and kills the live ones
// as leftovers of a dead shim; RunChild registers cmd for its lifetime, so
// its owner's Wait gets its exit status and nothing kills it. It blocks
// until cmd exits. Safe from any goroutine once Ready is closed; before
// that it runs cmd as a plain child. It is startChild, Wait and
// releaseChild: the one way the daemon runs a child that is not a shim.
func (d *Daemon) RunChild(cmd *exec.Cmd) error {
	c := d.Children()
	if err := c.Start(cmd); err != nil {
		return err
	}
	defer c.Release(cmd.Process.Pid)
	return cmd.Wait()
}

// Children returns the starter of the daemon's children that are not
// shims, for a workspaces.Git or reap.RunGroup the daemon's process runs
// outside the daemon's own code (the console's git commands): a child it
// starts is registered with the reaper until it is released, as
// RunChild's. Safe from any goroutine; before Ready is closed it starts
// children plainly.
func (d *Daemon) Children() reap.Starter { return children{d} }

// children is Children's starter.
type children struct{ d *Daemon }

func (c children) Start(cmd *exec.Cmd) error {
	select {
	case <-c.d.ready:
		return c.d.startChild(cmd)
	default:
		return cmd.Start()
	}
}

func (c children) Release(pid int) {
	select {
	case <-c.d.ready:
		c.d.releaseChild(pid)
	default:
	}
}

// startChild starts cmd as a child of the daemon that is not a shim: with
// Options.Subreaper it is registered with the reaper, so orphan reaping and
// leftover kills leave it to its owner, who must Wait for it and then call
// releaseChild. It reads d.reaper unguarded: callers run after Run set it
// up (the alert hook's worker) or wait for Ready first (RunChild).
func (d *Daemon) startChild(cmd *exec.Cmd) error {
	if d.reaper == nil {
		return cmd.Start()
	}
	return d.reaper.Start(cmd)
}

// releaseChild forgets a child started by startChild once it was waited for.
func (d *Daemon) releaseChild(pid int) {
	if d.reaper != nil {
		d.reaper.Release(pid)
	}
}
