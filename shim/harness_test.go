package shim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/syncbuf"
)

// TestMain lets this test binary also be a shim and a fake codex, selected
// by BATTY_TEST_ROLE (the helper-process pattern of os/exec's tests).
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "shim":
		os.Exit(Main(os.Args[1:]))
	case "fakecodex":
		os.Exit(codextest.FakeMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// eventWait bounds every wait for an event; generous for a loaded CI box.
const eventWait = 30 * time.Second

// harness is one real shim process, with the fake codex as its worker,
// driven over a real socketpair.
type harness struct {
	t      *testing.T
	p      *shimclient.Process
	cfg    shimconfig.Config
	mark   string
	events chan protocol.Message
	log    *syncbuf.Buffer
	// tlines holds the lines of the TranscriptLines events, which are
	// kept out of events.
	tlines syncbuf.Buffer
	// spare, when set, returns processes that carry the mark and are not
	// the shim's: a shared app-server the test runs (startSharedShim).
	spare func() []int
}

// noProcesses fails when any live process carries the test's mark but
// the spared ones (h.spare): the shim, codex, or anything they started.
func (h *harness) noProcesses() {
	h.t.Helper()
	spared := map[int]bool{}
	if h.spare != nil {
		for _, pid := range h.spare() {
			spared[pid] = true
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, pid := range codextest.Marked(h.mark) {
			if !spared[pid] {
				left = append(left, fmt.Sprintf("%d %q", pid, codextest.Cmdline(pid)))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("processes left: %v", left)
		}
		time.Sleep(20 * time.Millisecond) // a killed process may take a moment to exit
	}
}

// startShim spawns a shim whose codex is the fake; mod adjusts the config.
// Cleanup kills it and asserts that no process it started is left.
func startShim(t *testing.T, mod func(*shimconfig.Config)) *harness {
	t.Helper()
	return startShimMarked(t, newTestMark(), mod)
}

// newTestMark is a value of BATTY_TEST_MARK for one shim's test.
func newTestMark() string {
	return fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
}

// startShimMarked is startShim with the test's mark given.
func startShimMarked(t *testing.T, mark string, mod func(*shimconfig.Config)) *harness {
	t.Helper()
	return startShimWith(t, mark, mod, true)
}

// startShimWith is startShimMarked; with join false the events are the
// frames as the shim sent them, the replies in their pieces.
func startShimWith(t *testing.T, mark string, mod func(*shimconfig.Config), join bool) *harness {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := shimconfig.Config{
		Agent:      "tester",
		CodexBin:   self,
		Env:        []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + t.TempDir()},
		Transcript: filepath.Join(t.TempDir(), "tester.log"),
		StopGrace:  300 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	h := &harness{t: t, cfg: cfg, mark: mark, events: make(chan protocol.Message, 1024), log: &syncbuf.Buffer{}}
	env := append(os.Environ(), "BATTY_TEST_ROLE=shim", "BATTY_TEST_MARK="+mark, "BATTY_LOG_LEVEL=debug", "TZ=UTC")
	h.p, err = shimclient.Spawn(shimclient.SpawnOptions{Path: self, Env: env, Config: cfg, Stderr: h.log})
	if err != nil {
		t.Fatalf("spawn shim: %v", err)
	}
	go func() {
		defer close(h.events)
		// The replies are joined as a driver's Client joins them.
		var replies shimclient.ReplyJoin
		for {
			m, err := h.p.Conn.Recv()
			if err == nil && join {
				m, err = replies.Take(m)
			}
			if err != nil {
				return
			}
			if m == nil {
				continue
			}
			if tl, ok := m.(protocol.TranscriptLines); ok {
				for _, l := range tl.Lines {
					h.tlines.Write([]byte(l + "\n"))
				}
				continue
			}
			h.events <- m
		}
	}()
	t.Cleanup(func() {
		h.p.Kill()
		if t.Failed() {
			t.Logf("shim log:\n%s", h.log.String())
		}
		assertNoProcesses(t, mark)
	})
	h.expectState(protocol.StateStarting, protocol.StateIdle)
	return h
}

func (h *harness) send(id, body string) {
	h.t.Helper()
	if err := h.p.Conn.Send(protocol.SendMessage{ID: id, From: "human", Body: body}); err != nil {
		h.t.Fatalf("send %s: %v", id, err)
	}
}

func (h *harness) command(m protocol.Message) {
	h.t.Helper()
	if err := h.p.Conn.Send(m); err != nil {
		h.t.Fatalf("send %s: %v", m.Kind(), err)
	}
}

// next returns the next event, failing the test after eventWait.
func (h *harness) next() protocol.Message {
	h.t.Helper()
	select {
	case m, ok := <-h.events:
		if !ok {
			h.t.Fatalf("control channel closed while waiting for an event")
		}
		return m
	case <-time.After(eventWait):
		h.t.Fatalf("no event within %s", eventWait)
	}
	return nil
}

// expect asserts the exact kinds of the next events and returns them.
func (h *harness) expect(kinds ...protocol.Kind) []protocol.Message {
	h.t.Helper()
	var got []protocol.Message
	for i, k := range kinds {
		m := h.next()
		got = append(got, m)
		if m.Kind() != k {
			h.t.Fatalf("event %d: got %s %+v, want %s (so far: %s)", i, m.Kind(), m, k, describe(got))
		}
	}
	return got
}

func (h *harness) expectState(from, to protocol.State) protocol.StateChanged {
	h.t.Helper()
	sc := h.expect(protocol.KindStateChanged)[0].(protocol.StateChanged)
	if sc.From != from || sc.To != to {
		h.t.Fatalf("state changed %s→%s, want %s→%s", sc.From, sc.To, from, to)
	}
	return sc
}

// finished reads a TurnFinished and checks its id and status.
func (h *harness) finished(id string, status protocol.TurnStatus) protocol.TurnFinished {
	h.t.Helper()
	tf := h.expect(protocol.KindTurnFinished)[0].(protocol.TurnFinished)
	if tf.MessageID != id || tf.Status != status {
		h.t.Fatalf("turn finished %s %s (%s: %s), want %s %s", tf.MessageID, tf.Status, tf.Failure, tf.Error, id, status)
	}
	return tf
}

// transcriptAfterStop shuts the idle shim down, waits for it to exit (its
// transcript writer flushes on the way out) and returns the transcript file:
// what `batty logs` shows a human.
func (h *harness) transcriptAfterStop() string {
	h.t.Helper()
	h.command(protocol.Shutdown{Reason: "test"})
	if code := h.waitExit(); code != 0 {
		h.t.Fatalf("shim exit code = %d", code)
	}
	b, err := os.ReadFile(h.cfg.Transcript)
	if err != nil {
		h.t.Fatalf("read the transcript: %v", err)
	}
	return string(b)
}

// waitExit waits for the shim to exit and returns its exit code.
func (h *harness) waitExit() int {
	h.t.Helper()
	select {
	case <-h.p.Done():
	case <-time.After(eventWait):
		h.t.Fatalf("shim did not exit within %s", eventWait)
	}
	return h.p.ExitCode()
}

func describe(ms []protocol.Message) string {
	var k []string
	for _, m := range ms {
		k = append(k, string(m.Kind()))
	}
	return strings.Join(k, ",")
}

// assertNoProcesses fails when any live process carries the test's mark in
// its environment: the shim, codex, or anything they started.
func assertNoProcesses(t *testing.T, mark string) {
	t.Helper()
	codextest.AssertNoMarked(t, mark)
}
