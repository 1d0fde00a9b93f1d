package shimtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
)

// Fake is an in-process stand-in for a shim whose codex is the fake codex
// of codextest (FakeMain), for fast tests of the processes that drive
// shims: it has the method set of shimclient.Client and, on the paths it stands
// for, sends the events a real shim sends, in the same order, with the
// same fields (the conformance test in this package runs one suite against
// both). Those paths are: the handshake's start (idle), turns of the
// scenarios text (the default), empty, usage:N, slow:SECONDS,
// sleepms:MS and gate:PATH, each on the thread the shim was given or a
// new one with codex's running total; Interrupt; Ping; ResetThread;
// Shutdown and Kill with the shim's queue and its stopping states; and
// the commands a shim refuses. It starts no process, writes no
// transcript and relays no outbox; its Pid is no process's.
//
// Fake owns one goroutine (its loop), which ends when it has stopped
// (Shutdown, Kill) or Kill or Close ends it; a turn's wait runs on a
// goroutine of its own that ends with the turn. All methods are safe for
// concurrent use.
type Fake struct {
	cfg    shimconfig.Config
	pid    int
	cmds   chan protocol.Message
	events chan protocol.Message
	kill   chan struct{} // closed by Kill: the loop ends at once
	quit   chan struct{} // closed by Close: unread events are dropped
	done   chan struct{} // closed when the loop has ended

	mu   sync.Mutex
	err  error // why events closed, set before it closes
	exit int

	killOnce, quitOnce, stopOnce sync.Once
}

// fakePids numbers the fakes' process ids above any a kernel gives
// (pid_max is at most 2^22), so that no signal to one reaches a process.
var fakePids atomic.Int64

// StartFake starts a Fake for o.Config as shimclient.Start would start a shim
// (o's command and handshake are not used). It never fails; its signature
// is a StartWorker's.
func StartFake(_ context.Context, o shimclient.SpawnOptions) (*Fake, error) {
	cfg := o.Config
	if cfg.QueueDepth == 0 {
		cfg.QueueDepth = shimconfig.DefaultQueueDepth
	}
	if cfg.ContextWindow == 0 {
		cfg.ContextWindow = shimconfig.DefaultContextWindow
	}
	if cfg.PressurePct == 0 {
		cfg.PressurePct = shimconfig.DefaultPressurePct
	}
	f := &Fake{
		cfg: cfg, pid: 1<<30 + int(fakePids.Add(1)),
		cmds: make(chan protocol.Message), events: make(chan protocol.Message, 64),
		kill: make(chan struct{}), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go f.loop()
	return f, nil
}

// Send hands one command to the loop; it fails with protocol.ErrClosed
// once the fake has exited.
func (f *Fake) Send(m protocol.Message) error {
	select {
	case f.cmds <- m:
		return nil
	case <-f.done:
		return fmt.Errorf("fake shim %d: send %s: %w", f.pid, m.Kind(), protocol.ErrClosed)
	}
}

// Events delivers the events in order; closed after the last one.
func (f *Fake) Events() <-chan protocol.Message { return f.events }

// Err is io.EOF once Events closed (as for a shim that closed its
// channel), nil before.
func (f *Fake) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Pid is the fake's process id, no real process's.
func (f *Fake) Pid() int { return f.pid }

// Done is closed once the fake has exited.
func (f *Fake) Done() <-chan struct{} { return f.done }

// ExitCode blocks until the fake has exited: 0 after a stop, -1 after
// Kill (as a shim killed by SIGKILL).
func (f *Fake) ExitCode() int {
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exit
}

// Wait blocks until the fake has exited; nil for status 0.
func (f *Fake) Wait() error {
	if c := f.ExitCode(); c != 0 {
		return fmt.Errorf("fake shim %d: exit status %d", f.pid, c)
	}
	return nil
}

// BeginStop sends Shutdown with grace and reason, and kills the fake when
// it has not exited shimclient.StopKillAfter past grace, as shimclient.Client does.
// Idempotent.
func (f *Fake) BeginStop(grace time.Duration, reason string) {
	f.stopOnce.Do(func() {
		if f.Send(protocol.Shutdown{Timeout: grace, Reason: reason}) != nil {
			return
		}
		go func() {
			t := time.NewTimer(max(grace, 0) + shimclient.StopKillAfter)
			defer t.Stop()
			select {
			case <-f.done:
			case <-t.C:
				f.Kill()
			}
		}()
	})
}

// Kill ends the fake at once, as SIGKILL ends a shim: no more events, a
// turn in flight gets no TurnFinished. It waits until the loop has ended.
// Idempotent.
func (f *Fake) Kill() {
	f.killOnce.Do(func() { close(f.kill) })
	<-f.done
}

// Close kills the fake, drops unread events and waits until the loop has
// ended. Idempotent.
func (f *Fake) Close() {
	f.quitOnce.Do(func() { close(f.quit) })
	f.Kill()
}

// fakeTurn is the turn in flight.
type fakeTurn struct {
	msg      protocol.SendMessage
	threadID string // resumed thread, "" for a new one
	started  time.Time
	stop     chan struct{} // closed to interrupt the turn
	stopped  bool
}

// fakeResult is how a turn's wait ended: its reply and token counts, or
// interrupted.
type fakeResult struct {
	t           *fakeTurn
	interrupted bool
	reply       string
	in, out     int64
}

// loop is the shim's loop (shim's server.serve) over the fake's state.
func (f *Fake) loop() {
	exit := 0
	defer func() {
		f.mu.Lock()
		f.err, f.exit = io.EOF, exit
		f.mu.Unlock()
		close(f.events)
		close(f.done)
	}()
	var (
		state     = protocol.StateStarting
		queue     []protocol.SendMessage
		known     = map[string]bool{}
		cur       *fakeTurn
		threadID  = f.cfg.ThreadID
		threadUse = protocol.Usage{Input: f.cfg.ThreadUsage.InputTokens, CachedInput: f.cfg.ThreadUsage.CachedInputTokens,
			Output: f.cfg.ThreadUsage.OutputTokens, ReasoningOutput: f.cfg.ThreadUsage.ReasoningOutputTokens}
		stopping  bool
		resetNext string
		shutdown  <-chan time.Time
		results   = make(chan fakeResult)
		turns     sync.WaitGroup
	)
	// A turn's wait ends with the turn, before the loop returns.
	defer turns.Wait()
	killed := false
	emit := func(m protocol.Message) {
		if killed {
			return
		}
		select {
		case f.events <- m:
		case <-f.quit:
		case <-f.kill:
			killed = true
		}
	}
	setState := func(to protocol.State, reason string) {
		if state == to {
			return
		}
		emit(protocol.StateChanged{From: state, To: to, Reason: reason})
		state = to
	}
	stopTurn := func() {
		if cur != nil && !cur.stopped {
			cur.stopped = true
			close(cur.stop)
		}
	}
	resetThread := func(reason string) {
		prev := threadID
		threadID, threadUse = "", protocol.Usage{}
		emit(protocol.ThreadChanged{Previous: prev, Reason: protocol.ThreadReset, Detail: reason})
	}
	startTurn := func(m protocol.SendMessage) {
		cur = &fakeTurn{msg: m, threadID: threadID, started: time.Now(), stop: make(chan struct{})}
		setState(protocol.StateWorking, "message "+m.ID)
		emit(protocol.TurnStarted{MessageID: m.ID, ThreadID: threadID, Resume: threadID != "", PID: f.pid})
		if threadID == "" {
			threadID, threadUse = newThreadID(), protocol.Usage{}
			emit(protocol.ThreadChanged{ThreadID: threadID, Reason: protocol.ThreadStarted})
		}
		t := cur
		turns.Add(1)
		go func() {
			defer turns.Done()
			r := play(t)
			select {
			case results <- r:
			case <-f.kill:
			}
		}()
	}
	abandonQueue := func() {
		for _, m := range queue {
			delete(known, m.ID)
			emit(protocol.TurnFinished{MessageID: m.ID, ThreadID: threadID, Status: protocol.TurnInterrupted,
				Error: "shim stopped before the turn started", ContextPct: -1, ExitCode: -1})
		}
		queue = nil
	}
	beginStop := func(reason string) bool {
		if stopping {
			return false
		}
		stopping = true
		setState(protocol.StateStopping, reason)
		abandonQueue()
		return true
	}
	finish := func(r fakeResult) {
		t := r.t
		cur = nil
		e := protocol.TurnFinished{MessageID: t.msg.ID, ThreadID: threadID, Duration: time.Since(t.started)}
		var turnUse protocol.Usage
		if r.interrupted {
			e.Status, e.Error, e.ExitCode = protocol.TurnInterrupted, "turn interrupted", 1
		} else {
			turnUse = protocol.Usage{Input: r.in, Output: r.out}
			threadUse.Input += r.in
			threadUse.Output += r.out
			// As the shim's client gives it: the reply whole, its size.
			e.Status, e.Reply, e.ReplySize = protocol.TurnCompleted, r.reply, int64(len(r.reply))
			if r.reply != "" {
				e.Items = 1
			}
		}
		// The shim's estimate of the context used (no record of codex's
		// own to read).
		used, pct := int64(0), float64(-1)
		if turnUse.Input > 0 {
			used = turnUse.Input + turnUse.Output
			pct = float64(used) * 100 / float64(f.cfg.ContextWindow)
		}
		e.Usage, e.Thread, e.ContextPct = turnUse, threadUse, pct
		delete(known, t.msg.ID)
		emit(e)
		if pct >= f.cfg.PressurePct {
			emit(protocol.ContextPressure{ThreadID: threadID, UsedTokens: used, WindowTokens: f.cfg.ContextWindow, Pct: pct})
		}
		if resetNext != "" {
			resetThread(resetNext)
			resetNext = ""
		}
		if stopping {
			abandonQueue()
			return
		}
		if len(queue) == 0 {
			setState(protocol.StateIdle, "queue empty")
			return
		}
		m := queue[0]
		queue = queue[1:]
		startTurn(m)
	}
	accept := func(m protocol.SendMessage) {
		reject := func(r protocol.RejectReason, detail string) {
			emit(protocol.Rejected{ID: m.ID, Reason: r, Detail: detail})
		}
		switch {
		case m.ID == "":
			reject(protocol.RejectInvalid, "message has no id")
		case m.Body == "":
			reject(protocol.RejectInvalid, "message body is empty")
		case stopping:
			reject(protocol.RejectTerminal, "shim is "+string(state))
		case known[m.ID]:
			reject(protocol.RejectDuplicate, "a message with this id is already queued or in flight")
		case len(queue) >= f.cfg.QueueDepth:
			reject(protocol.RejectQueueFull, fmt.Sprintf("queue full (%d waiting)", len(queue)))
		default:
			known[m.ID] = true
			if cur == nil && len(queue) == 0 {
				emit(protocol.Accepted{ID: m.ID})
				startTurn(m)
				return
			}
			queue = append(queue, m)
			emit(protocol.Accepted{ID: m.ID, QueueDepth: len(queue)})
		}
	}

	setState(protocol.StateIdle, "ready")
	for !killed {
		if stopping && cur == nil {
			setState(protocol.StateStopped, "shutdown complete")
			return
		}
		select {
		case <-f.kill:
			killed, exit = true, -1
			stopTurn()
			return
		case r := <-results:
			finish(r)
		case <-shutdown:
			shutdown = nil
			stopTurn()
		case m := <-f.cmds:
			switch c := m.(type) {
			case protocol.SendMessage:
				accept(c)
			case protocol.Interrupt:
				if cur == nil {
					emit(protocol.Error{Command: protocol.KindInterrupt, Message: "no turn in flight"})
					continue
				}
				stopTurn()
			case protocol.Ping:
				emit(protocol.Pong{Nonce: c.Nonce})
			case protocol.ResetThread:
				reason := c.Reason
				if reason == "" {
					reason = "requested"
				}
				if cur != nil {
					resetNext = reason
					continue
				}
				resetThread(reason)
			case protocol.SwitchThread:
				// A restore while idle resumes the thread; anything else
				// (a fork, a turn in flight) is a reset, as the fake keeps
				// no history to fork.
				if c.ThreadID != "" && !c.Fork && cur == nil {
					prev := threadID
					threadID, threadUse = c.ThreadID, c.Usage
					emit(protocol.ThreadChanged{ThreadID: threadID, Previous: prev, Reason: protocol.ThreadRestored, Detail: c.Reason})
					continue
				}
				if cur != nil {
					resetNext = cmp.Or(c.Reason, "requested")
					continue
				}
				resetThread(cmp.Or(c.Reason, "requested"))
			case protocol.Shutdown:
				if beginStop("shutdown: "+c.Reason) && cur != nil {
					if c.Timeout <= 0 {
						stopTurn()
						continue
					}
					shutdown = time.After(c.Timeout)
				}
			case protocol.Kill:
				beginStop("killed")
				stopTurn()
			case protocol.OutgoingAck, protocol.RecallAnswer:
				emit(protocol.Error{Command: c.Kind(), Message: "this shim relays no inboxes"})
			case protocol.Welcome:
				emit(protocol.Error{Command: c.Kind(), Message: "unexpected welcome after the handshake"})
			default:
				emit(protocol.Error{Command: m.Kind(), Message: fmt.Sprintf("%s is not a command", m.Kind())})
			}
		}
	}
	// An emit saw Kill.
	exit = -1
	stopTurn()
}

// scenarioRE finds the scenario of a body as the fake codex does.
var scenarioRE = regexp.MustCompile(`scenario:([a-z-]+)(?::([0-9a-zA-Z._/=-]+))?`)

// play acts out t's scenario as the fake codex does: it waits as the
// scenario says (ended early by an interrupt) and returns the reply and
// the tokens the turn used. It panics on a scenario the fake does not
// stand for, so a test cannot rely on one by mistake.
func play(t *fakeTurn) fakeResult {
	scenario, arg := "text", ""
	if m := scenarioRE.FindStringSubmatch(t.msg.Body); m != nil {
		scenario, arg = m[1], m[2]
	}
	wait := func(d time.Duration) bool {
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-t.stop:
			return false
		case <-tm.C:
			return true
		}
	}
	done := func(reply string, in, out int64) fakeResult {
		return fakeResult{t: t, reply: reply, in: in, out: out}
	}
	cut := fakeResult{t: t, interrupted: true}
	switch scenario {
	case "text":
		first := strings.SplitN(strings.TrimSpace(t.msg.Body), "\n", 2)[0]
		return done("ECHO:"+first, 1000, 10)
	case "empty":
		return done("", 1000, 10)
	case "usage":
		n, _ := strconv.ParseInt(arg, 10, 64)
		return done("used "+arg, n, 100)
	case "slow":
		secs, _ := strconv.Atoi(arg)
		if !wait(time.Duration(secs) * time.Second) {
			return cut
		}
		return done("SLOW_DONE", 1000, 10)
	case "sleepms":
		ms, _ := strconv.Atoi(arg)
		if !wait(time.Duration(ms) * time.Millisecond) {
			return cut
		}
		return done("SLEPT", 1000, 10)
	case "gate":
		for {
			if _, err := os.Stat(arg); err == nil {
				return done("GATE:"+arg, 1000, 10)
			}
			if !wait(10 * time.Millisecond) {
				return cut
			}
		}
	}
	panic(fmt.Sprintf("shimtest.Fake: scenario %q is not one it stands for", scenario))
}

// newThreadID is a new thread id, shaped as codex's.
func newThreadID() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
