package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/battyhq/batty/agentproc"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
)

// stopWait bounds how long `batty stop` waits, once the daemon has let its
// turns finish, for the daemon to release its lock and exit.
const stopWait = 30 * time.Second

// daemonClient is how a command talks to its project's daemon over the
// control socket. The methods that take an offline function run it instead
// when no daemon runs: the command's own path for a stopped team, which
// works on the project's files. The control.Offline* functions and
// leftovers.Sweep it calls take the project's lock, waiting up
// to 2 s for the lock of a daemon killed a moment ago, and refuse
// (project.ErrAlreadyRunning) when a daemon holds it for longer.
type daemonClient struct {
	layout project.Layout
}

// call sends req to the daemon and waits at most timeout for its answer.
// No daemon listening is control.ErrNotRunning (wrapped); a request
// the daemon refuses is an error carrying its reason.
func (c daemonClient) call(req control.Request, timeout time.Duration) (control.Response, error) {
	return control.Call(c.layout, req, timeout)
}

// callOr sends req to the daemon as call does and returns its answer with
// running true. When no daemon listens on the socket it runs offline
// instead — the command's answer to req for a stopped team — and returns
// offline's Response and error with running false (refuseInsider's
// refusal, offline not run, for an agent's command). Every other failure —
// the daemon refused the request or did not answer in time — is returned
// with running true; offline is not run.
func (c daemonClient) callOr(req control.Request, timeout time.Duration, offline func() (control.Response, error)) (resp control.Response, running bool, err error) {
	resp, err = c.call(req, timeout)
	if errors.Is(err, control.ErrNotRunning) {
		if err := refuseInsider(c.layout, req.Op); err != nil {
			return control.Response{}, false, err
		}
		resp, err = offline()
		return resp, false, err
	}
	return resp, true, err
}

// stop stops the daemon (see control.Stop: the turns in flight may
// finish until timeout, 0 for the team's timeouts.shutdown, then the daemon
// has stopWait to be gone) and returns its pid with running true. When no
// daemon holds the project's lock it runs offline instead (refused to an
// agent's command, see refuseInsider) and returns 0, running false and
// offline's error. A daemon that holds the lock but does
// not answer on the socket is an error, with its pid and running true: it
// is not taken for a stopped team.
func (c daemonClient) stop(timeout time.Duration, offline func() error) (pid int, running bool, err error) {
	pid, err = control.Stop(c.layout, timeout, stopWait)
	if errors.Is(err, control.ErrNotRunning) && pid == 0 {
		if err := refuseInsider(c.layout, control.OpStop); err != nil {
			return 0, false, err
		}
		return 0, false, offline()
	}
	return pid, true, err
}

// refuseInsider is the refusal of request op (see control.Refusal), made
// to a stopped team of layout l, when this process runs inside one of the
// team's agents: a batty shim carrying the project's mark is among its
// parents (control.OwnInsider). Nil when op may go ahead. The daemon, when
// one runs, decides for itself who asks.
func refuseInsider(l project.Layout, op string) error {
	if control.AgentMay(op) {
		return nil
	}
	var chain []agentproc.Process
	self, err := os.Executable()
	if err != nil {
		err = fmt.Errorf("find this program: %w", err)
	} else {
		chain, err = agentproc.Chain("/proc", os.Getpid(), self)
	}
	in, err := control.OwnInsider(chain, err, os.Getenv(reap.MarkEnv), l.Dir)
	return control.Refusal(op, in, err)
}
