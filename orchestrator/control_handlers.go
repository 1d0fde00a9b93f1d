package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// control answers every request but stop.
func (d *Daemon) control(req Request) Response {
	switch req.Op {
	case OpPing:
		return Response{OK: true, PID: os.Getpid()}
	case OpStatus:
		st := d.status()
		return Response{OK: true, Status: &st, PID: os.Getpid()}
	case OpPause:
		reason := req.Reason
		if reason == "" {
			reason = "paused by user"
		}
		return Response{OK: true, Changed: d.pause(PauseManual, reason)}
	case OpResume:
		if req.Agent != "" {
			// One agent: tried again at once if failed, checked again if
			// parked; the dispatch gate is left as it is.
			a, ok := d.byName[req.Agent]
			if !ok {
				return Response{Error: fmt.Sprintf("no agent %q in team %q; `batty status` lists the agents", req.Agent, d.cfg.Name)}
			}
			resp := Response{OK: true}
			if d.retryFailed(a) {
				resp.Retried = []string{a.def.Name}
			}
			if a.health != nil && a.health.problem() != nil {
				a.health.recheck()
				resp.Rechecked = []string{a.def.Name}
			}
			return resp
		}
		changed := d.resume("resumed by user")
		if d.resumeAccounts("resumed by user") {
			changed = true
		}
		var retried []string
		for _, a := range d.agents {
			if d.retryFailed(a) {
				retried = append(retried, a.def.Name)
			}
		}
		resp := Response{OK: true, Changed: changed, Rechecked: d.recheckAll(), Retried: retried}
		if d.sched != nil {
			resp.Schedules = d.sched.Resume()
		}
		return resp
	case OpReset:
		a, ok := d.byName[req.Agent]
		if !ok {
			return Response{Error: fmt.Sprintf("no agent %q in team %q", req.Agent, d.cfg.Name)}
		}
		c := agentCtl{op: "reset", reason: req.Reason, done: make(chan error, 1)}
		select {
		case a.ctl <- c:
		case <-a.done:
			return Response{Error: "agent " + req.Agent + " is stopped"}
		}
		if err := <-c.done; err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true}
	}
	return Response{Error: fmt.Sprintf("unknown operation %q", req.Op)}
}

// retryFailed has a failed agent try again now, ending its cool-down. It
// reports whether the agent was failed; it blocks until the agent's
// goroutine has answered.
func (d *Daemon) retryFailed(a *agent) bool {
	c := agentCtl{op: "retry", done: make(chan error, 1)}
	select {
	case a.ctl <- c:
	case <-a.done:
		return false
	}
	return <-c.done == nil
}

// status collects the documented status shape.
func (d *Daemon) status() Status {
	gs := d.gate.state()
	st := Status{
		Team:     d.cfg.Name,
		Daemon:   DaemonStatus{PID: os.Getpid(), UptimeS: int64(time.Since(d.started).Seconds())},
		Dispatch: DispatchStatus{Paused: gs.Paused, Reason: gs.Reason},
		Agents:   []AgentStatus{},
		Queues:   map[string]int{},
	}
	for role, box := range d.roles {
		if n, _, err := box.Count(); err == nil {
			st.Queues[role] = n
		}
	}
	if !gs.ResumeAt.IsZero() {
		t := gs.ResumeAt
		st.Dispatch.ResumeAt = &t
	}
	for _, a := range d.agents {
		s := a.snapshot()
		as := AgentStatus{
			Name: a.def.Name, Role: a.def.Role, State: s.state, ThreadID: s.st.ThreadID, Backlog: s.backlog,
			TurnsCompleted: s.st.TurnsCompleted, InputTokens: s.st.InputTokens, OutputTokens: s.st.OutputTokens,
			ContextPct: s.st.ContextPct, LastError: s.st.LastError, ShimPID: s.shimPID, Restarts: s.restarts,
		}
		if s.saveErr != "" {
			as.LastError = s.saveErr
		}
		as.NoAnswers = s.st.NoAnswers
		if s.recording != nil {
			rs := *s.recording
			as.Recording = &rs
			as.LastError = fmt.Sprintf("outcome of %s not recorded (%d tries since %s): %s", rs.Message, rs.Tries, rs.Since.Local().Format("15:04:05"), rs.Error)
		}
		if p := a.parkedNow(s); p != nil && s.state != agentFailed && s.state != agentStopped {
			// From the health itself too: status is right before the
			// agent's goroutine has caught up.
			as.State, as.Parked = agentParked, parkedStatus(p)
			as.LastError = parkedPrefix + p.String()
		} else if since, msg, held := d.net.get(a.account); held || !s.netSince.IsZero() {
			as.Network = &NetworkStatus{State: "held", Account: a.account, Since: since, Message: msg}
			if !s.netSince.IsZero() {
				as.State = AgentWaitingForNetwork
				as.Network.State, as.Network.Since, as.Network.Message = "waiting", s.netSince, s.netMessage
			}
		}
		if s.inflight != "" {
			id := s.inflight
			as.InFlight = &id
			as.InFlightAgeS = int64(time.Since(s.flightAt).Seconds())
		}
		st.Agents = append(st.Agents, as)
	}
	// Held messages are counted on disk: an agent's snapshot of its backlog
	// is only as fresh as its last look at its inbox.
	st.Accounts = accountStatus(d.quota.views(), func(n string) int {
		pending, inflight, _ := d.byName[n].box.Count()
		return pending + inflight
	})
	st.Schedules = d.scheduleStatus()
	return st
}

// acquireLock takes the project's daemon lock without blocking.
func acquireLock(l Layout) (*os.File, error) {
	f, err := openLock(l, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		pid := readPID(l)
		return nil, AlreadyRunningError(pid, l.Socket())
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Sync()
	return f, nil
}

// ErrAlreadyRunning is returned (wrapped) by New when the project's daemon
// already runs.
var ErrAlreadyRunning = errors.New("already running")

// AlreadyRunningError is the error for a project whose daemon runs as pid,
// listening on socket: it wraps ErrAlreadyRunning and reads once after the
// command's "batty: " — "already running for this project (pid 41230,
// socket /p/.batty/daemon.sock); `batty stop` stops it".
func AlreadyRunningError(pid int, socket string) error {
	return fmt.Errorf("%w for this project (pid %d, socket %s); `batty stop` stops it", ErrAlreadyRunning, pid, socket)
}

func releaseLock(f *os.File) {
	if f == nil {
		return
	}
	f.Truncate(0)
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	f.Close()
}

// openLock opens the daemon lock file with flag, never through a link.
func openLock(l Layout, flag int) (*os.File, error) {
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
	f, err := openLock(l, os.O_RDWR)
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
