package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

const (
	kAccepted  = protocol.KindAccepted
	kRejected  = protocol.KindRejected
	kStarted   = protocol.KindTurnStarted
	kThread    = protocol.KindThreadChanged
	kState     = protocol.KindStateChanged
	kFinished  = protocol.KindTurnFinished
	kWarning   = protocol.KindWarning
	kQuota     = protocol.KindQuotaBlocked
	kAuth      = protocol.KindAuthRequired
	kContextEx = protocol.KindContextExhausted
	kPressure  = protocol.KindContextPressure
	kPong      = protocol.KindPong
)

func TestTwoTurnsOnOneThread(t *testing.T) {
	h := startShim(t, nil)
	h.send("m1", "hello there")
	ev := h.expect(kAccepted, kState, kStarted, kThread, kFinished, kState)
	if ev[2].(protocol.TurnStarted).Resume {
		t.Fatal("first turn resumed a thread")
	}
	th := ev[3].(protocol.ThreadChanged)
	if th.Reason != protocol.ThreadStarted || th.ThreadID == "" {
		t.Fatalf("thread changed = %+v", th)
	}
	tf := ev[4].(protocol.TurnFinished)
	if tf.Status != protocol.TurnCompleted || tf.Reply != "ECHO:hello there" || tf.ThreadID != th.ThreadID {
		t.Fatalf("first turn = %+v", tf)
	}
	if tf.Usage.Input != 1000 || tf.Thread.Input != 1000 || tf.ExitCode != 0 {
		t.Fatalf("first turn usage = %+v thread %+v exit %d", tf.Usage, tf.Thread, tf.ExitCode)
	}

	h.send("m2", "again")
	ev = h.expect(kAccepted, kState, kStarted, kFinished, kState)
	ts := ev[2].(protocol.TurnStarted)
	if !ts.Resume || ts.ThreadID != th.ThreadID {
		t.Fatalf("second turn started = %+v, want resume of %s", ts, th.ThreadID)
	}
	tf = ev[3].(protocol.TurnFinished)
	// codex reports thread-cumulative usage; the shim reports the delta.
	if tf.Usage.Input != 1000 || tf.Usage.Output != 10 || tf.Thread.Input != 2000 || tf.Thread.Output != 20 {
		t.Fatalf("second turn usage = %+v thread %+v", tf.Usage, tf.Thread)
	}
	transcript, err := os.ReadFile(h.cfg.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m1", "ECHO:hello there", "m2", "ECHO:again"} {
		if !strings.Contains(string(transcript), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
}

func TestQueueOverflowIsRejectedNotDropped(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.QueueDepth = 2 })
	h.send("slow", "scenario:slow:60")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.send("q1", "one")
	h.send("q2", "two")
	h.send("q3", "three")
	ev := h.expect(kAccepted, kAccepted, kRejected)
	if d := ev[1].(protocol.Accepted).QueueDepth; d != 2 {
		t.Fatalf("queue depth = %d, want 2", d)
	}
	if r := ev[2].(protocol.Rejected); r.ID != "q3" || r.Reason != protocol.RejectQueueFull {
		t.Fatalf("rejected = %+v", r)
	}
	h.command(protocol.Interrupt{})
	tf := h.finished("slow", protocol.TurnInterrupted)
	if tf.ExitCode != 1 {
		t.Fatalf("interrupted codex exit code = %d, want 1 (SIGINT honoured)", tf.ExitCode)
	}
	// The queue drains in order without going idle in between.
	h.expect(kStarted)
	h.finished("q1", protocol.TurnCompleted)
	h.expect(kStarted)
	h.finished("q2", protocol.TurnCompleted)
	h.expectState(protocol.StateWorking, protocol.StateIdle)
}

func TestDuplicateAndInvalidMessagesAreRejected(t *testing.T) {
	h := startShim(t, nil)
	h.send("a", "scenario:slow:60")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.send("a", "again")
	h.send("", "no id")
	h.send("b", "")
	for _, want := range []protocol.RejectReason{protocol.RejectDuplicate, protocol.RejectInvalid, protocol.RejectInvalid} {
		if r := h.expect(kRejected)[0].(protocol.Rejected); r.Reason != want {
			t.Fatalf("rejected %+v, want %s", r, want)
		}
	}
	h.command(protocol.Interrupt{})
	h.finished("a", protocol.TurnInterrupted)
}

func TestTurnTimeout(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.TurnTimeout = 500 * time.Millisecond })
	h.send("t", "scenario:slow:60")
	// Whether codex said its thread before the limit depends on how
	// loaded the machine is: the end is what counts.
	h.expect(kAccepted, kState, kStarted)
	m, _ := h.until(kFinished)
	if tf := m.(protocol.TurnFinished); tf.MessageID != "t" || tf.Status != protocol.TurnTimedOut || !strings.Contains(tf.Error, "turn timeout") {
		t.Fatalf("turn finished %+v", tf)
	}
}

func TestIdleTimeout(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.IdleTimeout = 400 * time.Millisecond })
	h.send("t", "scenario:silent")
	h.expect(kAccepted, kState, kStarted)
	m, _ := h.until(kFinished)
	if tf := m.(protocol.TurnFinished); tf.MessageID != "t" || tf.Status != protocol.TurnTimedOut || !strings.Contains(tf.Error, "idle timeout") {
		t.Fatalf("turn finished %+v", tf)
	}
}

func TestInterruptKillsCodexThatIgnoresSIGINT(t *testing.T) {
	h := startShim(t, nil)
	h.send("h", "scenario:hang")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.command(protocol.Interrupt{Reason: "test"})
	tf := h.finished("h", protocol.TurnInterrupted)
	if tf.ExitCode != -1 {
		t.Fatalf("exit code = %d, want -1 (SIGKILL after the grace)", tf.ExitCode)
	}
}

func TestShutdownMidTurn(t *testing.T) {
	h := startShim(t, nil)
	h.send("run", "scenario:slow:60")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.send("queued", "never runs")
	h.expect(kAccepted)
	h.command(protocol.Shutdown{Timeout: 200 * time.Millisecond, Reason: "test"})
	h.expectState(protocol.StateWorking, protocol.StateStopping)
	h.finished("queued", protocol.TurnInterrupted)
	h.finished("run", protocol.TurnInterrupted)
	h.expectState(protocol.StateStopping, protocol.StateStopped)
	if code := h.waitExit(); code != 0 {
		t.Fatalf("shim exit code = %d", code)
	}
	assertNoProcesses(t, h.mark)
}

func TestShutdownLetsTheTurnFinish(t *testing.T) {
	h := startShim(t, nil)
	h.send("run", "scenario:slow:1")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.command(protocol.Shutdown{Timeout: time.Minute})
	h.expectState(protocol.StateWorking, protocol.StateStopping)
	h.finished("run", protocol.TurnCompleted)
	h.expectState(protocol.StateStopping, protocol.StateStopped)
	if code := h.waitExit(); code != 0 {
		t.Fatalf("shim exit code = %d", code)
	}
}

func TestOrchestratorGoneStopsEverything(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "detached.pid")
	h := startShim(t, nil)
	h.send("d", "scenario:detach:"+pidFile)
	h.expect(kAccepted, kState, kStarted, kThread)
	pid := codextest.WaitPidFile(t, pidFile, eventWait)
	h.p.Conn.Close() // EOF on the shim's fd 3
	if code := h.waitExit(); code != 0 {
		t.Fatalf("shim exit code = %d", code)
	}
	assertNoProcesses(t, h.mark)
	if codextest.Alive(pid) {
		t.Fatalf("detached grandchild %d survived the shim", pid)
	}
}

func TestInterruptKillsDetachedGrandchild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "detached.pid")
	h := startShim(t, nil)
	h.send("d", "scenario:detach:"+pidFile)
	h.expect(kAccepted, kState, kStarted, kThread)
	pid := codextest.WaitPidFile(t, pidFile, eventWait)
	if !codextest.Alive(pid) {
		t.Fatal("detached child not running")
	}
	h.command(protocol.Interrupt{})
	h.finished("d", protocol.TurnInterrupted)
	// The turn's leftovers are killed before TurnFinished is sent.
	if codextest.Alive(pid) {
		t.Fatalf("detached grandchild %d survived the interrupt", pid)
	}
	h.expect(kState)
	// The shim keeps working afterwards.
	h.send("next", "still here")
	h.expect(kAccepted, kState, kStarted)
	h.finished("next", protocol.TurnCompleted)
}

func TestKillCommand(t *testing.T) {
	h := startShim(t, nil)
	h.send("k", "scenario:hang")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.command(protocol.Kill{})
	h.expectState(protocol.StateWorking, protocol.StateStopping)
	h.finished("k", protocol.TurnInterrupted)
	h.expectState(protocol.StateStopping, protocol.StateStopped)
	h.waitExit()
	assertNoProcesses(t, h.mark)
}

func TestCrashMidTurn(t *testing.T) {
	h := startShim(t, nil)
	h.send("c", "scenario:crash")
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("c", protocol.TurnFailed)
	if tf.Failure != protocol.FailExit || tf.ExitCode != 3 {
		t.Fatalf("crash = %+v", tf)
	}
	h.expect(kState)
	// The crashed turn had named its thread, so the next turn resumes it.
	h.send("s", "scenario:selfkill")
	h.expect(kAccepted, kState, kStarted)
	tf = h.finished("s", protocol.TurnFailed)
	if tf.Failure != protocol.FailKilled || tf.ExitCode != -1 || !strings.Contains(tf.Error, "signal") {
		t.Fatalf("self-kill = %+v", tf)
	}
}

// A codex exec killed from outside mid-turn (kill -9, as the OOM killer
// does) fails its turn as cut off (FailKilled, which the daemon retries),
// not as a codex that exited.
func TestExecKilledFromOutsideMidTurn(t *testing.T) {
	h := startShim(t, nil)
	h.send("k", "scenario:silent")
	ms := h.expect(kAccepted, kState, kStarted, kThread)
	pid := ms[2].(protocol.TurnStarted).PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tf := h.finished("k", protocol.TurnFailed)
	if tf.Failure != protocol.FailKilled || tf.ExitCode != -1 || tf.Error != "codex was killed by a signal" {
		t.Fatalf("killed codex = %+v", tf)
	}
}

func TestHugeLine(t *testing.T) {
	const n = 6 << 20
	h := startShim(t, nil)
	h.send("big", "scenario:huge:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("big", protocol.TurnCompleted)
	if len(tf.Reply) != n {
		t.Fatalf("reply has %d bytes, want %d", len(tf.Reply), n)
	}
}

func TestGarbageLinesAreWarnings(t *testing.T) {
	h := startShim(t, nil)
	h.send("g", "scenario:garbage")
	h.expect(kAccepted, kState, kStarted, kThread, kWarning, kWarning)
	tf := h.finished("g", protocol.TurnCompleted)
	if tf.Reply != "AFTER_GARBAGE" {
		t.Fatalf("reply = %q", tf.Reply)
	}
}

func TestFailuresAreClassifiedAndReported(t *testing.T) {
	h := startShim(t, nil)

	reset := time.Now().Add(90 * time.Minute).Truncate(time.Minute)
	h.send("q", fmt.Sprintf("scenario:quota:%d", reset.Unix()))
	ev := h.expect(kAccepted, kState, kStarted, kThread, kQuota)
	qb := ev[4].(protocol.QuotaBlocked)
	// The fake prints the reset time to the minute, rounded down, like
	// codex; the shim reports the end of that minute.
	if want := reset.Add(time.Minute); !qb.RetryAt.Equal(want) || !strings.Contains(qb.Message, "usage limit") {
		t.Fatalf("quota blocked = %+v", qb)
	}
	if tf := h.finished("q", protocol.TurnFailed); tf.Failure != protocol.FailQuota {
		t.Fatalf("quota turn = %+v", tf)
	}
	h.expect(kState)

	h.send("c", "scenario:context")
	h.expect(kAccepted, kState, kStarted, kContextEx)
	if tf := h.finished("c", protocol.TurnFailed); tf.Failure != protocol.FailContextWindow {
		t.Fatalf("context turn = %+v", tf)
	}
	h.expect(kState)

	h.send("a", "scenario:auth")
	h.expect(kAccepted, kState, kStarted, kAuth)
	if tf := h.finished("a", protocol.TurnFailed); tf.Failure != protocol.FailAuth {
		t.Fatalf("auth turn = %+v", tf)
	}
	h.expect(kState)

	h.send("s", "scenario:servererror")
	h.expect(kAccepted, kState, kStarted)
	// The kind of transient failure travels typed.
	if tf := h.finished("s", protocol.TurnFailed); tf.Failure != protocol.FailStream || tf.Transient != protocol.TransientServer {
		t.Fatalf("server error turn = %+v", tf)
	}
}

func TestSpawnFailureFinishesTheMessage(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.CodexBin = "/nonexistent/codex" })
	for _, id := range []string{"one", "two"} {
		h.send(id, "hi")
		h.expect(kAccepted, kState)
		tf := h.finished(id, protocol.TurnFailed)
		if tf.Failure != protocol.FailSpawn || !strings.Contains(tf.Error, "/nonexistent/codex") {
			t.Fatalf("spawn failure = %+v", tf)
		}
		h.expect(kState)
	}
}

// A codex installed after the shim started is used by the next turn: the
// shim does not keep the failure it saw at start.
func TestSpawnFailureLooksForTheBinaryAgain(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "codex")
	h := startShim(t, func(c *shimconfig.Config) { c.CodexBin = bin })
	h.send("one", "hi")
	h.expect(kAccepted, kState)
	if tf := h.finished("one", protocol.TurnFailed); tf.Failure != protocol.FailSpawn || !strings.Contains(tf.Error, bin) {
		t.Fatalf("spawn failure = %+v", tf)
	}
	h.expect(kState)
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	h.send("two", "hello again")
	h.expect(kAccepted, kState, kStarted, kThread)
	if tf := h.finished("two", protocol.TurnCompleted); tf.Reply != "ECHO:hello again" {
		t.Fatalf("turn after the binary appeared = %+v", tf)
	}
}

func TestCodexFailingBeforeTheTurn(t *testing.T) {
	h := startShim(t, nil)
	h.send("p", "scenario:spawnfail")
	h.expect(kAccepted, kState, kStarted)
	tf := h.finished("p", protocol.TurnFailed)
	if tf.Failure != protocol.FailExit || tf.ExitCode != 1 || !strings.Contains(tf.Error, "Model provider") {
		t.Fatalf("pre-turn failure = %+v", tf)
	}
}

func TestResumeOfUnknownThreadRetriesOnAFreshThread(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.ThreadID = "01a1fdfc-0000-7000-8000-000000000000" })
	h.send("r", "hello")
	ev := h.expect(kAccepted, kState, kStarted, kWarning, kThread, kStarted, kThread)
	if !ev[2].(protocol.TurnStarted).Resume {
		t.Fatal("first attempt did not resume")
	}
	if th := ev[4].(protocol.ThreadChanged); th.Reason != protocol.ThreadResumeFailed || th.Previous != h.cfg.ThreadID {
		t.Fatalf("thread change = %+v", th)
	}
	if ev[5].(protocol.TurnStarted).Resume {
		t.Fatal("retry resumed again")
	}
	fresh := ev[6].(protocol.ThreadChanged)
	tf := h.finished("r", protocol.TurnCompleted)
	if tf.ThreadID != fresh.ThreadID {
		t.Fatalf("finished on %s, want %s", tf.ThreadID, fresh.ThreadID)
	}
}

func TestResumeAnsweredWithAnotherThread(t *testing.T) {
	h := startShim(t, nil)
	h.send("1", "first")
	first := h.expect(kAccepted, kState, kStarted, kThread)[3].(protocol.ThreadChanged)
	h.finished("1", protocol.TurnCompleted)
	h.expect(kState)
	h.send("2", "scenario:newthread")
	ev := h.expect(kAccepted, kState, kStarted, kWarning, kThread)
	th := ev[4].(protocol.ThreadChanged)
	if th.Reason != protocol.ThreadResumeChanged || th.Previous != first.ThreadID || th.ThreadID == first.ThreadID {
		t.Fatalf("thread change = %+v", th)
	}
	tf := h.finished("2", protocol.TurnCompleted)
	if tf.Thread.Input != 1000 {
		t.Fatalf("usage of the new thread = %+v, want only its own turn", tf.Thread)
	}
}

func TestResetThread(t *testing.T) {
	h := startShim(t, nil)
	h.send("1", "first")
	first := h.expect(kAccepted, kState, kStarted, kThread)[3].(protocol.ThreadChanged)
	h.finished("1", protocol.TurnCompleted)
	h.expect(kState)
	h.command(protocol.ResetThread{Reason: "handoff"})
	th := h.expect(kThread)[0].(protocol.ThreadChanged)
	if th.Reason != protocol.ThreadReset || th.Previous != first.ThreadID || th.ThreadID != "" {
		t.Fatalf("reset = %+v", th)
	}
	h.send("2", "second")
	ev := h.expect(kAccepted, kState, kStarted, kThread)
	if ev[2].(protocol.TurnStarted).Resume {
		t.Fatal("turn after reset resumed")
	}
}

// A ping is answered with its nonce, idle or mid-turn (the daemon's
// liveness probe).
func TestPingAnsweredIdleAndMidTurn(t *testing.T) {
	h := startShim(t, nil)
	h.command(protocol.Ping{Nonce: 42})
	if p := h.expect(kPong)[0].(protocol.Pong); p.Nonce != 42 {
		t.Fatalf("pong = %+v", p)
	}
	h.send("x", "scenario:slow:60")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.command(protocol.Ping{Nonce: 43})
	if p := h.expect(kPong)[0].(protocol.Pong); p.Nonce != 43 {
		t.Fatalf("pong mid-turn = %+v", p)
	}
}

func TestContextPressure(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.ContextWindow = 10000; c.PressurePct = 50 })
	h.send("p", "scenario:usage:9000")
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("p", protocol.TurnCompleted)
	if tf.ContextPct < 90 {
		t.Fatalf("context pct = %v", tf.ContextPct)
	}
	cp := h.expect(kPressure)[0].(protocol.ContextPressure)
	if cp.WindowTokens != 10000 || cp.UsedTokens < 9000 {
		t.Fatalf("pressure = %+v", cp)
	}
}

func TestCodexEnvironment(t *testing.T) {
	h := startShim(t, nil)
	h.send("e", "scenario:env:BATTY_AGENT")
	h.expect(kAccepted, kState, kStarted, kThread)
	if tf := h.finished("e", protocol.TurnCompleted); tf.Reply != "tester" {
		t.Fatalf("BATTY_AGENT = %q", tf.Reply)
	}
	// The batty binary (here the shim's own, this test binary) by its
	// absolute path: it survives a login shell's profile, unlike PATH.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h.expect(kState)
	h.send("b", "scenario:env:BATTY_BIN")
	h.expect(kAccepted, kState, kStarted)
	if tf := h.finished("b", protocol.TurnCompleted); tf.Reply != self {
		t.Fatalf("BATTY_BIN = %q, want %q", tf.Reply, self)
	}
}
