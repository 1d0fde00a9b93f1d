package shim

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/ptylog"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/textclip"
)

// stopReason says why the shim ended a turn itself.
type stopReason int

const (
	stopNone      stopReason = iota
	stopInterrupt            // Interrupt, Shutdown timeout, Kill, orchestrator gone
	stopTimeout              // turn or idle timeout
	stopNetwork              // waited for the network longer than allowed
)

// stderrKeep is how much of codex's stderr a turn keeps for diagnosis.
const stderrKeep = 16 << 10

// stdoutDrainGrace bounds how long stdout may stay open after codex exits
// (a leftover descendant holding the pipe).
const stdoutDrainGrace = 2 * time.Second

// turn is one codex process running one message. The loop goroutine creates
// it; run owns the process and reports exactly one turnResult.
type turn struct {
	msg      protocol.SendMessage
	threadID string // resumed thread, "" for a fresh one
	fork     string // with threadID "": the thread this turn forks into a new one ("" none)
	retried  bool   // already retried on a fresh thread after resume failed
	started  time.Time
	stopCh   chan stopReason // buffered(1); the first stop request wins
	pid      int
}

// requestStop asks the turn to stop; later requests are ignored.
func (t *turn) requestStop(r stopReason) {
	select {
	case t.stopCh <- r:
	default:
	}
}

// turnResult is everything a finished turn tells the loop.
type turnResult struct {
	turn       *turn
	spawnErr   error
	stop       stopReason
	stopDetail string
	threadID   string // from thread.started
	completed  bool
	usage      codex.Usage          // thread-cumulative, from turn.completed
	failedMsg  string               // turn.failed message
	failKind   protocol.FailureKind // the failure's class from a typed error code (FailNone: classify failedMsg)
	limitReset time.Time            // a usage limit's reset from the last rate-limit snapshot (zero: unknown)
	errors     []string             // codex error events other than retry notices, in order
	reply      string               // the turn's last agent message ("" once streamed: see streamReply)
	replySize  int64                // the reply's size in bytes, set by streamReply
	requests   int                  // model requests of the turn beyond the first (see contextUse)
	items      int                  // items completed: commands, patches, messages, searches
	commands   []protocol.Command   // the shell commands the turn ran (see ranCommand)
	exitCode   int                  // -1: killed by a signal or never ran
	killed     bool                 // codex died of a signal the shim did not send (FailKilled)
	stderrTail string
	duration   time.Duration
}

// ranCommand records a command the turn ran, with its output and exit
// code (nil: it did not end), for its TurnFinished: the last
// protocol.MaxCommands of them, each bounded (protocol.BoundCommands).
func (r *turnResult) ranCommand(command, output string, exitCode *int) {
	code := -1
	if exitCode != nil {
		code = *exitCode
	}
	c := protocol.BoundCommands([]protocol.Command{{Command: command, Output: output, ExitCode: code}})[0]
	if len(r.commands) == protocol.MaxCommands {
		r.commands = append(r.commands[:0:0], r.commands[1:]...)
	}
	r.commands = append(r.commands, c)
}

// threadSeen is sent to the loop as soon as codex names the thread. The
// loop closes ack once it has announced the thread, so the turn's later
// events (warnings) never overtake that announcement.
type threadSeen struct {
	t   *turn
	id  string
	ack chan struct{}
}

// runTurn runs t to the end on the shim's runtime (s.rt) and sends its
// result on s.turnDone. It never returns before codex and everything the
// turn left behind is gone, however the turn ended.
func (s *server) runTurn(t *turn) {
	rearchive := s.repairArchived(t)
	res := s.rt.run(t)
	if rearchive {
		if err := s.store(true, t.fork); err != nil {
			s.log.Warn("Archiving the forked thread again failed", "thread", t.fork, "error", err)
		}
	}
	res.turn = t
	res.duration = time.Since(t.started)
	s.streamReply(&res)
	s.turnDone <- res
}

// streamReply sends the turn's reply as ReplyChunk pieces (the one way a
// reply travels, see sendReplyChunks) and leaves its size in res: the
// TurnFinished the loop sends next carries the size, never the text. A
// reply longer than protocol.MaxReply (more than codex can print on one
// line) is cut there, with a warning. It runs on the turn's goroutine (a
// large reply takes a while to send), before the loop sees the result.
func (s *server) streamReply(res *turnResult) {
	id := res.turn.msg.ID
	if len(res.reply) > protocol.MaxReply {
		s.warn(id, fmt.Sprintf("the reply is %d bytes, more than a reply may be (%d); only its first %d bytes are kept", len(res.reply), protocol.MaxReply, protocol.MaxReply))
		res.reply = textclip.Bytes(res.reply, protocol.MaxReply, "")
	}
	res.replySize = int64(len(res.reply))
	if err := s.sendReplyChunks(id, res.reply); err != nil {
		// The channel is gone: the TurnFinished will not arrive either.
		s.log.Error("Reply not sent", "message", id, "bytes", len(res.reply), "error", err)
	}
	res.reply = ""
}

// execTurn runs codex for t and returns what the turn saw. However the
// turn ends, it returns only once codex and everything it left running are
// gone, and with every pipe of the turn closed (turnPipes.close, deferred
// once).
func (s *server) execTurn(t *turn) turnResult {
	res := turnResult{exitCode: -1}
	if err := s.recheckBinary(); err != nil {
		res.spawnErr = err
		return res
	}
	pipes, err := openTurnPipes()
	if err != nil {
		res.spawnErr = err
		return res
	}
	defer pipes.close()
	args := codex.ExecArgs(s.execOpts, t.threadID)
	if t.fork != "" {
		args = codex.ExecForkArgs(s.execOpts, t.fork)
	}
	cmd := exec.Command(s.bin.Path, args...)
	cmd.Dir = s.cfg.Cwd
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.stdinR, pipes.stdoutW, pipes.stderrW
	err = s.reaper.Start(cmd)
	pipes.closeChildEnds()
	if err != nil {
		res.spawnErr = fmt.Errorf("start %s: %w", s.bin.Path, err)
		return res
	}
	t.pid = cmd.Process.Pid
	s.log.Debug("Codex started", "pid", t.pid, "message", t.msg.ID, "resume", t.threadID)
	s.emit(protocol.TurnStarted{MessageID: t.msg.ID, ThreadID: t.threadID, Resume: t.threadID != "", PID: t.pid})

	// The prompt goes on stdin from its own goroutine, then stdin is closed:
	// codex waits for EOF before it starts.
	var wg sync.WaitGroup
	wg.Add(2)
	stdinW, stderrR, stdoutR := handOver(&pipes.stdinW), handOver(&pipes.stderrR), pipes.stdoutR
	go func() {
		defer wg.Done()
		defer stdinW.Close()
		if _, err := io.WriteString(stdinW, FormatPrompt(t.msg)); err != nil {
			s.log.Debug("Writing prompt failed", "message", t.msg.ID, "error", err)
		}
	}()
	stderr := &tailBuffer{max: stderrKeep}
	go func() {
		defer wg.Done()
		defer stderrR.Close()
		io.Copy(stderr, stderrR)
	}()

	procExited := make(chan struct{})
	go func() {
		// How codex ended is read from cmd.ProcessState (reap.ExitCode,
		// signaled) once procExited is closed.
		cmd.Wait()
		close(procExited)
	}()
	exited := procExited // select case; nil once seen

	lines := make(chan lineResult, 16)
	stdout := &progressReader{r: stdoutR}
	go readEvents(stdout, lines)

	turnTimer := time.NewTimer(s.cfg.TurnTimeout)
	defer turnTimer.Stop()
	idleTimer := time.NewTimer(s.cfg.IdleTimeout)
	defer idleTimer.Stop()
	var drainTimer <-chan time.Time
	stopDone := make(chan struct{})
	stopping := false
	openItems := map[string]bool{} // running commands: the idle timeout waits for them
	stdoutOpen := true
	exitSeen := false
	net := &netWait{limit: s.cfg.NetworkWait}
	defer net.stop()

	stop := func(r stopReason, detail string) {
		if stopping {
			return
		}
		stopping = true
		res.stop, res.stopDetail = r, detail
		go func() {
			s.stopProcess(cmd.Process.Pid, procExited)
			close(stopDone)
		}()
	}

	for stdoutOpen || !exitSeen {
		select {
		case lr, ok := <-lines:
			if !ok {
				stdoutOpen, lines = false, nil
				continue
			}
			s.turnLine(t, lr, &res, openItems, net, idleTimer)
		case <-exited:
			exitSeen, exited = true, nil
			if stdoutOpen {
				drainTimer = time.After(stdoutDrainGrace)
				stdout.stalled()
			}
		case <-drainTimer:
			drainTimer = nil
			if stdout.stalled() {
				stdoutR.SetReadDeadline(time.Now())
			} else {
				// Still reading (a long line takes a while to decode): what
				// codex wrote before it exited is never cut off.
				drainTimer = time.After(stdoutDrainGrace)
			}
		case r := <-t.stopCh:
			stop(r, "")
		case <-turnTimer.C:
			stop(limitStop(limitTurn, s.cfg, net))
		case <-idleTimer.C:
			stop(limitStop(limitIdle, s.cfg, net))
		case <-net.C():
			stop(limitStop(limitNetwork, s.cfg, net))
			net.stop()
		}
	}
	if stopping {
		<-stopDone
	}
	// A descendant that inherited codex's stdin or stderr must not hold the
	// turn open: give the pipes a short grace, then stop waiting on them.
	stderrR.SetReadDeadline(time.Now().Add(stdoutDrainGrace))
	stdinW.SetWriteDeadline(time.Now().Add(stdoutDrainGrace))
	wg.Wait()
	pipes.close()
	s.reaper.Release(cmd.Process.Pid)
	res.stderrTail = stderr.String()
	res.exitCode = reap.ExitCode(cmd.ProcessState)
	res.killed = !stopping && signaled(cmd.ProcessState)
	// Whatever the turn left running — stopped, failed or completed — is
	// killed and reaped now, before the loop hears of the end and can start
	// the next turn's codex: codex is released above, so every descendant
	// left is this turn's.
	s.killLeftovers(t.msg.ID)
	return res
}

// signaled reports whether a reaped process died of a signal.
func signaled(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// killLeftovers kills and reaps every process of the shim's that is
// neither managed by its reaper nor below a managed process (the
// app-server, for one): what the turn of message id left running, detached
// or orphaned. It blocks until they are gone or a 5s bound passes, and
// logs what it did. A shim without a reaper (unit tests) has nothing to do.
func (s *server) killLeftovers(id string) {
	if s.reaper == nil {
		return
	}
	if n, err := s.reaper.KillLeftovers(5 * time.Second); err != nil {
		s.log.Error("Processes left by the turn survived", "message", id, "error", err)
	} else if n > 0 {
		s.log.Info("Killed processes left by the turn", "message", id, "count", n)
	}
}

// recheckBinary looks for the codex binary again when it was not usable
// when last looked at, so a codex installed (or repaired) meanwhile is used
// without a restart; it returns why the binary is still not usable. Only
// the turn in flight touches bin, binErr and env.
func (s *server) recheckBinary() error {
	if s.binErr == nil {
		return nil
	}
	bin, err := codex.ResolveBinary(s.cfg.CodexBin)
	if err != nil {
		s.binErr = err
		return err
	}
	s.bin, s.binErr, s.env = bin, nil, codexEnv(s.cfg, bin, s.batty)
	s.log.Info("Codex binary usable now", "bin", s.cfg.CodexBin, "path", bin.Path)
	return nil
}

// turnLine applies one line of codex's output to turn t: a decoding
// problem is a warning; a network-wait notice starts or goes on with the
// wait (net) and a retry notice is a warning, neither of them activity;
// any other event ends a network wait, is handled (handleEvent), and
// restarts the idle timer, which stays stopped while a command runs
// (openItems).
func (s *server) turnLine(t *turn, lr lineResult, res *turnResult, openItems map[string]bool, net *netWait, idleTimer *time.Timer) {
	if lr.err != nil {
		s.warn(t.msg.ID, fmt.Sprintf("codex output: %v", lr.err))
		return
	}
	// Only real output is activity: codex's retry notices keep coming
	// while it cannot get an answer, and must not keep a hung turn alive.
	switch classifyEvent(lr.ev) {
	case classNetworkWait:
		s.networkNotice(t, net, lr.ev.Message, idleTimer)
		return
	case classRetryNotice:
		s.warn(t.msg.ID, "codex retries: "+lr.ev.Message)
		return
	}
	if waited, ok := net.end(time.Now()); ok {
		s.tlog.Notice(fmt.Sprintf("the API answered again after %s without it", waited.Round(time.Second)))
		s.emit(protocol.NetworkWait{MessageID: t.msg.ID, Waiting: false, Since: time.Now().Add(-waited)})
	}
	if len(openItems) == 0 {
		resetTimer(idleTimer, s.cfg.IdleTimeout)
	}
	s.handleEvent(t, lr.ev, res, openItems)
	if len(openItems) > 0 {
		idleTimer.Stop()
	} else {
		resetTimer(idleTimer, s.cfg.IdleTimeout)
	}
}

// stopProcess ends codex: SIGINT to the process (codex then interrupts the
// turn and kills its commands), then SIGKILL to its group after the grace.
func (s *server) stopProcess(pid int, exited <-chan struct{}) {
	syscall.Kill(pid, syscall.SIGINT)
	select {
	case <-exited:
		return
	case <-time.After(s.cfg.StopGrace):
	}
	s.log.Warn("Codex ignored SIGINT, killing its process group", "pid", pid, "grace", s.cfg.StopGrace)
	syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}

// handleEvent applies one codex event to the turn and the transcript.
func (s *server) handleEvent(t *turn, ev codex.Event, res *turnResult, openItems map[string]bool) {
	tl := s.tlog
	switch ev.Type {
	case codex.TypeThreadStarted:
		res.threadID = ev.ThreadID
		ack := make(chan struct{})
		s.progress <- threadSeen{t: t, id: ev.ThreadID, ack: ack}
		<-ack
	case codex.TypeTurnCompleted:
		res.completed = true
		res.usage = ev.Usage
	case codex.TypeTurnFailed:
		// The transcript shows it once, in the turn's end line. Bounded
		// here: it is classified, logged and sent on.
		res.failedMsg = textclip.Bytes(ev.Message, protocol.MaxText, textclip.Truncated)
	case codex.TypeError:
		// Retry notices never get here (see classifyEvent). Codex repeats
		// its fatal error in turn.failed: finishTurn writes the ones that
		// are not the turn's error (bounded like it, so that the two
		// compare equal).
		res.errors = append(res.errors, textclip.Bytes(ev.Message, protocol.MaxText, textclip.Truncated))
	case codex.TypeItemStarted, codex.TypeItemUpdated, codex.TypeItemCompleted:
		if ev.Item == nil {
			return
		}
		it := ev.Item
		done := ev.Type == codex.TypeItemCompleted
		if done && it.Type != codex.ItemReasoning && it.Type != codex.ItemError && it.Type != codex.ItemTodoList {
			res.items++
		}
		switch it.Type {
		case codex.ItemAgentMessage:
			if done {
				res.reply = it.Text
				tl.AgentMessage(it.Text)
			}
		case codex.ItemReasoning:
			if done {
				tl.Reasoning(it.Text)
			}
		case codex.ItemCommandExecution:
			if ev.Type == codex.TypeItemStarted {
				openItems[it.ID] = true
				tl.CommandStarted(it.Command)
			} else if done {
				delete(openItems, it.ID)
				res.requests++
				tl.CommandFinished(it.Command, it.ExitCode, it.Status, it.AggregatedOutput)
				res.ranCommand(it.Command, it.AggregatedOutput, it.ExitCode)
			}
		case codex.ItemFileChange:
			if done {
				res.requests++
				ch := make([]ptylog.FileChange, 0, len(it.Changes))
				for _, c := range it.Changes {
					ch = append(ch, ptylog.FileChange{Path: c.Path, Kind: c.Kind})
				}
				tl.FileChanges(ch)
			}
		case codex.ItemWebSearch:
			// A hosted tool: the search runs inside the model request, it
			// adds no request of its own.
			if done {
				tl.WebSearch(it.Query)
			}
		case codex.ItemError:
			if done {
				s.warn(t.msg.ID, it.Message)
			}
		default:
			if done && it.Type != "" && it.Type != codex.ItemTodoList {
				res.requests++
			}
		}
	}
}

// sendReplyChunks sends reply as ReplyChunk events of at most
// protocol.MaxReplyChunk bytes, cut at UTF-8 boundaries, in order (none for
// an empty reply).
func (s *server) sendReplyChunks(id, reply string) error {
	for len(reply) > 0 {
		n := min(len(reply), protocol.MaxReplyChunk)
		for n < len(reply) && n > 0 && !utf8.RuneStart(reply[n]) {
			n--
		}
		if err := s.conn.Send(protocol.ReplyChunk{MessageID: id, Data: reply[:n]}); err != nil {
			return fmt.Errorf("sending the reply in pieces: %w", err)
		}
		reply = reply[n:]
	}
	return nil
}
