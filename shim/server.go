package shim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/ptylog"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/textclip"
)

// server is one shim: the loop goroutine owns every field below "loop
// state"; turns and the command reader talk to it over channels.
type server struct {
	cfg      shimconfig.Config
	conn     *protocol.Conn
	log      hclog.Logger
	tlog     *ptylog.Writer
	relay    *relay // nil unless shimconfig.Config.RelayInboxes
	bin      codex.Binary
	binErr   error // why the codex binary was not usable; the next turn looks again (bin, binErr, env: the turn in flight's)
	execOpts codex.ExecOptions
	env      []string
	batty    string // the batty binary the agent runs (battyBinary, resolved at start)
	reaper   *reap.Reaper
	rt       turnRuntime // runs the turns (shimconfig.Config.Runtime)

	turnDone  chan turnResult
	progress  chan threadSeen
	storeDone chan storeResult // a chore's end (startChore)

	// loop state
	state     protocol.State
	queue     []protocol.SendMessage
	known     map[string]bool // ids queued or in flight
	cur       *turn
	threadID  string
	threadUse codex.Usage // last thread-cumulative usage codex reported
	stopping  bool
	resetNext string // reason of a ResetThread waiting for the turn in flight
	// switchNext is a SwitchThread waiting for the turn in flight.
	switchNext *protocol.SwitchThread
	// forkFrom is the thread the next turn forks (threadID is then ""),
	// until the fork's thread gets its id.
	forkFrom string
	// toArchive are threads left that wait to be archived in Codex's
	// store; chore says one is being archived (no turn starts meanwhile).
	toArchive []string
	chore     bool
}

// command is what the reader goroutine hands the loop: a message or the end
// of the channel.
type command struct {
	msg protocol.Message
	err error
}

// serve runs the loop until the shim is stopped, killed, or the orchestrator
// goes away. Every accepted message gets its TurnFinished before it returns
// (when the channel still works), and no codex process is left running.
func (s *server) serve(ctx context.Context) error {
	cmds := make(chan command)
	readerDone := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			m, err := s.conn.Recv()
			select {
			case cmds <- command{msg: m, err: err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(quit)
		s.conn.Close()
		<-readerDone
	}()

	// Starting touched much of the binary that serving never runs (every
	// package's initialisation): handed back before the shim says it is
	// ready, not only after an idle spell, which a busy shim (a fan-out's)
	// never has.
	if err := releaseIdleMemory(false); err != nil {
		s.log.Debug("Start-up memory not released", "error", err)
	}
	s.setState(protocol.StateIdle, "ready")
	var shutdownTimer <-chan time.Time
	// trim fires once the shim has been idle for idleTrimDelay, then every
	// idleRetrim while it stays idle; a turn disarms it. turned: a turn
	// ran since the last trim.
	var trim *time.Timer
	turned := false
	defer func() {
		if trim != nil {
			trim.Stop()
		}
	}()
	for {
		if s.stopping && s.cur == nil && !s.chore {
			s.setState(protocol.StateStopped, "shutdown complete")
			return nil
		}
		switch {
		case s.cur != nil:
			turned = true
			if trim != nil {
				trim.Stop()
				trim = nil
			}
		case s.cur == nil && trim == nil:
			trim = time.NewTimer(idleTrimDelay)
		}
		var trimC <-chan time.Time
		if trim != nil {
			trimC = trim.C
		}
		select {
		case <-trimC:
			if err := releaseIdleMemory(turned); err != nil {
				s.log.Debug("Idle memory not released", "error", err)
			}
			turned = false
			trim.Reset(idleRetrim)
		case c := <-cmds:
			if c.err != nil {
				if errors.Is(c.err, io.EOF) || errors.Is(c.err, protocol.ErrClosed) {
					s.log.Info("Orchestrator closed the channel, stopping")
				} else {
					s.log.Error("Control channel failed, stopping", "error", c.err)
				}
				s.beginStop("orchestrator gone")
				s.stopTurn()
				cmds = nil
				continue
			}
			if t := s.handleCommand(c.msg); t != nil {
				shutdownTimer = t
			}
		case p := <-s.progress:
			s.threadStarted(p)
		case r := <-s.turnDone:
			s.finishTurn(r)
		case r := <-s.storeDone:
			s.storeFinished(r)
		case <-shutdownTimer:
			shutdownTimer = nil
			if s.cur != nil {
				s.log.Info("Shutdown timeout reached, interrupting the turn", "message", s.cur.msg.ID)
				s.stopTurn()
			}
		case <-ctx.Done():
			s.beginStop("shim signalled")
			s.stopTurn()
			ctx = context.Background()
		}
	}
}

// handleCommand carries out one command. It returns a timer channel when the
// command starts a shutdown with a timeout.
func (s *server) handleCommand(m protocol.Message) <-chan time.Time {
	switch c := m.(type) {
	case protocol.SendMessage:
		s.accept(c)
	case protocol.Interrupt:
		if s.cur == nil {
			s.emit(protocol.Error{Command: protocol.KindInterrupt, Message: "no turn in flight"})
			return nil
		}
		s.stopTurn()
	case protocol.Ping:
		s.emit(protocol.Pong{Nonce: c.Nonce})
	case protocol.ResetThread:
		reason := c.Reason
		if reason == "" {
			reason = "requested"
		}
		if s.cur != nil {
			s.resetNext, s.switchNext = reason, nil
			return nil
		}
		s.resetThread(reason)
	case protocol.SwitchThread:
		if s.cur != nil {
			s.resetNext, s.switchNext = "", &c
			return nil
		}
		s.switchThread(c)
	case protocol.Shutdown:
		s.log.Info("Shutdown requested", "timeout", c.Timeout, "reason", c.Reason)
		if s.beginStop("shutdown: "+c.Reason) && s.cur != nil {
			if c.Timeout <= 0 {
				s.stopTurn()
				return nil
			}
			return time.After(c.Timeout)
		}
	case protocol.Kill:
		s.log.Info("Kill requested")
		s.beginStop("killed")
		s.stopTurn()
	case protocol.OutgoingAck:
		if s.relay == nil {
			s.emit(protocol.Error{Command: c.Kind(), Message: "this shim relays no inboxes"})
			return nil
		}
		s.relay.acked(c)
	case protocol.RecallAnswer:
		if s.relay == nil {
			s.emit(protocol.Error{Command: c.Kind(), Message: "this shim relays no inboxes"})
			return nil
		}
		if err := s.relay.answer(c); err != nil {
			s.log.Warn("A recall's answer not written", "error", err)
			s.emit(protocol.Error{Command: c.Kind(), Message: err.Error()})
		}
	case protocol.Welcome:
		s.emit(protocol.Error{Command: c.Kind(), Message: "unexpected welcome after the handshake"})
	default:
		s.emit(protocol.Error{Command: m.Kind(), Message: fmt.Sprintf("%s is not a command", m.Kind())})
	}
	return nil
}

// accept queues a message or rejects it; it never drops one silently.
func (s *server) accept(m protocol.SendMessage) {
	reject := func(r protocol.RejectReason, detail string) {
		s.log.Warn("Message rejected", "message", m.ID, "reason", r, "detail", detail)
		s.emit(protocol.Rejected{ID: m.ID, Reason: r, Detail: detail})
	}
	switch {
	case m.ID == "":
		reject(protocol.RejectInvalid, "message has no id")
	case m.Body == "":
		reject(protocol.RejectInvalid, "message body is empty")
	case s.stopping:
		reject(protocol.RejectTerminal, "shim is "+string(s.state))
	case s.known[m.ID]:
		reject(protocol.RejectDuplicate, "a message with this id is already queued or in flight")
	case len(s.queue) >= s.cfg.QueueDepth:
		reject(protocol.RejectQueueFull, fmt.Sprintf("queue full (%d waiting)", len(s.queue)))
	default:
		s.known[m.ID] = true
		if s.cur == nil && !s.chore && len(s.queue) == 0 {
			s.emit(protocol.Accepted{ID: m.ID, QueueDepth: 0})
			s.startTurn(m, false)
			return
		}
		s.queue = append(s.queue, m)
		s.emit(protocol.Accepted{ID: m.ID, QueueDepth: len(s.queue)})
	}
}

// startNext starts the head of the queue, or goes idle when it is empty.
func (s *server) startNext() {
	if len(s.queue) == 0 || s.chore {
		s.setState(protocol.StateIdle, "queue empty")
		return
	}
	m := s.queue[0]
	s.queue = s.queue[1:]
	s.startTurn(m, false)
}

func (s *server) startTurn(m protocol.SendMessage, retried bool) {
	fork := ""
	if s.threadID == "" {
		fork = s.forkFrom
	}
	s.cur = &turn{msg: m, threadID: s.threadID, fork: fork, retried: retried, started: time.Now(), stopCh: make(chan stopReason, 1)}
	s.setState(protocol.StateWorking, "message "+m.ID)
	s.tlog.TurnHeader(ptylog.TurnHeader{From: m.From, MessageID: inbox.ShortID(m.ID), ThreadID: s.threadID, Resume: s.threadID != "", Attempt: m.Attempt, Time: s.cur.started, Preview: messagePreview(m.Body)})
	if m.RetryNote != "" {
		s.tlog.Notice(oneLine(m.RetryNote))
	}
	go s.runTurn(s.cur)
}

// threadStarted records the thread codex named for the turn in flight.
func (s *server) threadStarted(p threadSeen) {
	defer close(p.ack)
	if p.id == "" || p.id == s.threadID {
		return
	}
	if !plausibleThreadID(p.id) {
		// Ids travel in every event and in the recorded outcome: one that
		// cannot be a thread id is not adopted (the next turn starts fresh).
		s.warn(p.t.msg.ID, fmt.Sprintf("codex named a thread id that cannot be one (%d bytes: %q); ignored", len(p.id), textclip.Bytes(p.id, 64, textclip.Truncated)))
		return
	}
	prev := s.threadID
	reason := protocol.ThreadStarted
	detail := ""
	if p.t.fork != "" {
		reason, detail = protocol.ThreadForked, "forked from thread "+p.t.fork
		s.forkFrom = ""
	}
	if p.t.threadID != "" && p.id != p.t.threadID {
		reason = protocol.ThreadResumeChanged
		detail = fmt.Sprintf("codex answered resume %s with thread %s", p.t.threadID, p.id)
		s.warn(p.t.msg.ID, detail)
	}
	s.threadID = p.id
	s.threadUse = codex.Usage{}
	s.tlog.Notice(fmt.Sprintf("thread %s (%s)", p.id, reason))
	s.emit(protocol.ThreadChanged{ThreadID: p.id, Previous: prev, Reason: reason, Detail: detail})
}

// resetThread forgets the current thread so the next turn starts fresh.
func (s *server) resetThread(reason string) {
	prev := s.threadID
	s.threadID, s.forkFrom = "", ""
	s.threadUse = codex.Usage{}
	s.tlog.Notice("thread reset: " + reason)
	s.emit(protocol.ThreadChanged{Previous: prev, Reason: protocol.ThreadReset, Detail: reason})
}

// finishTurn turns a turn's result into its events: the blocking condition
// (quota, auth, context) first, then TurnFinished, then stats.
func (s *server) finishTurn(r turnResult) {
	t := r.turn
	s.cur = nil
	status, kind, errMsg := outcome(r)

	// A resume codex cannot find is retried once on a fresh thread.
	if kind == protocol.FailResume && t.threadID != "" && !t.retried && !s.stopping && r.stop == stopNone &&
		codex.ClassifyStderr(r.stderrTail) == codex.FailureResumeMissing {
		s.warn(t.msg.ID, "resume failed, retrying on a fresh thread: "+errMsg)
		s.threadID = ""
		s.threadUse = codex.Usage{}
		s.emit(protocol.ThreadChanged{Previous: t.threadID, Reason: protocol.ThreadResumeFailed, Detail: errMsg})
		s.startTurn(t.msg, true)
		return
	}

	var turnUse protocol.Usage
	if r.completed {
		d, restarted := r.usage.Delta(s.threadUse)
		if restarted {
			s.log.Info("Codex restarted the thread's running total; counting the new total as this turn's usage",
				"message", t.msg.ID, "previous_input", s.threadUse.InputTokens, "input", r.usage.InputTokens)
		}
		s.threadUse = r.usage
		turnUse = protocol.Usage{Input: d.InputTokens, CachedInput: d.CachedInputTokens, Output: d.OutputTokens, ReasoningOutput: d.ReasoningOutputTokens}
	}
	if kind == protocol.FailContextWindow {
		// exec: codex marks the thread's window as full and restarts its
		// running total from zero; the next resume compacts the history
		// first and reports what it used from there (r.usage is zero).
		// app-server: r.usage is the thread's total after the failure and
		// the compaction, which the next turn's total goes on from.
		s.threadUse = r.usage
	}
	used, pct := contextUse(turnUse, r.requests, s.cfg.ContextWindow)
	if kind != protocol.FailContextWindow && s.threadID != "" {
		// The true size of the last request, where Codex recorded it.
		if u, err := codex.LastRequest(codex.Home(s.env, s.cfg.Cwd), s.threadID); err == nil {
			used, pct = lastRequestUse(u, s.cfg.ContextWindow)
		} else {
			s.log.Debug("Context use estimated", "reason", err)
		}
	}
	threadUse := protocol.Usage{Input: s.threadUse.InputTokens, CachedInput: s.threadUse.CachedInputTokens, Output: s.threadUse.OutputTokens, ReasoningOutput: s.threadUse.ReasoningOutputTokens}

	switch kind {
	case protocol.FailQuota:
		// In the zone codex printed it in: the TZ of its environment.
		at, _ := codex.ResetBy(errMsg, time.Now(), codex.Zone(s.env, time.Local))
		if at.IsZero() {
			// The message names no time; the runtime's last rate-limit
			// snapshot may (app-server).
			at = r.limitReset
		}
		s.emit(protocol.QuotaBlocked{MessageID: t.msg.ID, Message: errMsg, RetryAt: at})
	case protocol.FailAuth:
		s.emit(protocol.AuthRequired{MessageID: t.msg.ID, Message: errMsg})
	case protocol.FailContextWindow:
		s.emit(protocol.ContextExhausted{MessageID: t.msg.ID, ThreadID: s.threadID, Message: errMsg})
	}
	// Every error shows once: the turn's own error in its end line, the
	// others (and a stderr line the error does not quote) before it.
	for _, e := range r.errors {
		if e != errMsg {
			s.tlog.Error(e)
		}
	}
	if status != protocol.TurnCompleted {
		if kind == protocol.FailExit || kind == protocol.FailSpawn {
			if tail := lastMeaningfulLine(r.stderrTail); tail != "" && !strings.Contains(errMsg, tail) {
				s.tlog.Warning("codex stderr: " + tail)
			}
		}
	}
	s.tlog.Usage(ptylog.UsageLine{TurnInput: turnUse.Input, TurnCachedInput: turnUse.CachedInput, TurnOutput: turnUse.Output,
		TurnReasoning: turnUse.ReasoningOutput, TotalInput: threadUse.Input, TotalOutput: threadUse.Output, ContextPct: pct, Duration: r.duration})
	s.tlog.TurnEnd(string(status), errMsg)
	delete(s.known, t.msg.ID)
	s.emit(protocol.TurnFinished{
		MessageID: t.msg.ID, ThreadID: s.threadID, Status: status, Failure: kind, Error: errMsg,
		Transient: transientKind(kind, errMsg), ReplySize: r.replySize, Usage: turnUse, Thread: threadUse, ContextPct: pct, ExitCode: r.exitCode, Duration: r.duration,
		Items: r.items, Commands: r.commands,
	})
	s.log.Info("Turn finished", "message", t.msg.ID, "status", status, "failure", kind, "duration", r.duration,
		"input_tokens", turnUse.Input, "output_tokens", turnUse.Output)
	if pct >= s.cfg.PressurePct {
		s.emit(protocol.ContextPressure{ThreadID: s.threadID, UsedTokens: used, WindowTokens: s.cfg.ContextWindow, Pct: pct})
	}

	if s.resetNext != "" {
		s.resetThread(s.resetNext)
		s.resetNext = ""
	}
	if c := s.switchNext; c != nil {
		s.switchNext = nil
		s.switchThread(*c)
	}
	if s.stopping {
		s.abandonQueue()
		return
	}
	s.startNext()
}

// beginStop moves to stopping; queued messages end as interrupted. It
// reports whether this call started the stop.
func (s *server) beginStop(reason string) bool {
	if s.stopping {
		return false
	}
	s.stopping = true
	s.setState(protocol.StateStopping, reason)
	s.tlog.Notice("stopping: " + reason)
	s.abandonQueue()
	return true
}

// stopTurn interrupts the turn in flight, if any.
func (s *server) stopTurn() {
	if s.cur != nil {
		s.cur.requestStop(stopInterrupt)
	}
}

// abandonQueue finishes every queued (never started) message as interrupted.
func (s *server) abandonQueue() {
	for _, m := range s.queue {
		delete(s.known, m.ID)
		s.emit(protocol.TurnFinished{MessageID: m.ID, ThreadID: s.threadID, Status: protocol.TurnInterrupted,
			Error: "shim stopped before the turn started", ContextPct: -1, ExitCode: -1})
	}
	s.queue = nil
}

func (s *server) setState(to protocol.State, reason string) {
	if s.state == to {
		return
	}
	from := s.state
	s.state = to
	s.log.Debug("State changed", "from", from, "to", to, "reason", reason)
	s.emit(protocol.StateChanged{From: from, To: to, Reason: reason})
}

// emit sends an event, its worker-printed text bounded (protocol.Bound) so
// that no output of codex can make it too large for a frame. A failed send
// is logged: the command reader sees the broken channel and stops the shim.
func (s *server) emit(m protocol.Message) {
	if err := s.conn.Send(protocol.Bound(m)); err != nil {
		if errors.Is(err, protocol.ErrClosed) {
			s.log.Debug("Event not sent", "event", m.Kind(), "error", err)
		} else {
			s.log.Error("Event not sent", "event", m.Kind(), "error", err)
		}
	}
}

// warn sends a Warning and writes it to the transcript.
func (s *server) warn(msgID, text string) {
	text = textclip.Bytes(text, protocol.MaxText, textclip.Truncated)
	s.tlog.Warning(text)
	s.emit(protocol.Warning{MessageID: msgID, Message: text})
}

// maxThreadID bounds a thread id (codex's are 36-byte UUIDs).
const maxThreadID = 128

// plausibleThreadID reports whether id can be a codex thread id: 1 to
// maxThreadID bytes of letters, digits, '-', '_', '.' and ':'. It is a pure
// function.
func plausibleThreadID(id string) bool {
	if id == "" || len(id) > maxThreadID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}
