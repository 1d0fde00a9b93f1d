package shim

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
)

// The app-server runtime keeps one codex process for the shim's turns, and
// a new shim (a new app-server) resumes the thread by id: its first model
// request carries the earlier turn.
func TestE2EAppServerOneProcessAndResume(t *testing.T) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home, cwd := srv.WriteHome(t), t.TempDir()
	real := func(c *Config) {
		c.CodexBin, c.Env, c.Cwd, c.Exec.SkipGitRepoCheck, c.Runtime = bin, []string{"CODEX_HOME=" + home}, cwd, true, RuntimeAppServer
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

	second := startShim(t, func(c *Config) { real(c); c.ThreadID = thread })
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
	h, _ := startRealShim(t, func(c *Config) { c.Runtime, c.ThreadID = RuntimeAppServer, missing })
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
