package shimtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
)

// TestMain lets this test binary be a real shim and the fake codex it
// runs, selected by BATTY_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "shim":
		os.Exit(shim.Main(os.Args[1:]))
	case "fakecodex":
		os.Exit(codextest.FakeMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// eventWait bounds every wait for an event.
const eventWait = 30 * time.Second

// worker is what the suite drives: a real shim (shimclient.Client) or a Fake.
type worker interface {
	Send(protocol.Message) error
	Events() <-chan protocol.Message
	Err() error
	BeginStop(time.Duration, string)
	ExitCode() int
	Close()
}

// conformance is one scenario: it drives w and returns the events it saw,
// normalized (see conformLog); it fails t when w breaks what the protocol
// promises there.
type conformance struct {
	name string
	// thread, when set, is the thread the worker is started on, with the
	// running total codex holds for it.
	thread string
	run    func(t *testing.T, c *conformLog, dir string)
}

var conformanceCases = []conformance{
	{name: "TwoTurnsOnOneThread", run: func(t *testing.T, c *conformLog, _ string) {
		c.send(protocol.SendMessage{ID: "m-1", From: "human", Body: "hello\nworld"}, idle)
		c.send(protocol.SendMessage{ID: "m-2", From: "lead", Body: "again", Attempt: 2, RetryNote: "retry 2 of 3"}, idle)
		if e := c.finished("m-2"); e.Status != protocol.TurnCompleted || e.Reply != "ECHO:again" || e.Thread.Input != 2000 || e.Usage.Input != 1000 {
			t.Errorf("second turn: %+v; want completed, ECHO:again, 1000 of 2000 input tokens", e)
		}
	}},
	{name: "ResumesTheGivenThread", thread: "0a1b2c3d-0000-4000-8000-000000000001", run: func(t *testing.T, c *conformLog, _ string) {
		c.send(protocol.SendMessage{ID: "m-1", From: "human", Body: "scenario:usage:300"}, idle)
		if e := c.finished("m-1"); e.Usage.Input != 300 || e.Thread.Input != 5300 || e.ThreadID != "0a1b2c3d-0000-4000-8000-000000000001" {
			t.Errorf("resumed turn: %+v; want 300 of 5300 input tokens on the given thread", e)
		}
	}},
	{name: "EmptyAnswerAndGate", run: func(t *testing.T, c *conformLog, dir string) {
		c.send(protocol.SendMessage{ID: "m-1", From: "human", Body: "scenario:empty"}, idle)
		gate := filepath.Join(filepath.Dir(dir), "gate")
		os.Remove(gate) // the other worker's
		c.send(protocol.SendMessage{ID: "m-2", From: "human", Body: "scenario:gate:" + gate}, kind(protocol.KindThreadChanged, protocol.KindTurnStarted))
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		c.until(idle)
	}},
	{name: "InterruptAndRefusals", run: func(t *testing.T, c *conformLog, _ string) {
		c.send(protocol.SendMessage{ID: "m-1", From: "human", Body: "scenario:slow:30"}, kind(protocol.KindThreadChanged))
		c.send(protocol.Interrupt{Reason: "test"}, idle)
		if e := c.finished("m-1"); e.Status != protocol.TurnInterrupted {
			t.Errorf("interrupted turn: %+v", e)
		}
		c.send(protocol.Interrupt{}, kind(protocol.KindError))
		c.send(protocol.Ping{Nonce: 7}, kind(protocol.KindPong))
		c.send(protocol.SendMessage{ID: "", From: "human", Body: "x"}, kind(protocol.KindRejected))
		c.send(protocol.SendMessage{ID: "m-2", From: "human", Body: ""}, kind(protocol.KindRejected))
		c.send(protocol.OutgoingAck{Box: "x", Name: "y"}, kind(protocol.KindError))
	}},
	{name: "ResetBetweenAndDuringTurns", run: func(t *testing.T, c *conformLog, _ string) {
		c.send(protocol.SendMessage{ID: "m-1", From: "human", Body: "one"}, idle)
		c.send(protocol.ResetThread{Reason: "fresh"}, kind(protocol.KindThreadChanged))
		c.send(protocol.SendMessage{ID: "m-2", From: "human", Body: "scenario:sleepms:300"}, kind(protocol.KindThreadChanged))
		c.send(protocol.ResetThread{}, nil)
		c.until(idle)
		c.send(protocol.SendMessage{ID: "m-3", From: "human", Body: "three"}, idle)
	}},
	{name: "ShutdownMidTurnWithAQueue", run: func(t *testing.T, c *conformLog, _ string) {
		c.send(protocol.SendMessage{ID: "m-1", From: "human", Body: "scenario:slow:30"}, kind(protocol.KindThreadChanged))
		c.send(protocol.SendMessage{ID: "m-2", From: "human", Body: "queued"}, kind(protocol.KindAccepted))
		c.w.BeginStop(200*time.Millisecond, "test")
		c.until(nil)
		c.exited(t, 0)
	}},
	{name: "KillCommandWhenIdle", run: func(t *testing.T, c *conformLog, _ string) {
		c.send(protocol.Kill{}, nil)
		c.until(nil)
		c.exited(t, 0)
	}},
}

// TestFakeConformsToTheShim runs every scenario against a real shim (this
// binary as `batty shim`, the fake codex as its codex) and against a
// Fake, and requires the same events of both.
func TestFakeConformsToTheShim(t *testing.T) {
	for _, c := range conformanceCases {
		t.Run(c.name, func(t *testing.T) {
			// One directory for both, so that the paths in the bodies match.
			dir := t.TempDir()
			real := runConformance(t, c, startReal, filepath.Join(dir, "shim"))
			fake := runConformance(t, c, startFakeWorker, filepath.Join(dir, "fake"))
			if strings.Join(real, "\n") != strings.Join(fake, "\n") {
				t.Errorf("the fake's events differ from the shim's:\nshim:\n  %s\nfake:\n  %s", strings.Join(real, "\n  "), strings.Join(fake, "\n  "))
			}
		})
	}
}

type starter func(t *testing.T, o shimclient.SpawnOptions) worker

func startReal(t *testing.T, o shimclient.SpawnOptions) worker {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.Path = self
	o.Env = append(os.Environ(), "BATTY_TEST_ROLE=shim", "TZ=UTC")
	o.Config.CodexBin = self
	o.Config.Transcript = filepath.Join(t.TempDir(), "agent.log")
	o.Config.StopGrace = 300 * time.Millisecond
	c, err := shimclient.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("start shim: %v", err)
	}
	return c
}

func startFakeWorker(t *testing.T, o shimclient.SpawnOptions) worker {
	f, err := StartFake(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// runConformance runs c on a worker start gives, with dir (made) as its
// scratch directory, and returns its log.
func runConformance(t *testing.T, c conformance, start starter, dir string) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cfg := shimconfig.Config{Agent: "tester", Env: []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + state}}
	if c.thread != "" {
		// The fake codex holds the thread with its running total.
		if err := os.WriteFile(filepath.Join(state, c.thread+".json"), []byte(`{"input":5000,"output":50,"turns":1}`), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.ThreadID, cfg.ThreadUsage = c.thread, codex.Usage{InputTokens: 5000, OutputTokens: 50}
	}
	w := start(t, shimclient.SpawnOptions{Config: cfg})
	t.Cleanup(w.Close)
	l := &conformLog{t: t, w: w, threads: map[string]string{}}
	if c.thread != "" {
		l.threads[c.thread] = "T0"
	}
	l.until(idle)
	c.run(t, l, dir)
	return l.lines
}

// conformLog is the normalized record of a worker's events: thread ids
// named by their order of appearance, durations and pids left out.
type conformLog struct {
	t       *testing.T
	w       worker
	lines   []string
	seen    []protocol.Message
	threads map[string]string
	closed  bool
}

// idle waits for the worker to go idle.
func idle(m protocol.Message) bool {
	s, ok := m.(protocol.StateChanged)
	return ok && s.To == protocol.StateIdle
}

// kind waits for an event of one of kinds.
func kind(kinds ...protocol.Kind) func(protocol.Message) bool {
	return func(m protocol.Message) bool {
		for _, k := range kinds {
			if m.Kind() == k {
				return true
			}
		}
		return false
	}
}

// send sends m, then records events until one satisfies until (nil: none
// waited for).
func (c *conformLog) send(m protocol.Message, until func(protocol.Message) bool) {
	c.t.Helper()
	if err := c.w.Send(m); err != nil {
		c.t.Fatalf("send %s: %v", m.Kind(), err)
	}
	if until != nil {
		c.until(until)
	}
}

// until records events until one satisfies f; with f nil, until the
// events end.
func (c *conformLog) until(f func(protocol.Message) bool) {
	c.t.Helper()
	deadline := time.After(eventWait)
	for {
		select {
		case m, ok := <-c.w.Events():
			if !ok {
				c.closed = true
				if f != nil {
					c.t.Fatalf("events ended while waiting; so far:\n%s", strings.Join(c.lines, "\n"))
				}
				return
			}
			c.seen = append(c.seen, m)
			c.lines = append(c.lines, c.line(m))
			if f != nil && f(m) {
				return
			}
		case <-deadline:
			c.t.Fatalf("no awaited event within %s; so far:\n%s", eventWait, strings.Join(c.lines, "\n"))
		}
	}
}

// finished is the TurnFinished of id seen so far.
func (c *conformLog) finished(id string) protocol.TurnFinished {
	c.t.Helper()
	for _, m := range c.seen {
		if e, ok := m.(protocol.TurnFinished); ok && e.MessageID == id {
			return e
		}
	}
	c.t.Fatalf("no turn_finished for %s", id)
	return protocol.TurnFinished{}
}

// exited checks that the events ended as a clean exit with code.
func (c *conformLog) exited(t *testing.T, code int) {
	t.Helper()
	if err := c.w.Err(); !errors.Is(err, io.EOF) {
		t.Errorf("Err after the end: %v; want EOF", err)
	}
	if got := c.w.ExitCode(); got != code {
		t.Errorf("exit code %d; want %d", got, code)
	}
}

func (c *conformLog) thread(id string) string {
	if id == "" {
		return ""
	}
	n, ok := c.threads[id]
	if !ok {
		n = fmt.Sprintf("T%d", len(c.threads)+1)
		c.threads[id] = n
	}
	return n
}

// line is m with what differs between runs of the same scenario left
// out.
func (c *conformLog) line(m protocol.Message) string {
	switch e := m.(type) {
	case protocol.TurnStarted:
		e.PID = 0
		e.ThreadID = c.thread(e.ThreadID)
		return fmt.Sprintf("%s %+v", e.Kind(), e)
	case protocol.ThreadChanged:
		e.ThreadID, e.Previous = c.thread(e.ThreadID), c.thread(e.Previous)
		return fmt.Sprintf("%s %+v", e.Kind(), e)
	case protocol.TurnFinished:
		e.Duration = 0
		e.ThreadID = c.thread(e.ThreadID)
		pct := e.ContextPct
		e.ContextPct = 0
		return fmt.Sprintf("%s %+v pct=%.4f", e.Kind(), e, pct)
	case protocol.ContextPressure:
		e.ThreadID = c.thread(e.ThreadID)
		return fmt.Sprintf("%s %+v", e.Kind(), e)
	}
	return fmt.Sprintf("%s %+v", m.Kind(), m)
}
