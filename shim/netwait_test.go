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

// until reads events up to the first of kind and returns it with the events
// before it.
func (h *harness) until(kind protocol.Kind) (protocol.Message, []protocol.Message) {
	h.t.Helper()
	var before []protocol.Message
	for {
		m := h.next()
		if m.Kind() == kind {
			return m, before
		}
		before = append(before, m)
	}
}

func TestClassifyEvent(t *testing.T) {
	cases := []struct {
		ev   codex.Event
		want eventClass
	}{
		{codex.Event{Type: codex.TypeError, Message: codextest.NetworkWaitNotice}, classNetworkWait},
		{codex.Event{Type: codex.TypeError, Message: "Reconnecting... 1/5 (stream disconnected before completion: x)"}, classRetryNotice},
		{codex.Event{Type: codex.TypeError, Message: "stream disconnected before completion: x"}, classOutput},
		{codex.Event{Type: codex.TypeTurnFailed, Message: codextest.NetworkWaitNotice}, classOutput},
		{codex.Event{Type: codex.TypeItemStarted, Item: &codex.Item{Type: codex.ItemCommandExecution}}, classOutput},
		{codex.Event{Type: codex.TypeItemUpdated, Item: &codex.Item{Type: codex.ItemCommandExecution}}, classOutput},
		{codex.Event{Type: codex.TypeTurnStarted}, classOutput},
	}
	for _, c := range cases {
		if got := classifyEvent(c.ev); got != c.want {
			t.Errorf("classifyEvent(%+v) = %v, want %v", c.ev, got, c.want)
		}
	}
}

// Codex waiting for the network prints a notice again and again; that is
// not output. The idle timeout (shorter than the notices' interval would
// keep resetting) does not end the turn: the network wait does, as a
// network failure that names codex's own words.
func TestNetworkWaitEndsAsNetworkFailure(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) {
		c.IdleTimeout = time.Second
		c.NetworkWait = 2500 * time.Millisecond
	})
	start := time.Now()
	h.send("n", "scenario:netdown")
	h.expect(kAccepted, kState, kStarted, kThread)
	nw := h.expect(protocol.KindNetworkWait)[0].(protocol.NetworkWait)
	if !nw.Waiting || nw.MessageID != "n" || nw.Message != codextest.NetworkWaitNotice || nw.Since.IsZero() {
		t.Fatalf("network wait = %+v", nw)
	}
	m, before := h.until(kFinished)
	tf := m.(protocol.TurnFinished)
	if len(before) != 0 {
		t.Errorf("events before the end: %s", describe(before))
	}
	if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailNetwork {
		t.Fatalf("turn = %s %s: %s", tf.Status, tf.Failure, tf.Error)
	}
	if !strings.Contains(tf.Error, "network_wait") || !strings.Contains(tf.Error, codextest.NetworkWaitNotice) {
		t.Errorf("error %q does not name the wait and codex's notice", tf.Error)
	}
	if d := time.Since(start); d < 2500*time.Millisecond {
		t.Errorf("turn ended after %s, before its network wait", d)
	}
	transcript, _ := os.ReadFile(h.cfg.Transcript)
	if !strings.Contains(string(transcript), "waiting for network since") {
		t.Errorf("transcript lacks the wait:\n%s", transcript)
	}
}

// When the API answers again the wait ends, the parent hears so, and the
// turn completes by itself.
func TestNetworkComesBack(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.IdleTimeout = 600 * time.Millisecond })
	h.send("n", "scenario:netwait:10")
	h.expect(kAccepted, kState, kStarted, kThread)
	on := h.expect(protocol.KindNetworkWait)[0].(protocol.NetworkWait)
	off := h.expect(protocol.KindNetworkWait)[0].(protocol.NetworkWait)
	if !on.Waiting || off.Waiting || off.Since.Sub(on.Since).Abs() > 50*time.Millisecond {
		t.Fatalf("waits %+v then %+v", on, off)
	}
	tf := h.finished("n", protocol.TurnCompleted)
	if tf.Reply != "NET_BACK" || tf.Items != 1 {
		t.Fatalf("turn = %+v", tf)
	}
	transcript, _ := os.ReadFile(h.cfg.Transcript)
	for _, want := range []string{"waiting for network since", "the API answered again"} {
		if !strings.Contains(string(transcript), want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
}

// Codex's own retry notices are warnings, not activity: a turn that prints
// nothing else times out.
func TestRetryNoticesAreWarningsNotActivity(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.IdleTimeout = 1500 * time.Millisecond })
	h.send("r", "scenario:retrystorm")
	h.expect(kAccepted, kState, kStarted, kThread)
	m, before := h.until(kFinished)
	tf := m.(protocol.TurnFinished)
	if tf.Status != protocol.TurnTimedOut || !strings.Contains(tf.Error, "idle timeout") {
		t.Fatalf("turn = %s %s: %s", tf.Status, tf.Failure, tf.Error)
	}
	if len(before) == 0 {
		t.Fatal("no warning for codex's retry notices")
	}
	w, ok := before[0].(protocol.Warning)
	if !ok || w.MessageID != "r" || !strings.Contains(w.Message, "Reconnecting... 1/1000") {
		t.Fatalf("first event before the end: %+v", before[0])
	}
}

// A long model command is not silence: the idle timeout waits for it.
func TestLongCommandIsNotSilence(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.IdleTimeout = time.Second })
	h.send("c", "scenario:longcmd:3000")
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("c", protocol.TurnCompleted)
	if tf.Reply != "LONGCMD_DONE" || tf.Items != 2 {
		t.Fatalf("turn = %+v", tf)
	}
	// The command travels with the turn's end, for the turn journal.
	if len(tf.Commands) != 1 || tf.Commands[0].Command != "/bin/bash -lc 'make'" || tf.Commands[0].Output != "built\n" ||
		tf.Commands[0].ExitCode != 0 {
		t.Fatalf("commands = %+v", tf.Commands)
	}
}

// A retried message's header says why, and never that it was cut off.
func TestRetryHeader(t *testing.T) {
	p := FormatPrompt(protocol.SendMessage{ID: "m", From: "human", Body: "do it", Attempt: 2,
		RetryNote: "retry 2 of 3 after a server error:\nWe’re busy"})
	first, _, _ := strings.Cut(p, "\n")
	if first != "--- batty message m from human (retry 2 of 3 after a server error: We’re busy) ---" {
		t.Errorf("header %q", first)
	}
	p = FormatPrompt(protocol.SendMessage{ID: "m", From: "human", Body: "do it", Attempt: 2})
	if !strings.Contains(p, "cut off") {
		t.Errorf("a redelivery without a retry note: %q", p)
	}
}
