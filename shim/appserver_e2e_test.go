package shim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/shim/shimconfig"
)

// The app-server runtime keeps one codex process for the shim's turns, and
// a new shim (a new app-server) resumes the thread by id: its first model
// request carries the earlier turn.
func TestE2EAppServerOneProcessAndResume(t *testing.T) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home, cwd := srv.WriteHome(t), t.TempDir()
	real := func(c *shimconfig.Config) {
		c.CodexBin, c.Env, c.Cwd, c.Exec.SkipGitRepoCheck, c.Runtime = bin, []string{"CODEX_HOME=" + home}, cwd, true, shimconfig.RuntimeAppServer
	}
	first := startShim(t, real)
	first.send("1", "one [[mock:reply A]]")
	ev, tf := turnEvents(first, "1")
	pid := eventOf(t, ev, kStarted).(protocol.TurnStarted).PID
	thread := tf.ThreadID
	first.send("2", "two [[mock:reply B]]")
	ev, tf = turnEvents(first, "2")
	if ts := eventOf(t, ev, kStarted).(protocol.TurnStarted); ts.PID != pid || pid <= 0 || !ts.Resume {
		t.Fatalf("second turn started = %+v, want a resume on the first turn's app-server (pid %d)", ts, pid)
	}
	if tf.Reply != "B" || tf.ThreadID != thread {
		t.Fatalf("second turn = %+v", tf)
	}
	first.p.Kill()
	first.waitExit()

	second := startShim(t, func(c *shimconfig.Config) { real(c); c.ThreadID = thread })
	second.send("3", "three [[mock:reply C]]")
	ev, tf = turnEvents(second, "3")
	for _, m := range ev {
		if tc, ok := m.(protocol.ThreadChanged); ok {
			t.Fatalf("the resumed thread changed: %+v", tc)
		}
	}
	if tf.Status != protocol.TurnCompleted || tf.Reply != "C" || tf.ThreadID != thread {
		t.Fatalf("turn on the resumed thread = %+v", tf)
	}
	reqs := srv.Requests()
	history := strings.Join(reqs[len(reqs)-1].InputTexts, "\n")
	for _, want := range []string{"one", "A", "two", "B", "three"} {
		if !strings.Contains(history, want) {
			t.Errorf("the resumed thread's request lacks %q", want)
		}
	}
}

// A thread the app-server cannot find is retried once on a fresh thread,
// as with exec.
func TestE2EAppServerMissingThreadStartsFresh(t *testing.T) {
	const missing = "01a1fe06-da19-7320-bb56-f999f5fa1a4a"
	h, _ := startRealShim(t, func(c *shimconfig.Config) { c.Runtime, c.ThreadID = shimconfig.RuntimeAppServer, missing })
	h.send("m", "hello [[mock:reply FRESH]]")
	ev, tf := turnEvents(h, "m")
	var reasons []protocol.ThreadReason
	for _, m := range ev {
		if tc, ok := m.(protocol.ThreadChanged); ok {
			reasons = append(reasons, tc.Reason)
		}
	}
	if len(reasons) != 2 || reasons[0] != protocol.ThreadResumeFailed || reasons[1] != protocol.ThreadStarted {
		t.Fatalf("thread changes %v (events %s), want resume_failed then started", reasons, describe(ev))
	}
	if tf.Status != protocol.TurnCompleted || tf.Reply != "FRESH" || tf.ThreadID == missing || tf.ThreadID == "" {
		t.Fatalf("turn = %+v", tf)
	}
}

// appServerFailing writes a codex wrapper that runs the real CLI for
// everything but `app-server`, which runs script instead.
func appServerFailing(t *testing.T, script string) string {
	t.Helper()
	real := codextest.CodexNative(t)
	path := filepath.Join(t.TempDir(), "codex")
	body := "#!/bin/sh\nif [ \"$1\" = app-server ]; then\n" + script + "\nfi\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// An app-server that cannot run — no such subcommand, or one that refuses
// initialize — makes the shim fall back to exec for good with one warning
// naming the reason and the fix: the turn in flight runs on exec (one
// model request, completed) and so does the next one, without a warning.
func TestE2EAppServerUnusableFallsBackToExec(t *testing.T) {
	for _, c := range []struct {
		name, script, reason string
	}{
		{"missing subcommand", `echo "error: unrecognized subcommand 'app-server'" >&2; exit 2`, "unrecognized subcommand"},
		{"initialize refused", "read line\necho '{\"id\":1,\"error\":{\"code\":-32600,\"message\":\"Invalid request: unknown variant `initialize`\"}}'\nexec cat >/dev/null",
			"unknown variant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := appServerFailing(t, c.script)
			h, srv := startRealShim(t, func(cfg *shimconfig.Config) { cfg.Runtime, cfg.CodexBin = shimconfig.RuntimeAppServer, bin })
			h.send("1", "one [[mock:reply ONE]]")
			ev, tf := turnEvents(h, "1")
			if tf.Status != protocol.TurnCompleted || tf.Reply != "ONE" {
				t.Fatalf("turn in flight = %+v (events %s)", tf, describe(ev))
			}
			var warnings []string
			for _, m := range ev {
				if w, ok := m.(protocol.Warning); ok {
					warnings = append(warnings, w.Message)
				}
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], c.reason) || !strings.Contains(warnings[0], "exec runtime") ||
				!strings.Contains(warnings[0], "runtime: exec") {
				t.Fatalf("warnings %q, want one naming %q, the exec runtime and the fix", warnings, c.reason)
			}
			h.send("2", "two [[mock:reply TWO]]")
			ev, tf = turnEvents(h, "2")
			if tf.Status != protocol.TurnCompleted || tf.Reply != "TWO" || !eventOf(t, ev, kStarted).(protocol.TurnStarted).Resume {
				t.Fatalf("next turn = %+v (events %s)", tf, describe(ev))
			}
			for _, m := range ev {
				if w, ok := m.(protocol.Warning); ok {
					t.Fatalf("a second warning: %q", w.Message)
				}
			}
			if n := len(srv.Requests()); n != 2 {
				t.Fatalf("%d model requests, want 2 (a turn ran twice, or not at all)", n)
			}
			log, err := os.ReadFile(h.cfg.Transcript)
			if err != nil || !strings.Contains(string(log), "app-server runtime cannot run") {
				t.Fatalf("the transcript does not say so (%v):\n%s", err, log)
			}
		})
	}
}

// An app-server that worked and then died is restarted on the next turn,
// with the thread resumed: no fall back to exec.
func TestE2EAppServerCrashIsRestartedNotFallenBack(t *testing.T) {
	h, srv := startRealShim(t, func(c *shimconfig.Config) { c.Runtime = shimconfig.RuntimeAppServer })
	pid := firstTurn(t, h)
	var (
		ev []protocol.Message
		tf protocol.TurnFinished
	)
	h.send("2", "two [[mock:slow 60]]")
	if err := srv.WaitRequests(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, tf = turnEvents(h, "2"); tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailKilled ||
		!strings.HasPrefix(tf.Error, "codex was killed by a signal") || strings.ContainsRune(tf.Error, 0x1b) {
		t.Fatalf("turn whose server died = %+v", tf)
	}
	h.send("3", "three [[mock:reply THREE]]")
	ev, tf = turnEvents(h, "3")
	ts := eventOf(t, ev, kStarted).(protocol.TurnStarted)
	if tf.Status != protocol.TurnCompleted || tf.Reply != "THREE" || ts.PID == pid || !ts.Resume {
		t.Fatalf("turn after the crash = %+v, started %+v (first server pid %d)", tf, ts, pid)
	}
	for _, m := range ev {
		if w, ok := m.(protocol.Warning); ok && strings.Contains(w.Message, "exec runtime") {
			t.Fatalf("fell back to exec after a crash: %q", w.Message)
		}
	}
	reqs := srv.Requests()
	if history := strings.Join(reqs[len(reqs)-1].InputTexts, "\n"); !strings.Contains(history, "ONE") {
		t.Fatalf("the restarted server did not resume the thread: %q", history)
	}
}

// ctxFor is a context bounded by eventWait, ended with the test.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	t.Cleanup(cancel)
	return ctx
}

// With runtime_idle set, an app-server idle that long is stopped, and the
// next message starts another that resumes the thread: its model request
// carries the earlier turn.
func TestE2EAppServerIdleStop(t *testing.T) {
	h, srv := startRealShim(t, func(c *shimconfig.Config) {
		c.Runtime, c.RuntimeIdle = shimconfig.RuntimeAppServer, 300*time.Millisecond
	})
	h.send("1", "one [[mock:reply IDLE_ONE]]")
	ev, tf := turnEvents(h, "1")
	pid := eventOf(t, ev, kStarted).(protocol.TurnStarted).PID
	if tf.Status != protocol.TurnCompleted || pid <= 0 {
		t.Fatalf("first turn = %+v", tf)
	}
	fd, err := reap.OpenPidfd(pid)
	if err == nil {
		exited := fd.WaitExit(time.Now().Add(eventWait))
		fd.Close()
		if !exited {
			t.Fatalf("the idle app-server (pid %d) still runs after %s", pid, eventWait)
		}
	} else if !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	h.send("2", "two [[mock:reply IDLE_TWO]]")
	ev, tf = turnEvents(h, "2")
	ts := eventOf(t, ev, kStarted).(protocol.TurnStarted)
	if tf.Status != protocol.TurnCompleted || tf.Reply != "IDLE_TWO" || ts.PID == pid || !ts.Resume || tf.ThreadID != ts.ThreadID {
		t.Fatalf("turn after the idle stop = %+v, started %+v (first server pid %d)", tf, ts, pid)
	}
	reqs := srv.Requests()
	history := strings.Join(reqs[len(reqs)-1].InputTexts, "\n")
	for _, want := range []string{"one", "IDLE_ONE", "two"} {
		if !strings.Contains(history, want) {
			t.Errorf("the new server's request lacks %q", want)
		}
	}
}

// An idle app-server killed from outside is noticed when it dies, not at
// the next turn: the shim warns at once, and the next message starts
// another server that resumes the thread, and completes.
func TestE2EAppServerKilledWhileIdleIsNoticedAtOnce(t *testing.T) {
	h, srv := startRealShim(t, func(c *shimconfig.Config) { c.Runtime = shimconfig.RuntimeAppServer })
	pid := firstTurn(t, h)
	var (
		ev []protocol.Message
		tf protocol.TurnFinished
	)
	h.expect(kState)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w := h.expect(kWarning)[0].(protocol.Warning)
	if w.MessageID != "" || !strings.Contains(w.Message, "died between turns") || !strings.Contains(w.Message, "signal: killed") {
		t.Fatalf("warning = %+v", w)
	}
	h.send("2", "two [[mock:reply TWO]]")
	ev, tf = turnEvents(h, "2")
	ts := eventOf(t, ev, kStarted).(protocol.TurnStarted)
	if tf.Status != protocol.TurnCompleted || tf.Reply != "TWO" || ts.PID == pid || !ts.Resume {
		t.Fatalf("turn after the kill = %+v, started %+v (first server pid %d)", tf, ts, pid)
	}
	reqs := srv.Requests()
	if history := strings.Join(reqs[len(reqs)-1].InputTexts, "\n"); !strings.Contains(history, "ONE") {
		t.Fatalf("the new server did not resume the thread: %q", history)
	}
}

// A message sent at once after its idle app-server was killed from
// outside either runs on a new server, or — sent to the dead one before
// the shim noticed — fails as cut off (killed), which the daemon retries:
// never as a final failure.
func TestE2EAppServerKilledThenMessagedAtOnce(t *testing.T) {
	h, _ := startRealShim(t, func(c *shimconfig.Config) { c.Runtime = shimconfig.RuntimeAppServer })
	pid := firstTurn(t, h)
	var tf protocol.TurnFinished
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.send("2", "two [[mock:reply TWO]]")
	_, tf = turnEvents(h, "2")
	switch {
	case tf.Status == protocol.TurnCompleted && tf.Reply == "TWO":
	case tf.Status == protocol.TurnFailed && tf.Failure == protocol.FailKilled && retry.Cause(tf) != "":
	default:
		t.Fatalf("turn sent at once after the kill = %+v, want completed, or failed as killed (retried)", tf)
	}
	h.send("3", "three [[mock:reply THREE]]")
	if _, tf = turnEvents(h, "3"); tf.Status != protocol.TurnCompleted || tf.Reply != "THREE" {
		t.Fatalf("the next turn = %+v", tf)
	}
}

// firstTurn runs message "1" on the shim of h, which must complete, and
// returns the pid of the codex process (the app-server) that ran it.
func firstTurn(t *testing.T, h *harness) int {
	t.Helper()
	h.send("1", "one [[mock:reply ONE]]")
	ev, tf := turnEvents(h, "1")
	pid := eventOf(t, ev, kStarted).(protocol.TurnStarted).PID
	if tf.Status != protocol.TurnCompleted || pid <= 0 {
		t.Fatalf("first turn = %+v", tf)
	}
	return pid
}
