// Package alerthook runs a team's on_alert command for its alerts: one at
// a time, from its own goroutine, with a bounded queue, a time limit, its
// own process group and its output kept (bounded) in the daemon's log. It
// is one alerts.Sink of the daemon's.
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

	"github.com/battyhq/batty/alerts"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
)

// Alert hook defaults.
const (
	DefaultQueue = alerts.DefaultLimit // alerts waiting for the hook; beyond, the oldest go
	outputLimit  = 4096                // bytes of a hook's output kept for daemon.log
)

// Hook is the alerts.Sink that runs the team's on_alert command for every
// alert, one at a time, from its own goroutine (an alerts.Queue held until
// Start): the daemon only queues (Alert, which never blocks). The queue
// holds at most limit alerts; when it is full the oldest is dropped and
// the number dropped is logged. Each run has a time limit, its own process
// group (killed whole at the limit or when Close's context ends, then
// reaped), the project's mark in its environment, and its output (bounded)
// in the daemon's log. A hook that cannot start, fails or is killed is
// logged and never stops the daemon.
type Hook struct {
	*alerts.Queue
	argv    []string
	dir     string
	timeout time.Duration
	env     []string // the daemon's environment with the project's mark
	log     hclog.Logger
	// start and release run a command as a managed child of the daemon
	// (see Daemon.startChild).
	start   func(*exec.Cmd) error
	release func(pid int)
}

// deliver runs the hook for each alert of batch in turn.
func (h *Hook) deliver(ctx context.Context, batch []eventlog.Alert) {
	for _, a := range batch {
		h.runOne(ctx, a)
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
	Timeout time.Duration // the limit of one run (0: team.DefaultAlertTimeout)
	Replies bool          // replies to the human are alerts too (alert_on_reply)
	Env     []string      // its environment (the daemon's, with the project's mark)
	Log     hclog.Logger
	Limit   int // alerts waiting at most (0: DefaultQueue); beyond, the oldest go
	// Start and Release run a command as a managed child of the daemon.
	Start   func(*exec.Cmd) error
	Release func(pid int)
}

// New returns a Hook for c, held: it queues alerts at once and runs the
// command for them from Start on (once the daemon reaps its children).
func New(c Config) *Hook {
	if c.Timeout <= 0 {
		c.Timeout = team.DefaultAlertTimeout
	}
	if c.Log == nil {
		c.Log = hclog.NewNullLogger()
	}
	h := &Hook{argv: c.Argv, dir: c.Dir, timeout: c.Timeout, env: c.Env, log: c.Log, start: c.Start, release: c.Release}
	h.Queue = alerts.NewHeldQueue(alerts.QueueConfig{Name: "on_alert", Limit: c.Limit, Log: c.Log, Deliver: h.deliver,
		Keep: func(a eventlog.Alert) bool { return a.Kind != eventlog.AlertReply || c.Replies }})
	return h
}

// Timeout is the limit of one run of the command.
func (h *Hook) Timeout() time.Duration { return h.timeout }
