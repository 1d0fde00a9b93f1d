package shim

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// The end-to-end tests run the real Codex CLI (the pinned npm release)
// through a real shim against a mock Responses API. They skip when the CLI
// is not installed, except in CI, where they fail.

func startRealShim(t *testing.T, mod func(*shimconfig.Config)) (*harness, *codextest.Server) {
	t.Helper()
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	h := startShim(t, func(c *shimconfig.Config) {
		c.CodexBin = bin
		c.Env = []string{"CODEX_HOME=" + home}
		c.Cwd = t.TempDir()
		c.Exec.SkipGitRepoCheck = true
		c.StopGrace = 2 * time.Second
		if mod != nil {
			mod(c)
		}
	})
	return h, srv
}

func TestE2ETwoTurnsOnOneThread(t *testing.T) {
	h, srv := startRealShim(t, nil)
	h.send("m1", "first question [[mock:reply FIRST_ANSWER]]")
	ev := h.expect(kAccepted, kState, kStarted, kThread)
	thread := ev[3].(protocol.ThreadChanged).ThreadID
	tf := h.finished("m1", protocol.TurnCompleted)
	if tf.Reply != "FIRST_ANSWER" || tf.Usage.Input == 0 || tf.Usage.Output == 0 || tf.ThreadID != thread {
		t.Fatalf("first turn = %+v", tf)
	}
	firstTotal := tf.Thread
	h.expect(kState)

	h.send("m2", "second question [[mock:reply SECOND_ANSWER]]")
	ev = h.expect(kAccepted, kState, kStarted)
	if ts := ev[2].(protocol.TurnStarted); !ts.Resume || ts.ThreadID != thread {
		t.Fatalf("second turn started = %+v", ts)
	}
	tf = h.finished("m2", protocol.TurnCompleted)
	if tf.Reply != "SECOND_ANSWER" || tf.ThreadID != thread {
		t.Fatalf("second turn = %+v", tf)
	}
	// codex reports thread totals; the shim turns them into per-turn usage.
	if tf.Thread.Input != firstTotal.Input+tf.Usage.Input || tf.Usage.Input == 0 {
		t.Fatalf("usage: turn %+v, thread %+v, first thread total %+v", tf.Usage, tf.Thread, firstTotal)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	history := strings.Join(reqs[1].InputTexts, "\n")
	for _, want := range []string{"first question", "FIRST_ANSWER", "second question", "batty message m2 from human"} {
		if !strings.Contains(history, want) {
			t.Errorf("second request lacks %q in its input", want)
		}
	}
}

func TestE2EQuota(t *testing.T) {
	h, _ := startRealShim(t, nil)
	h.send("q", "please [[mock:quota]]")
	ev := h.expect(kAccepted, kState, kStarted, kThread, kQuota)
	qb := ev[4].(protocol.QuotaBlocked)
	// The mock resets the limit in one hour; codex prints it to the minute.
	if d := time.Until(qb.RetryAt); d < 55*time.Minute || d > 65*time.Minute {
		t.Fatalf("retry at %s (in %s), want about an hour from now; message %q", qb.RetryAt, d, qb.Message)
	}
	tf := h.finished("q", protocol.TurnFailed)
	if tf.Failure != protocol.FailQuota || !strings.Contains(tf.Error, "usage limit") {
		t.Fatalf("quota turn = %+v", tf)
	}
}

func TestE2EContextWindow(t *testing.T) {
	h, _ := startRealShim(t, nil)
	h.send("c", "too long [[mock:context]]")
	h.expect(kAccepted, kState, kStarted, kThread, kContextEx)
	tf := h.finished("c", protocol.TurnFailed)
	if tf.Failure != protocol.FailContextWindow {
		t.Fatalf("context turn = %+v", tf)
	}
}

func TestE2EShellCommand(t *testing.T) {
	h, _ := startRealShim(t, nil)
	h.send("s", "run it [[mock:shell echo E2E_SHELL_OK]]")
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("s", protocol.TurnCompleted)
	if !strings.Contains(tf.Reply, "SHELL_DONE") || !strings.Contains(tf.Reply, "E2E_SHELL_OK") {
		t.Fatalf("shell turn reply = %q", tf.Reply)
	}
	transcript, err := os.ReadFile(h.cfg.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(transcript), "echo E2E_SHELL_OK") {
		t.Fatalf("transcript lacks the command:\n%s", transcript)
	}
}

func TestE2EKillMidTurnLeavesNoOrphan(t *testing.T) {
	h, _ := startRealShim(t, nil)
	// The model runs a command that also detaches a child into its own
	// session: codex's own SIGINT cleanup cannot reach that one.
	h.send("k", "[[mock:shell setsid sleep 3131 >/dev/null 2>&1 < /dev/null & sleep 3132]]")
	h.expect(kAccepted, kState, kStarted, kThread)
	waitForProcess(t, h.mark, "sleep 3131")
	waitForProcess(t, h.mark, "sleep 3132")
	h.command(protocol.Kill{})
	h.expectState(protocol.StateWorking, protocol.StateStopping)
	h.finished("k", protocol.TurnInterrupted)
	h.expectState(protocol.StateStopping, protocol.StateStopped)
	if code := h.waitExit(); code != 0 {
		t.Fatalf("shim exit code %d", code)
	}
	assertNoProcesses(t, h.mark)
}

// waitForProcess waits until a process carrying mark runs a command line
// containing cmd.
func waitForProcess(t *testing.T, mark, cmd string) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for time.Now().Before(deadline) {
		for _, pid := range codextest.Marked(mark) {
			if strings.Contains(codextest.Cmdline(pid), cmd) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // codex starts the command asynchronously
	}
	t.Fatalf("no process running %q", cmd)
}

// TestE2EResumedByANewShimWithBaseline: the real CLI reports the thread's
// running total also from a new process (seeded from the rollout); a new
// shim given the thread's last total charges its first turn only what that
// turn's request cost, as the mock billed it.
func TestE2EResumedByANewShimWithBaseline(t *testing.T) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	srv.Handle(func(r codextest.Request) codextest.Reply {
		rep := srv.Scripted(r)
		rep.InputTokens, rep.OutputTokens = 1000+r.Seq, 10
		return rep
	})
	home, cwd := srv.WriteHome(t), t.TempDir()
	real := func(c *shimconfig.Config) {
		c.CodexBin, c.Env, c.Cwd, c.Exec.SkipGitRepoCheck, c.StopGrace = bin, []string{"CODEX_HOME=" + home}, cwd, true, 2*time.Second
	}
	first := startShim(t, real)
	runTurn(first, "1", "one [[mock:reply A]]")
	tf := runTurn(first, "2", "two [[mock:reply B]]")
	if tf.Thread.Input != 1001+1002 || tf.Usage.Input != 1002 {
		t.Fatalf("second turn: usage %+v thread %+v", tf.Usage, tf.Thread)
	}
	first.p.Kill()
	first.waitExit()

	thread, base := tf.ThreadID, tf.Thread
	second := startShim(t, func(c *shimconfig.Config) {
		real(c)
		c.ThreadID = thread
		c.ThreadUsage = codex.Usage{InputTokens: base.Input, CachedInputTokens: base.CachedInput, OutputTokens: base.Output, ReasoningOutputTokens: base.ReasoningOutput}
	})
	tf = runTurn(second, "3", "three [[mock:reply C]]")
	if tf.ThreadID != thread || tf.Usage.Input != 1003 || tf.Usage.Output != 10 || tf.Thread.Input != 1001+1002+1003 {
		t.Fatalf("first turn of the new shim: usage %+v thread %+v, want 1003 of %d", tf.Usage, tf.Thread, 1001+1002+1003)
	}
}

// TestE2EContextFailureRestartsTheRunningTotal: recorded with the real CLI —
// after a context-window failure codex counts the thread from zero (the
// window is marked full), and the next resume first sends a compaction
// request. That turn is charged the compaction and its own request, the one
// after it only its own.
func TestE2EContextFailureRestartsTheRunningTotal(t *testing.T) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	srv.Handle(func(r codextest.Request) codextest.Reply {
		rep := srv.Scripted(r)
		rep.InputTokens, rep.OutputTokens = 1000*r.Seq, 10*r.Seq
		return rep
	})
	home := srv.WriteHome(t)
	h := startShim(t, func(c *shimconfig.Config) {
		c.CodexBin, c.Env, c.Cwd, c.Exec.SkipGitRepoCheck, c.StopGrace = bin, []string{"CODEX_HOME=" + home}, t.TempDir(), true, 2*time.Second
	})
	runTurn(h, "1", "one [[mock:reply A]]")                                    // request 1
	if tf := runTurn(h, "2", "two [[mock:reply B]]"); tf.Usage.Input != 2000 { // request 2
		t.Fatalf("second turn: %+v", tf.Usage)
	}
	h.send("3", "boom [[mock:context]]") // request 3: no usage
	for {
		if tf, ok := h.next().(protocol.TurnFinished); ok {
			if tf.Failure != protocol.FailContextWindow {
				t.Fatalf("third turn: %s %s", tf.Status, tf.Failure)
			}
			break
		}
	}
	h.expect(kState)
	tf := runTurn(h, "4", "after [[mock:reply C]]") // requests 4 (compaction) and 5
	if want := (protocol.Usage{Input: 4000 + 5000, Output: 40 + 50}); tf.Usage != want {
		t.Fatalf("turn after the context failure: usage %+v, want %+v (thread %+v)", tf.Usage, want, tf.Thread)
	}
	tf = runTurn(h, "5", "again [[mock:reply D]]") // request 6
	if want := (protocol.Usage{Input: 6000, Output: 60}); tf.Usage != want {
		t.Fatalf("next turn: usage %+v, want %+v", tf.Usage, want)
	}
	var kinds []string
	for _, r := range srv.Requests() {
		kinds = append(kinds, r.Kind)
	}
	if strings.Join(kinds, ",") != "turn,turn,turn,compaction,turn,turn" {
		t.Fatalf("request kinds %v", kinds)
	}
}

// Context use is the true size of the turn's last model request, read from
// Codex's own record of it: a shell turn makes two requests, and the
// second (with the tool's output) is the one that fills the window. An
// estimate from the turn's totals would say (1,000 + 9,000) / 2 + 60.
func TestE2EContextUseIsTheLastRequest(t *testing.T) {
	h, srv := startRealShim(t, func(c *shimconfig.Config) { c.ContextWindow = 100000 })
	srv.Handle(func(req codextest.Request) codextest.Reply {
		r := srv.Scripted(req)
		if req.FollowUp {
			r.InputTokens, r.OutputTokens = 9000, 50
		} else {
			r.InputTokens, r.OutputTokens = 1000, 10
		}
		return r
	})
	h.send("s", "run it [[mock:shell echo CONTEXT_OK]]")
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("s", protocol.TurnCompleted)
	if tf.Usage.Input != 10000 {
		t.Fatalf("turn usage %+v, want 10000 input tokens over two requests", tf.Usage)
	}
	if tf.ContextPct != 9.05 {
		t.Fatalf("context_pct = %v, want 9.05 (the last request: 9,000 in + 50 out of 100,000)", tf.ContextPct)
	}
}
