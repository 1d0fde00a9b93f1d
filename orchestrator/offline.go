package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/team"
)

// The functions in this file change or read a project's state while no
// daemon runs. Each takes the project's lock first, so they refuse to run
// next to a daemon (which is then the only writer; use Call instead).

// withLock runs f while holding the daemon lock.
func withLock(l Layout, f func() error) error {
	for _, dir := range []string{l.Dir, l.StateDir()} {
		if err := atomicfile.MkdirAll(dir); err != nil {
			return err
		}
	}
	lock, err := acquireLock(l)
	if err != nil {
		return err
	}
	defer releaseLock(lock)
	return f()
}

// OfflineStatus builds the status of a stopped team from its files: every
// agent is "stopped", with its persisted thread, counters and backlog.
func OfflineStatus(cfg *team.Config, l Layout) (Status, error) {
	var st Status
	err := withLock(l, func() error {
		g, err := newGate(l.DispatchState())
		if err != nil {
			return err
		}
		ds := g.state()
		st = Status{Team: cfg.Name, Dispatch: DispatchStatus{Paused: ds.Paused, Reason: ds.Reason}, Agents: []AgentStatus{}, Queues: map[string]int{}}
		if !ds.ResumeAt.IsZero() {
			t := ds.ResumeAt
			st.Dispatch.ResumeAt = &t
		}
		store, err := inbox.Open(l.Inboxes())
		if err != nil {
			return err
		}
		for _, r := range cfg.Roles {
			if r.Instances < 2 {
				continue
			}
			box, err := store.Box("@" + r.Name)
			if err != nil {
				return err
			}
			if st.Queues[r.Name], _, err = box.Count(); err != nil {
				return err
			}
		}
		for _, a := range cfg.Agents() {
			var as AgentState
			if err := loadJSON(l.AgentState(a.Name), &as); err != nil {
				return err
			}
			box, err := store.Box(a.Name)
			if err != nil {
				return err
			}
			pending, inflight, err := box.Count()
			if err != nil {
				return err
			}
			st.Agents = append(st.Agents, AgentStatus{
				Name: a.Name, Role: a.Role, State: agentStopped, ThreadID: as.ThreadID, Backlog: pending + inflight,
				TurnsCompleted: as.TurnsCompleted, InputTokens: as.InputTokens, OutputTokens: as.OutputTokens,
				ContextPct: as.ContextPct, LastError: as.LastError,
			})
		}
		return nil
	})
	return st, err
}

// OfflineReset archives an agent's thread so its next message starts a
// fresh one.
func OfflineReset(cfg *team.Config, l Layout, agent, reason string) error {
	if _, ok := cfg.Agent(agent); !ok {
		return fmt.Errorf("no agent %q in team %q", agent, cfg.Name)
	}
	if reason == "" {
		reason = "reset by user"
	}
	return withLock(l, func() error {
		var as AgentState
		if err := loadJSON(l.AgentState(agent), &as); err != nil {
			return err
		}
		as.Name = agent
		as.archive(reason, time.Now().UTC())
		as.UpdatedAt = time.Now().UTC()
		return saveJSON(l.AgentState(agent), as)
	})
}

// OfflinePause closes (pause) or opens the dispatch gate of a stopped team.
func OfflinePause(l Layout, pause bool, reason string) error {
	return withLock(l, func() error {
		g, err := newGate(l.DispatchState())
		if err != nil {
			return err
		}
		if pause {
			if reason == "" {
				reason = "paused by user"
			}
			_, err = g.pause(PauseManual, reason, time.Time{})
		} else {
			_, err = g.resume()
		}
		return err
	})
}

// WaitStopped blocks until no daemon holds the project's lock and the
// daemon process that held it has exited, or timeout passes. A daemon
// releases its lock a moment before its process is gone; a caller that
// goes on to check for leftover processes needs both.
func WaitStopped(l Layout, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	f, err := os.OpenFile(l.LockFile(), os.O_RDWR, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open lock %s: %w", l.LockFile(), err)
	}
	// Pin the daemon process before it can exit and its pid be reused:
	// the pid in the lock file is valid while the lock is held.
	pidfd := -1
	running, pid := Running(l)
	if running && pid > 0 && pid != os.Getpid() {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			pidfd = fd
			defer unix.Close(pidfd)
		}
	}
	done := make(chan error, 1)
	// The goroutine ends when the lock is released; flock cannot be
	// cancelled, so on timeout it is left to finish with the process.
	go func() {
		defer f.Close()
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err == nil {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("wait for the daemon to exit: %w", err)
		}
	case <-time.After(time.Until(deadline)):
		return fmt.Errorf("the daemon (pid %d) still holds %s after %s", pid, l.LockFile(), timeout)
	}
	if pidfd < 0 {
		return nil
	}
	if err := waitPidfd(pidfd, time.Until(deadline)); err != nil {
		return fmt.Errorf("the daemon (pid %d) released its lock but did not exit: %w", pid, err)
	}
	return nil
}

// waitPidfd blocks until the process behind pidfd has exited (a pidfd
// becomes readable then), or timeout passes.
func waitPidfd(pidfd int, timeout time.Duration) error {
	for {
		ms := max(int(timeout.Milliseconds()), 0)
		start := time.Now()
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, ms)
		switch {
		case errors.Is(err, unix.EINTR):
			timeout -= time.Since(start)
			continue
		case err != nil:
			return fmt.Errorf("poll pidfd: %w", err)
		case n == 0:
			return fmt.Errorf("still running after %s", timeout)
		}
		return nil
	}
}
