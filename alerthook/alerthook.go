// Package alerthook runs a team's on_alert command for its alerts: one at
// a time, from its own goroutine, with a bounded queue, a time limit, its
// own process group and its output kept (bounded) in the daemon's log.
package alerthook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
)

// Alert hook defaults.
const (
	DefaultQueue = 64   // alerts waiting for the hook; beyond, the oldest go
	outputLimit  = 4096 // bytes of a hook's output kept for daemon.log
)

// Hook runs the team's on_alert command for every alert, one at a
// time, from its own goroutine (Run): the daemon only queues (Event, which
// never blocks). The queue holds at most limit alerts; when it is full the
// oldest is dropped and the number dropped is logged. Each run has a time
// limit, its own process group (killed whole at the limit, then reaped),
// the project's mark in its environment, and its output (bounded) in the
// daemon's log. A hook that cannot start, fails or is killed is logged and
// never stops the daemon.
type Hook struct {
	argv    []string
	dir     string
	team    string
	timeout time.Duration
	replies bool
	env     []string // the daemon's environment with the project's mark
	log     hclog.Logger
	limit   int
	// start and release run a command as a managed child of the daemon
	// (see Daemon.startChild).
	start   func(*exec.Cmd) error
	release func(pid int)

	mu      sync.Mutex
	queue   []eventlog.Alert
	dropped int
	closed  bool
	wake    chan struct{} // buffered(1)
}

// Event queues the alert for e, if it is one; it never blocks. Safe from
// any goroutine.
func (h *Hook) Event(e eventlog.Event) {
	a, ok := eventlog.AlertFor(e)
	if !ok || (a.Kind == eventlog.AlertReply && !h.replies) {
		return
	}
	a.Team = h.team
	if a.Time.IsZero() {
		a.Time = time.Now().UTC()
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	if len(h.queue) >= h.limit {
		h.queue = h.queue[1:]
		h.dropped++
	}
	h.queue = append(h.queue, a)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest queued alert; ok is false when there is none.
func (h *Hook) next() (a eventlog.Alert, dropped int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dropped, h.dropped = h.dropped, 0
	if len(h.queue) == 0 {
		return eventlog.Alert{}, dropped, false
	}
	a = h.queue[0]
	h.queue = h.queue[1:]
	return a, dropped, true
}

// Close stops queueing: run returns once the queue is empty. Idempotent.
func (h *Hook) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Run runs the hook for each queued alert until ctx ends (a hook running
// then is killed) or, after close, the queue is empty. It blocks; the
// daemon owns it.
func (h *Hook) Run(ctx context.Context) {
	for {
		a, dropped, ok := h.next()
		if dropped > 0 {
			h.log.Warn("Alert queue full: oldest alerts dropped", "dropped", dropped, "limit", h.limit)
		}
		if ok {
			h.runOne(ctx, a)
			continue
		}
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		if closed || ctx.Err() != nil {
			return
		}
		select {
		case <-h.wake:
		case <-ctx.Done():
			return
		}
	}
}

// runOne runs the hook for one alert, killing its process group at the
// time limit or when ctx ends; it returns once the hook is reaped.
func (h *Hook) runOne(ctx context.Context, a eventlog.Alert) {
	if ctx.Err() != nil {
		return
	}
	in, err := json.Marshal(a)
	if err != nil {
		h.log.Error("Alert not encoded", "kind", a.Kind, "error", err)
		return
	}
	in = append(in, '\n')
	cmd := exec.Command(h.argv[0], h.argv[1:]...)
	cmd.Dir = h.dir
	cmd.Env = append(slices.Clone(h.env), alertEnv(a)...)
	cmd.Stdin = bytes.NewReader(in)
	out := &cappedBuffer{limit: outputLimit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child of the hook still holding its output does not hold Wait.
	cmd.WaitDelay = time.Second
	log := h.log.With("kind", a.Kind, "agent", a.Agent, "command", h.argv[0])
	if err := h.start(cmd); err != nil {
		log.Error("Alert command did not start; fix on_alert in the team file", "error", err)
		return
	}
	pid := cmd.Process.Pid
	defer h.release(pid)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	killed := ""
	select {
	case err = <-waited:
	case <-timer.C:
		killed = fmt.Sprintf("still running after timeouts.alert (%s)", h.timeout)
	case <-ctx.Done():
		killed = "still running when the daemon stopped"
	}
	if killed != "" {
		// The whole group: what the hook started goes with it.
		syscall.Kill(-pid, syscall.SIGKILL)
		<-waited // reaped; killed is the reason
		log.Error("Alert command killed", "why", killed, "output", out.String())
		return
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		log.Error("Alert command failed", "exit", ee.ExitCode(), "output", out.String())
	case err != nil:
		log.Error("Alert command failed", "error", err, "output", out.String())
	default:
		log.Debug("Alert command ran", "output", out.String())
	}
}

// alertEnv returns the variables that tell on_alert about a:
// BATTY_ALERT_KIND, BATTY_ALERT_AGENT and BATTY_ALERT_MESSAGE, the message
// as one line made safe by safetext.Line (it quotes agents' errors and
// replies: no escape sequence, CR, LF, NUL or bidirectional control reaches
// a notification or a terminal). Its stdin has the whole text, as JSON.
// Pure.
func alertEnv(a eventlog.Alert) []string {
	return []string{"BATTY_ALERT_KIND=" + a.Kind, "BATTY_ALERT_AGENT=" + safetext.Line(a.Agent, 0),
		"BATTY_ALERT_MESSAGE=" + safetext.Line(a.Message, 0)}
}

// cappedBuffer keeps the first limit bytes written to it and counts the
// rest. Safe for concurrent use.
type cappedBuffer struct {
	mu    sync.Mutex
	limit int
	b     bytes.Buffer
	extra int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - c.b.Len()
	if room >= len(p) {
		c.b.Write(p)
	} else {
		c.b.Write(p[:max(room, 0)])
		c.extra += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := string(bytes.TrimSpace(c.b.Bytes()))
	if c.extra > 0 {
		s += fmt.Sprintf(" … (%d more bytes)", c.extra)
	}
	return s
}

// Config is how a Hook runs the on_alert command.
type Config struct {
	Argv    []string      // the command and its arguments (team.yaml on_alert)
	Dir     string        // its working directory
	Team    string        // the team's name, in each alert
	Timeout time.Duration // the limit of one run (0: team.DefaultAlertTimeout)
	Replies bool          // replies to the human are alerts too (alert_on_reply)
	Env     []string      // its environment (the daemon's, with the project's mark)
	Log     hclog.Logger
	Limit   int // alerts waiting at most (0: DefaultQueue); beyond, the oldest go
	// Start and Release run a command as a managed child of the daemon.
	Start   func(*exec.Cmd) error
	Release func(pid int)
}

// New returns a Hook for c; call Run from the goroutine that owns it, Event
// from any.
func New(c Config) *Hook {
	if c.Limit <= 0 {
		c.Limit = DefaultQueue
	}
	if c.Timeout <= 0 {
		c.Timeout = team.DefaultAlertTimeout
	}
	if c.Log == nil {
		c.Log = hclog.NewNullLogger()
	}
	return &Hook{argv: c.Argv, dir: c.Dir, team: c.Team, timeout: c.Timeout, replies: c.Replies, env: c.Env, log: c.Log,
		limit: c.Limit, start: c.Start, release: c.Release, wake: make(chan struct{}, 1)}
}

// Timeout is the limit of one run of the command.
func (h *Hook) Timeout() time.Duration { return h.timeout }
