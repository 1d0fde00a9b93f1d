package orchestrator

import (
	"fmt"
	"os"

	"github.com/battyhq/batty/agentproc"
	"github.com/battyhq/batty/control"
)

// insider decides whether process pid, at the other end of the control
// socket, runs inside an agent (control.InsiderOf): it reads pid's chain
// and the daemon's own from /proc, and gives the pids of the team's live
// shims and, when the daemon is a subreaper, which of its children it
// started. Safe from any goroutine once Run has set the reaper up.
func (d *Daemon) insider(pid int) (control.Insider, error) {
	self, err := os.Executable()
	if err != nil {
		return control.Insider{}, fmt.Errorf("find the daemon's program: %w", err)
	}
	chain, err := agentproc.Chain("/proc", pid, self)
	if err != nil {
		return control.Insider{}, err
	}
	own, err := agentproc.Chain("/proc", os.Getpid(), self)
	if err != nil {
		return control.Insider{}, fmt.Errorf("the daemon's own parents: %w", err)
	}
	shims := map[int]string{}
	for _, a := range d.agents {
		if s := a.snapshot(); s.shimPID > 0 {
			shims[s.shimPID] = a.def.Name
		}
	}
	var managed func(int) bool
	if d.reaper != nil {
		managed = d.reaper.Managed
	}
	return control.InsiderOf(chain, own, shims, managed), nil
}

// Insider is the judge of the control socket (insider) for others that
// must tell the human from an agent: the console, of a process at the
// other end of its connection. Safe from any goroutine once Run has set
// the reaper up.
func (d *Daemon) Insider(pid int) (control.Insider, error) { return d.insider(pid) }
