package shim

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// runTurn sends one message to h and returns its TurnFinished, skipping the
// events around it.
func runTurn(h *harness, id, body string) protocol.TurnFinished {
	h.t.Helper()
	h.send(id, body)
	for {
		m := h.next()
		if tf, ok := m.(protocol.TurnFinished); ok {
			if tf.MessageID != id || tf.Status != protocol.TurnCompleted {
				h.t.Fatalf("turn finished = %+v, want %s completed", tf, id)
			}
			h.expect(kState)
			return tf
		}
	}
}

// TestResumeWithBaselineCountsOnlyTheNewTurn: a new shim resuming a thread
// (a daemon restart, `batty chat --thread-id`) is given the thread's last
// cumulative usage; its first turn is charged only what it used, not the
// thread's whole history.
func TestResumeWithBaselineCountsOnlyTheNewTurn(t *testing.T) {
	state := t.TempDir()
	withState := func(c *shimconfig.Config) { c.Env = []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + state} }
	first := startShim(t, withState)
	runTurn(first, "1", "scenario:usage:5000")
	tf := runTurn(first, "2", "scenario:usage:3000")
	if tf.Thread.Input != 8000 || tf.Usage.Input != 3000 {
		t.Fatalf("second turn: usage %+v thread %+v", tf.Usage, tf.Thread)
	}
	first.p.Kill()
	first.waitExit()

	thread, base := tf.ThreadID, tf.Thread
	second := startShim(t, func(c *shimconfig.Config) {
		withState(c)
		c.ThreadID = thread
		c.ThreadUsage = codex.Usage{InputTokens: base.Input, CachedInputTokens: base.CachedInput, OutputTokens: base.Output, ReasoningOutputTokens: base.ReasoningOutput}
		c.ContextWindow = 100000
	})
	tf = runTurn(second, "3", "scenario:usage:2000")
	if tf.ThreadID != thread || tf.Usage.Input != 2000 || tf.Usage.Output != 100 || tf.Thread.Input != 10000 {
		t.Fatalf("first turn of the new shim: usage %+v thread %+v on %s, want input 2000 of 10000 on %s", tf.Usage, tf.Thread, tf.ThreadID, thread)
	}
	if want := float64(2000+100) * 100 / 100000; tf.ContextPct != want {
		t.Fatalf("context pct = %v, want %v", tf.ContextPct, want)
	}
}

// TestRunningTotalThatWentDown: when codex restarts the thread's running
// total, the turn is charged the new total, not zero.
func TestRunningTotalThatWentDown(t *testing.T) {
	h := startShim(t, nil)
	runTurn(h, "1", "scenario:usage:5000")
	tf := runTurn(h, "2", "scenario:restart:1200")
	if tf.Usage.Input != 1200 || tf.Usage.Output != 100 || tf.Thread.Input != 1200 {
		t.Fatalf("turn after the restart: usage %+v thread %+v, want 1200 of 1200", tf.Usage, tf.Thread)
	}
	tf = runTurn(h, "3", "scenario:usage:1000")
	if tf.Usage.Input != 1000 || tf.Thread.Input != 2200 {
		t.Fatalf("next turn: usage %+v thread %+v, want 1000 of 2200", tf.Usage, tf.Thread)
	}
}

// TestContextFailureRestartsTheRunningTotal: a context-window failure makes
// codex count the thread's usage from zero again; the next turn is charged
// the whole new total even though it is above the old one.
func TestContextFailureRestartsTheRunningTotal(t *testing.T) {
	h := startShim(t, nil)
	runTurn(h, "1", "scenario:usage:5000")
	h.send("2", "scenario:context")
	for {
		if tf, ok := h.next().(protocol.TurnFinished); ok {
			if tf.Failure != protocol.FailContextWindow || tf.Thread != (protocol.Usage{}) {
				t.Fatalf("context failure: %s, thread usage %+v, want context_window and zero", tf.Failure, tf.Thread)
			}
			break
		}
	}
	h.expect(kState)
	tf := runTurn(h, "3", "scenario:usage:8000")
	if tf.Usage.Input != 8000 || tf.Usage.Output != 100 || tf.Thread.Input != 8000 {
		t.Fatalf("turn after the context failure: usage %+v thread %+v, want 8000 of 8000", tf.Usage, tf.Thread)
	}
}

// TestWebSearchIsNoExtraRequest: a hosted web search runs inside the model
// request, so the turn's whole input is one request's context.
func TestWebSearchIsNoExtraRequest(t *testing.T) {
	h := startShim(t, func(c *shimconfig.Config) { c.ContextWindow = 10000 })
	tf := runTurn(h, "w", "scenario:websearch")
	if want := float64(3000+30) * 100 / 10000; tf.ContextPct != want {
		t.Fatalf("context pct = %v, want %v (input %d)", tf.ContextPct, want, tf.Usage.Input)
	}
}

// TestFatalErrorShownOnce: codex prints its fatal error as an error event
// and again in turn.failed, and a failure before the turn only on stderr;
// the transcript shows each once, in the turn's end line.
func TestFatalErrorShownOnce(t *testing.T) {
	h := startShim(t, nil)
	cases := []struct{ id, body, text string }{
		{"server", "scenario:servererror", "experiencing high demand"},
		{"spawn", "scenario:spawnfail", "Model provider `nonexistent` not found"},
	}
	for _, c := range cases {
		h.send(c.id, c.body)
		for {
			if tf, ok := h.next().(protocol.TurnFinished); ok {
				if tf.MessageID != c.id || tf.Status != protocol.TurnFailed {
					t.Fatalf("turn finished = %+v", tf)
				}
				break
			}
		}
		h.expect(kState)
	}
	text := h.transcriptAfterStop()
	for i, c := range cases {
		start := strings.Index(text, "message "+c.id+" from human")
		if start < 0 {
			t.Fatalf("no turn header for %s in:\n%s", c.id, text)
		}
		turn := text[start:]
		if i+1 < len(cases) {
			if end := strings.Index(turn, "message "+cases[i+1].id+" from human"); end >= 0 {
				turn = turn[:end]
			}
		}
		if n := strings.Count(turn, c.text); n != 1 {
			t.Errorf("%s: the error appears %d times in the turn's transcript, want once:\n%s", c.id, n, turn)
		}
	}
}

// TestInputTooLargeHasItsOwnFailure: a prompt codex refuses as too long is
// the failure input_too_large, not a generic exit.
func TestInputTooLargeHasItsOwnFailure(t *testing.T) {
	h := startShim(t, nil)
	h.send("big", strings.Repeat("é", codex.MaxInputChars))
	for {
		tf, ok := h.next().(protocol.TurnFinished)
		if !ok {
			continue
		}
		if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailInputTooLarge || !strings.Contains(tf.Error, codex.InputTooLargeMessage) {
			t.Fatalf("turn finished = %s %s: %s", tf.Status, tf.Failure, tf.Error)
		}
		return
	}
}

func TestLastRequestUse(t *testing.T) {
	if used, pct := lastRequestUse(codex.RequestUsage{Input: 900, Output: 100, Window: 4000}, 0); used != 1000 || pct != 25 {
		t.Errorf("with codex's window: %d, %v", used, pct)
	}
	if used, pct := lastRequestUse(codex.RequestUsage{Input: 900, Output: 100, Window: 4000}, 2000); used != 1000 || pct != 50 {
		t.Errorf("with the configured window: %d, %v", used, pct)
	}
	if _, pct := lastRequestUse(codex.RequestUsage{Input: 900}, 0); pct != -1 {
		t.Errorf("no window: %v", pct)
	}
}
