package shim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// The conformance suite runs the same scenarios through a real shim, with
// the real Codex CLI against the mock Responses API, on every runtime the
// shim has. A scenario asserts only what the protocol promises whatever the
// runtime: which events a turn produces and what its TurnFinished says,
// not the order of the events before it nor how codex was run.

// runtimePerAccount names, in the suite, the app-server runtime on a
// shared process behind a broker (shimconfig.Config.AppServerSocket), as the daemon
// runs it for codex.app_server: per-account.
const runtimePerAccount = "app-server-per-account"

// conformanceRuntimes are the runtimes every scenario runs on.
var conformanceRuntimes = []string{shimconfig.RuntimeExec, shimconfig.RuntimeAppServer, runtimePerAccount}

// startConformingShim starts a real shim on runtime rt (a shim runtime or
// runtimePerAccount) with mod applied.
func startConformingShim(t *testing.T, rt string, mod func(*shimconfig.Config)) (*harness, *codextest.Server) {
	t.Helper()
	if rt == runtimePerAccount {
		return startSharedShim(t, mod)
	}
	return startRealShim(t, func(c *shimconfig.Config) {
		c.Runtime = rt
		if mod != nil {
			mod(c)
		}
	})
}

// conformanceCase is one scenario, run on a fresh shim of the runtime.
type conformanceCase struct {
	name string
	run  func(t *testing.T, h *harness, srv *codextest.Server)
	mod  func(*shimconfig.Config) // the shim's settings besides the runtime; nil: none
}

var conformanceCases = []conformanceCase{
	{"TextAndResume", conformTextAndResume, nil},
	{"ToolCall", conformToolCall, nil},
	{"Quota", conformQuota, nil},
	{"QuotaResetFromRateLimits", conformQuotaHeaders, nil},
	{"Auth", conformAuth, nil},
	{"ContextWindow", conformContextWindow, nil},
	{"Interrupt", conformInterrupt, nil},
	{"KillLeavesNoProcess", conformKill, nil},
	{"DetachedGoneAfterTurn", conformDetached, nil},
	{"NetworkDownThenUp", conformNetworkBack, nil},
	{"NetworkWaitLimit", conformNetworkLimit, func(c *shimconfig.Config) { c.NetworkWait = 2 * time.Second }},
	{"TransientThenSuccess", conformTransient, nil},
	{"TurnTimeout", conformTurnTimeout, func(c *shimconfig.Config) { c.TurnTimeout = 3 * time.Second }},
	{"ShutdownMidTurn", conformShutdown, nil},
}

func TestConformance(t *testing.T) {
	// The Codex CLI it runs is the one asked for: the pin, or
	// $BATTY_CODEX_VERSION (scripts/test.sh runs the suite once for
	// each tested version).
	bin := codextest.Codex(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v: %s", bin, err, out)
	}
	got := codex.VersionOf(string(out))
	if os.Getenv("BATTY_CODEX_BIN") == "" && got != codextest.Version() {
		t.Fatalf("%s is codex %q, want %s", bin, got, codextest.Version())
	}
	t.Logf("conformance of codex %s (%s)", got, bin)
	for _, rt := range conformanceRuntimes {
		t.Run(rt, func(t *testing.T) {
			for _, c := range conformanceCases {
				t.Run(c.name, func(t *testing.T) {
					h, srv := startConformingShim(t, rt, c.mod)
					c.run(t, h, srv)
				})
			}
		})
	}
}

// turnEvents collects the events up to and including the TurnFinished of
// message id, and returns them with that TurnFinished.
func turnEvents(h *harness, id string) ([]protocol.Message, protocol.TurnFinished) {
	h.t.Helper()
	var got []protocol.Message
	for {
		m := h.next()
		got = append(got, m)
		if tf, ok := m.(protocol.TurnFinished); ok && tf.MessageID == id {
			return got, tf
		}
	}
}

// eventOf returns the first event of kind k in ms, failing the test when
// there is none.
func eventOf(t *testing.T, ms []protocol.Message, k protocol.Kind) protocol.Message {
	t.Helper()
	for _, m := range ms {
		if m.Kind() == k {
			return m
		}
	}
	t.Fatalf("no %s among the turn's events (%s)", k, describe(ms))
	return nil
}

// conformTextAndResume: two turns on one thread; the second resumes the
// first's thread, and its model request carries the first turn's text.
func conformTextAndResume(t *testing.T, h *harness, srv *codextest.Server) {
	h.send("m1", "first question [[mock:reply FIRST_ANSWER]]")
	ev, tf := turnEvents(h, "m1")
	thread := eventOf(t, ev, kThread).(protocol.ThreadChanged).ThreadID
	if ts := eventOf(t, ev, kStarted).(protocol.TurnStarted); ts.Resume {
		t.Fatalf("first turn started as a resume: %+v", ts)
	}
	if tf.Status != protocol.TurnCompleted || tf.Reply != "FIRST_ANSWER" || tf.ThreadID != thread || thread == "" || tf.Usage.Input == 0 {
		t.Fatalf("first turn = %+v (thread %q)", tf, thread)
	}

	h.send("m2", "second question [[mock:reply SECOND_ANSWER]]")
	ev, tf = turnEvents(h, "m2")
	if ts := eventOf(t, ev, kStarted).(protocol.TurnStarted); !ts.Resume || ts.ThreadID != thread {
		t.Fatalf("second turn started = %+v, want a resume of %s", ts, thread)
	}
	for _, m := range ev {
		if tc, ok := m.(protocol.ThreadChanged); ok {
			t.Fatalf("second turn changed the thread: %+v", tc)
		}
	}
	if tf.Status != protocol.TurnCompleted || tf.Reply != "SECOND_ANSWER" || tf.ThreadID != thread {
		t.Fatalf("second turn = %+v", tf)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	history := strings.Join(reqs[1].InputTexts, "\n")
	for _, want := range []string{"first question", "FIRST_ANSWER", "second question"} {
		if !strings.Contains(history, want) {
			t.Errorf("second request lacks %q in its input", want)
		}
	}
}

// conformToolCall: the model calls the shell tool; codex runs the command
// and the model's follow-up answers with its output.
func conformToolCall(t *testing.T, h *harness, srv *codextest.Server) {
	h.send("s", "run it [[mock:shell echo CONFORM_SHELL_OK]]")
	_, tf := turnEvents(h, "s")
	if tf.Status != protocol.TurnCompleted || !strings.Contains(tf.Reply, "CONFORM_SHELL_OK") {
		t.Fatalf("shell turn = %+v", tf)
	}
	if tf.Items < 2 {
		t.Fatalf("shell turn counted %d items, want the command and the message", tf.Items)
	}
	var followUp bool
	for _, r := range srv.Requests() {
		followUp = followUp || r.FollowUp
	}
	if !followUp {
		t.Fatal("no follow-up model request carried the command's output")
	}
}

// conformQuota: a usage limit blocks the agent until the time codex names.
func conformQuota(t *testing.T, h *harness, _ *codextest.Server) {
	h.send("q", "please [[mock:quota]]")
	ev, tf := turnEvents(h, "q")
	qb := eventOf(t, ev, kQuota).(protocol.QuotaBlocked)
	// The mock resets the limit in one hour; codex prints it to the minute.
	if d := time.Until(qb.RetryAt); d < 55*time.Minute || d > 65*time.Minute {
		t.Fatalf("retry at %s (in %s), want about an hour from now; message %q", qb.RetryAt, d, qb.Message)
	}
	if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailQuota {
		t.Fatalf("quota turn = %+v", tf)
	}
}

// conformQuotaHeaders: a usage limit whose message names no reset time
// blocks the agent; the app-server runtime takes the reset time from the
// rate-limit snapshot codex reported with it (the response's
// x-codex-primary-* headers), which exec's output does not carry.
func conformQuotaHeaders(t *testing.T, h *harness, _ *codextest.Server) {
	h.send("q", "please [[mock:quotaheaders]]")
	ev, tf := turnEvents(h, "q")
	qb := eventOf(t, ev, kQuota).(protocol.QuotaBlocked)
	if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailQuota {
		t.Fatalf("quota turn = %+v", tf)
	}
	switch d := time.Until(qb.RetryAt); h.cfg.Runtime {
	case shimconfig.RuntimeAppServer:
		if d < 85*time.Minute || d > 95*time.Minute {
			t.Fatalf("retry at %s (in %s), want the snapshot's reset in 90 minutes; message %q", qb.RetryAt, d, qb.Message)
		}
	default:
		if !qb.RetryAt.IsZero() {
			t.Fatalf("retry at %s from a message naming none: %q", qb.RetryAt, qb.Message)
		}
	}
}

// conformAuth: a refused credential asks for a login.
func conformAuth(t *testing.T, h *harness, _ *codextest.Server) {
	h.send("a", "please [[mock:auth]]")
	ev, tf := turnEvents(h, "a")
	eventOf(t, ev, kAuth)
	if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailAuth {
		t.Fatalf("auth turn = %+v", tf)
	}
}

// conformContextWindow: a full context window is reported as such, and
// the next turn on the same thread (the daemon's retry) completes with
// the usage of that turn alone. With the app-server the thread is
// compacted before the failed turn ends.
func conformContextWindow(t *testing.T, h *harness, srv *codextest.Server) {
	h.send("c", "too long [[mock:context]]")
	ev, tf := turnEvents(h, "c")
	eventOf(t, ev, kContextEx)
	if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailContextWindow {
		t.Fatalf("context turn = %+v", tf)
	}
	compacted := 0
	for _, r := range srv.Requests() {
		if r.Kind == "compaction" {
			compacted++
		}
	}
	if want := map[string]int{shimconfig.RuntimeExec: 0, shimconfig.RuntimeAppServer: 1}[h.cfg.Runtime]; compacted != want {
		t.Fatalf("%d compaction requests before the failed turn ended, want %d", compacted, want)
	}
	h.send("n", "again [[mock:reply AFTER_CONTEXT]]")
	ev, tf = turnEvents(h, "n")
	if ts := eventOf(t, ev, kStarted).(protocol.TurnStarted); !ts.Resume {
		t.Fatalf("the turn after the failure did not resume the thread: %+v", ts)
	}
	if tf.Status != protocol.TurnCompleted || tf.Reply != "AFTER_CONTEXT" || tf.Usage.Input <= 0 || tf.Usage.Input > 100_000 {
		t.Fatalf("turn after the full window = %+v", tf)
	}
}

// conformInterrupt: an interrupted turn ends as interrupted while the
// model is still answering, and the shim takes the next message.
func conformInterrupt(t *testing.T, h *harness, srv *codextest.Server) {
	h.send("i", "wait [[mock:slow 60]]")
	for h.next().Kind() != kStarted {
	}
	// Interrupt once the model request is under way.
	deadline := time.Now().Add(eventWait)
	for len(srv.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("codex sent no model request")
		}
		time.Sleep(20 * time.Millisecond) // the mock records requests; no event says so
	}
	h.command(protocol.Interrupt{})
	_, tf := turnEvents(h, "i")
	if tf.Status != protocol.TurnInterrupted {
		t.Fatalf("interrupted turn = %+v", tf)
	}
	h.send("n", "next [[mock:reply AFTER_INTERRUPT]]")
	if _, tf := turnEvents(h, "n"); tf.Status != protocol.TurnCompleted || tf.Reply != "AFTER_INTERRUPT" {
		t.Fatalf("turn after the interrupt = %+v", tf)
	}
}

// conformKill: a shim killed while a command runs (one of them detached
// into its own session) ends the turn as interrupted, exits, and leaves no
// process behind.
func conformKill(t *testing.T, h *harness, _ *codextest.Server) {
	h.send("k", "[[mock:shell setsid sleep 3141 >/dev/null 2>&1 < /dev/null & sleep 3142]]")
	waitForProcess(t, h.mark, "sleep 3141")
	waitForProcess(t, h.mark, "sleep 3142")
	h.command(protocol.Kill{})
	if _, tf := turnEvents(h, "k"); tf.Status != protocol.TurnInterrupted {
		t.Fatalf("killed turn = %+v", tf)
	}
	if code := h.waitExit(); code != 0 {
		t.Fatalf("shim exit code %d", code)
	}
	h.noProcesses()
}

// conformDetached: a command detached into its own session during a turn
// that completes is gone once the turn has ended, and the shim takes the
// next message.
func conformDetached(t *testing.T, h *harness, _ *codextest.Server) {
	h.send("d", "[[mock:shell setsid sleep 3143 >/dev/null 2>&1 </dev/null & sleep 0.3; kill -0 $! && echo DETACHED_ALIVE]]")
	_, tf := turnEvents(h, "d")
	if tf.Status != protocol.TurnCompleted || !strings.Contains(tf.Reply, "DETACHED_ALIVE") {
		t.Fatalf("turn = %+v", tf)
	}
	// The turn ends only once its leftovers are reaped: no wait needed.
	for _, pid := range codextest.Marked(h.mark) {
		if cmd := codextest.Cmdline(pid); strings.Contains(cmd, "sleep 3143") {
			t.Fatalf("the detached command outlived its turn: pid %d %q", pid, cmd)
		}
	}
	h.send("n", "next [[mock:reply AFTER_DETACHED]]")
	if _, tf := turnEvents(h, "n"); tf.Status != protocol.TurnCompleted || tf.Reply != "AFTER_DETACHED" {
		t.Fatalf("next turn = %+v", tf)
	}
}

// networkWaitStarts sends message id with the API unreachable and
// returns the events up to the NetworkWait that says the turn waits.
func networkWaitStarts(t *testing.T, h *harness, srv *codextest.Server, id string) []protocol.Message {
	t.Helper()
	if err := srv.Refuse(); err != nil {
		t.Fatal(err)
	}
	h.send(id, "offline [[mock:reply BACK_ONLINE]]")
	var got []protocol.Message
	for {
		m := h.next()
		got = append(got, m)
		if nw, ok := m.(protocol.NetworkWait); ok {
			if !nw.Waiting || nw.MessageID != id || nw.Since.IsZero() || !strings.Contains(nw.Message, "waiting for network") {
				t.Fatalf("first network event = %+v", nw)
			}
			return got
		}
		if _, ok := m.(protocol.TurnFinished); ok {
			t.Fatalf("the turn ended without waiting for the network: %s", describe(got))
		}
	}
}

// conformNetworkBack: with the API unreachable the turn waits for the
// network (NetworkWait), and once it is back the wait ends (NetworkWait
// not waiting) and the turn completes.
func conformNetworkBack(t *testing.T, h *harness, srv *codextest.Server) {
	networkWaitStarts(t, h, srv, "o")
	if err := srv.Accept(); err != nil {
		t.Fatal(err)
	}
	ev, tf := turnEvents(h, "o")
	var ended bool
	for _, m := range ev {
		if nw, ok := m.(protocol.NetworkWait); ok && !nw.Waiting {
			ended = true
		}
	}
	if !ended {
		t.Fatalf("no NetworkWait ended the wait: %s", describe(ev))
	}
	if tf.Status != protocol.TurnCompleted || tf.Reply != "BACK_ONLINE" {
		t.Fatalf("turn after the outage = %+v", tf)
	}
}

// conformNetworkLimit: a wait for the network longer than network_wait
// ends the turn as a network failure.
func conformNetworkLimit(t *testing.T, h *harness, srv *codextest.Server) {
	networkWaitStarts(t, h, srv, "o")
	_, tf := turnEvents(h, "o")
	if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailNetwork || !strings.Contains(tf.Error, "network_wait") {
		t.Fatalf("turn = %+v", tf)
	}
}

// TestConformanceAddDir: under the workspace-write sandbox, a command may
// write into a directory added with Exec.AddDirs outside its working
// directory, and not into another one. /tmp, where the test's directories
// live, is taken out of the sandbox's writable roots.
func TestConformanceAddDir(t *testing.T) {
	bin := codextest.Codex(t)
	if out, err := exec.Command(bin, "sandbox", "--", "/bin/true").CombinedOutput(); err != nil {
		t.Skipf("codex's sandbox cannot run on this machine (%v): %s", err, out)
	}
	for _, rt := range conformanceRuntimes {
		t.Run(rt, func(t *testing.T) {
			added, other := t.TempDir(), t.TempDir()
			h, _ := startConformingShim(t, rt, func(c *shimconfig.Config) {
				c.Exec.Sandbox = codex.SandboxWorkspaceWrite
				c.Exec.ApprovalPolicy = codex.ApprovalNever
				c.Exec.AddDirs = []string{added}
				c.Exec.Config = []string{"sandbox_workspace_write.exclude_slash_tmp=true", "sandbox_workspace_write.exclude_tmpdir_env_var=true"}
			})
			h.send("w", fmt.Sprintf("[[mock:shell touch %s/in-added; touch %s/in-other; echo WROTE]]", added, other))
			if _, tf := turnEvents(h, "w"); tf.Status != protocol.TurnCompleted {
				t.Fatalf("turn = %+v", tf)
			}
			if _, err := os.Stat(filepath.Join(added, "in-added")); err != nil {
				t.Fatalf("the command could not write into the added directory: %v", err)
			}
			if _, err := os.Stat(filepath.Join(other, "in-other")); err == nil {
				t.Fatal("the sandbox let the command write outside its writable roots")
			}
		})
	}
}

// conformTransient: a server error that codex retries by itself (stream
// retries 1) and then gets an answer for ends the turn once, completed.
func conformTransient(t *testing.T, h *harness, srv *codextest.Server) {
	srv.WriteHomeWith(t, codextest.HomeConfig{Dir: agentenv.Lookup(h.cfg.Env, "CODEX_HOME"), StreamMaxRetries: 1})
	var n atomic.Int32
	srv.Handle(func(r codextest.Request) codextest.Reply {
		if n.Add(1) == 1 {
			return codextest.ServerErrorReply()
		}
		return srv.Scripted(r)
	})
	h.send("r", "flaky [[mock:reply AFTER_RETRY]]")
	_, tf := turnEvents(h, "r")
	if tf.Status != protocol.TurnCompleted || tf.Reply != "AFTER_RETRY" {
		t.Fatalf("turn = %+v", tf)
	}
	if got := len(srv.Requests()); got != 2 {
		t.Fatalf("%d model requests, want the failed one and its retry", got)
	}
	// One outcome: the next TurnFinished is the next message's.
	h.send("n", "next [[mock:reply NEXT]]")
	for {
		if tf, ok := h.next().(protocol.TurnFinished); ok {
			if tf.MessageID != "n" || tf.Status != protocol.TurnCompleted {
				t.Fatalf("after the retried turn: %+v", tf)
			}
			return
		}
	}
}

// conformTurnTimeout: a turn longer than the turn timeout is stopped and
// ends as timed out; the next message runs.
func conformTurnTimeout(t *testing.T, h *harness, _ *codextest.Server) {
	h.send("s", "wait [[mock:slow 60]]")
	_, tf := turnEvents(h, "s")
	if tf.Status != protocol.TurnTimedOut || !strings.Contains(tf.Error, "turn timeout") {
		t.Fatalf("turn = %+v", tf)
	}
	h.send("n", "next [[mock:reply AFTER_TIMEOUT]]")
	if _, tf := turnEvents(h, "n"); tf.Status != protocol.TurnCompleted || tf.Reply != "AFTER_TIMEOUT" {
		t.Fatalf("turn after the timeout = %+v", tf)
	}
}

// conformShutdown: a shutdown whose timeout passes while a turn runs ends
// that turn and the queued one as interrupted; the shim stops, exits 0
// and leaves no process behind.
func conformShutdown(t *testing.T, h *harness, srv *codextest.Server) {
	h.send("run", "wait [[mock:slow 60]]")
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	if err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.send("queued", "never runs")
	h.command(protocol.Shutdown{Timeout: 200 * time.Millisecond, Reason: "test"})
	done := map[string]protocol.TurnStatus{}
	var stopped bool
	for len(done) < 2 || !stopped {
		switch m := h.next().(type) {
		case protocol.TurnFinished:
			done[m.MessageID] = m.Status
		case protocol.StateChanged:
			stopped = stopped || m.To == protocol.StateStopped
		}
	}
	if done["run"] != protocol.TurnInterrupted || done["queued"] != protocol.TurnInterrupted {
		t.Fatalf("turns ended %v, want both interrupted", done)
	}
	if code := h.waitExit(); code != 0 {
		t.Fatalf("shim exit code %d", code)
	}
	h.noProcesses()
	if got := len(srv.Requests()); got != 1 {
		t.Fatalf("%d model requests, want 1 (the queued message never runs)", got)
	}
}

// A reply of several pieces (here 3 MiB) reaches the parent whole, joined
// from its pieces, on either runtime.
func TestConformanceBigReply(t *testing.T) {
	for _, rt := range conformanceRuntimes {
		t.Run(rt, func(t *testing.T) {
			h, srv := startConformingShim(t, rt, nil)
			big := strings.Repeat("0123456789abcdef", 3<<20/16)
			srv.Handle(func(req codextest.Request) codextest.Reply {
				if strings.Contains(req.LastUserText(), "BIG") {
					return codextest.Reply{Text: big}
				}
				return srv.Scripted(req)
			})
			h.send("b", "say something BIG")
			_, tf := turnEvents(h, "b")
			if tf.Status != protocol.TurnCompleted || tf.Reply != big || tf.ReplySize != int64(len(big)) {
				t.Fatalf("turn = status %s, reply %d bytes (size %d); want the %d bytes whole", tf.Status, len(tf.Reply), tf.ReplySize, len(big))
			}
		})
	}
}

// A shim started again with the thread its predecessor reported, as the
// daemon does after a restart, resumes it on either runtime: the first
// request of the new shim carries the earlier turn.
func TestConformanceRestartKeepsTheThread(t *testing.T) {
	for _, rt := range conformanceRuntimes {
		t.Run(rt, func(t *testing.T) {
			cwd := t.TempDir()
			var srv *codextest.Server
			var start func(thread string) *harness
			if rt == runtimePerAccount {
				// Both shims on one shared server, as the daemon's
				// restarted shim would be.
				ss := startSharedServer(t, nil)
				srv = ss.srv
				start = func(thread string) *harness {
					return ss.shim(t, "tester", cwd, newTestMark(), func(c *shimconfig.Config) { c.ThreadID = thread })
				}
				defer t.Cleanup(ss.close(t))
			} else {
				bin := codextest.Codex(t)
				srv = codextest.NewServer(t)
				home := srv.WriteHome(t)
				start = func(thread string) *harness {
					return startShim(t, func(c *shimconfig.Config) {
						c.CodexBin, c.Env, c.Cwd, c.Runtime, c.ThreadID = bin, []string{"CODEX_HOME=" + home}, cwd, rt, thread
						c.Exec.SkipGitRepoCheck = true
						c.StopGrace = 2 * time.Second
					})
				}
			}
			h := start("")
			h.send("m1", "remember KESTREL [[mock:reply NOTED]]")
			_, tf := turnEvents(h, "m1")
			if tf.Status != protocol.TurnCompleted || tf.ThreadID == "" {
				t.Fatalf("first shim's turn = %+v", tf)
			}
			h.command(protocol.Shutdown{Timeout: 5 * time.Second, Reason: "daemon restart"})
			if code := h.waitExit(); code != 0 {
				t.Fatalf("the first shim exited %d", code)
			}

			h2 := start(tf.ThreadID)
			h2.send("m2", "which bird? [[mock:reply KESTREL]]")
			ev, tf2 := turnEvents(h2, "m2")
			if ts := eventOf(t, ev, kStarted).(protocol.TurnStarted); !ts.Resume || ts.ThreadID != tf.ThreadID {
				t.Fatalf("second shim's turn started = %+v, want a resume of %s", ts, tf.ThreadID)
			}
			if tf2.Status != protocol.TurnCompleted || tf2.ThreadID != tf.ThreadID {
				t.Fatalf("second shim's turn = %+v", tf2)
			}
			reqs := srv.Requests()
			last := strings.Join(reqs[len(reqs)-1].InputTexts, "\n")
			if !strings.Contains(last, "remember KESTREL") || !strings.Contains(last, "NOTED") {
				t.Fatalf("the second shim's request lacks the earlier turn:\n%s", last)
			}
		})
	}
}
