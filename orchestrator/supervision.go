package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/protocol"
)

// supervision is the agent's room for keeping its worker alive: the
// crashes of the crash window, the respawn back-off and its timer, the
// crash loops in a row, and the ping whose pong is due. Run's goroutine
// owns it.
type supervision struct {
	crashes   []time.Time
	backoff   time.Duration
	failures  int  // crash loops in a row (see crashed)
	failed    bool // in a crash loop: respawn is its cool-down
	probation bool // spawned by a retry of a failed agent: a crash fails it again
	spawnedAt time.Time
	nonce     uint64
	pongDue   <-chan time.Time
	respawn   <-chan time.Time
	respawnIn time.Duration // the wait respawn was set to last by respawnLater
}

// crash counts a crash at now among those of the last window, and
// reports whether it ends in a crash loop: max of them, or any crash on
// probation.
func (s *supervision) crash(now time.Time, window time.Duration, max int) bool {
	s.crashes = append(s.crashes, now)
	for len(s.crashes) > 0 && now.Sub(s.crashes[0]) > window {
		s.crashes = s.crashes[1:]
	}
	return len(s.crashes) >= max || s.probation
}

// respawnLater sets the respawn timer to the back-off and doubles the
// back-off for the next time, up to most.
func (s *supervision) respawnLater(most time.Duration) {
	s.respawnIn = s.backoff
	s.respawn = time.After(s.backoff)
	s.backoff = min(s.backoff*2, most)
}

// ranLong forgets what failed before when the worker ran for longer than
// window: the back-off starts again from least, and no crash loop counts.
func (s *supervision) ranLong(window, least time.Duration) {
	if time.Since(s.spawnedAt) > window {
		s.backoff, s.failures, s.probation = least, 0, false
	}
}

// ponged ends the wait for the pong of the last ping when e answers it.
func (s *supervision) ponged(e protocol.Pong) {
	if e.Nonce == s.nonce {
		s.pongDue = nil
	}
}

// crashed schedules a respawn with backoff. After MaxCrashes crashes within
// the crash window, or any crash of a shim started by the retry of a failed
// agent, the agent is failed: one agent_failed alert, and the next try
// after the cool-down of failedCooldown (or at once on `batty resume`).
func (a *agent) crashed() {
	now := time.Now()
	if f := a.supervision.crashed(now, &a.opts.Supervision); f != nil {
		msg := fmt.Sprintf("%s: retrying in %s (at %s); see %s; `batty resume %s` retries now",
			f.why, f.wait, f.at.Local().Format("15:04:05"), a.layout.DaemonLog(), a.def.Name)
		a.log.Error("Agent failed", "detail", msg)
		a.st.SetError(msg, "", now.UTC())
		a.saveState()
		a.setSnap(func(s *agentSnap) { s.state = agentFailed })
		a.emit(eventlog.Event{Type: eventlog.EvAgentFailed, Agent: a.def.Name, Detail: msg,
			Data: eventlog.AgentFailed{Failures: a.failures, RetryAt: f.at.UTC()}})
		return
	}
	a.log.Info("Respawning shim", "in", a.respawnIn)
	a.setSnap(func(s *agentSnap) { s.state = agentRestarting; s.restarts++ })
}

// failure is a crash loop: why, and the cool-down before the next try,
// which ends at at.
type failure struct {
	why  string
	wait time.Duration
	at   time.Time
}

// crashed counts a crash at now (crash) and sets the respawn: after the
// cool-down of failedCooldown when the crash ends a crash loop, which it
// returns (the agent is failed), else after the back-off (respawnLater),
// when it returns nil.
func (s *supervision) crashed(now time.Time, o *Supervision) *failure {
	if !s.crash(now, o.CrashWindow, o.MaxCrashes) {
		s.respawnLater(o.RespawnMax)
		return nil
	}
	why := fmt.Sprintf("%d crashes within %s", len(s.crashes), o.CrashWindow)
	if s.probation {
		why = "crashed again after its retry"
	}
	s.failures++
	wait := failedCooldown(s.failures, o.FailedRetryMin, o.FailedRetryMax)
	s.crashes, s.probation, s.failed = nil, false, true
	s.respawn = time.After(wait)
	return &failure{why: why, wait: wait, at: now.Add(wait)}
}

// errNotFailed answers a retry of an agent that is not failed.
var errNotFailed = errors.New("the agent is not failed")

// retryNow ends a failed agent's cool-down: its shim is started again at
// once. It reports whether the agent was failed. Only run's goroutine calls
// it.
func (a *agent) retryNow() bool {
	if a.wsProblem != nil && a.prepDone == nil && a.p == nil {
		// Parked by its worktree: prepare it again now.
		a.startShim()
		return true
	}
	if !a.failed {
		return false
	}
	a.respawn = time.After(0)
	return true
}

// failedCooldown is how long a failed agent waits before it is tried again
// after its n-th crash loop in a row (n ≥ 1): lo, doubled for each earlier
// one, at most hi. It is a pure function.
func failedCooldown(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// ping sends worker w (nil: none runs) a ping unless one waits for its
// pong, which is then due within timeout.
func (s *supervision) ping(w Worker, timeout time.Duration) {
	if w == nil || s.pongDue != nil {
		return
	}
	s.nonce++
	if err := w.Send(protocol.Ping{Nonce: s.nonce}); err == nil {
		s.pongDue = time.After(timeout)
	}
}

// crashedOrUnreachable handles a shim that could not start or ended
// unexpectedly: for an agent on a host that does not answer (probe), a
// respawn with the back-off that counts no crash, the agent shown as
// unreachable; the same, with a check of the host now, for a host where
// batty is not installed yet; otherwise a crash (crashed). Run's goroutine
// only; the probe runs off it (a step: on a host it is ssh), probed goes
// on.
func (a *agent) crashedOrUnreachable() {
	at, name := a.host, a.def.Name
	a.startStep(func() func() {
		up := at.probe(name)
		return func() { a.probed(up) }
	})
}

// probed goes on with crashedOrUnreachable once the host's probe has
// answered (up) or not.
func (a *agent) probed(up bool) {
	state := agentUnreachable
	switch {
	case !up:
		a.log.Info("Host unreachable, starting the shim again later", "host", a.where().Name(), "in", a.backoff)
	case !a.host.ready():
		// The host answers, but batty is not installed there yet: the
		// check of its Codex installs it (now), which no crash counts.
		a.log.Info("Batty not installed on the host yet, starting the shim again later", "host", a.where().Name(), "in", a.backoff)
		a.health.recheck()
		state = agentRestarting
	default:
		a.crashed()
		return
	}
	a.setSnap(func(s *agentSnap) { s.state = state })
	a.respawnLater(a.opts.RespawnMax)
}
