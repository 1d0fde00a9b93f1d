package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

func TestRetryCause(t *testing.T) {
	failed := func(k protocol.FailureKind, msg string) protocol.TurnFinished {
		return protocol.TurnFinished{Status: protocol.TurnFailed, Failure: k, Error: msg}
	}
	cases := []struct {
		e    protocol.TurnFinished
		want string
	}{
		{failed(protocol.FailStream, "We’re currently experiencing high demand, which may cause temporary errors."), "a server error"},
		{failed(protocol.FailStream, "Selected model is at capacity. Please try a different model."), "an overloaded model"},
		{failed(protocol.FailStream, "exceeded retry limit, last status: 429 Too Many Requests, request id: x"), "a rate limit"},
		{failed(protocol.FailStream, "stream disconnected before completion: Transport error: network error: error decoding response body"), "a dropped stream"},
		{failed(protocol.FailStream, "the model said no"), ""},
		{failed(protocol.FailNetwork, "codex could not reach the API for 30m0s"), "an unreachable API"},
		{protocol.TurnFinished{Status: protocol.TurnTimedOut, Error: "codex printed nothing for 10m0s (idle timeout)"}, "a timeout"},
		{failed(protocol.FailQuota, "You’ve hit your usage limit."), ""},
		{failed(protocol.FailAuth, "401 Unauthorized"), ""},
		{failed(protocol.FailContextWindow, "out of room"), ""},
		{failed(protocol.FailExit, "codex exited with status 3"), ""},
		{failed(protocol.FailSpawn, "no such file"), ""},
		{failed(protocol.FailInputTooLarge, "Input exceeds"), ""},
		{protocol.TurnFinished{Status: protocol.TurnInterrupted, Error: "stopped"}, ""},
		{protocol.TurnFinished{Status: protocol.TurnCompleted}, ""},
	}
	for _, c := range cases {
		if got := retryCause(c.e); got != c.want {
			t.Errorf("retryCause(%s %s %q) = %q, want %q", c.e.Status, c.e.Failure, c.e.Error, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	s := time.Second
	cases := []struct {
		n        int
		r        float64
		min, max time.Duration
	}{
		{1, 0, 5 * s, 5 * s},      // base 10 s: half fixed
		{1, 0.999, 5 * s, 10 * s}, // plus up to the other half
		{2, 0, 10 * s, 10 * s},
		{3, 0.5, 30 * s, 30 * s},
		{6, 0, 150 * s, 150 * s}, // capped at 5 min
		{50, 1, 300 * s, 300 * s},
		{1000000, 0.2, 150 * s, 300 * s},
		{0, 0, 5 * s, 5 * s},
		{2, -3, 10 * s, 10 * s}, // r outside [0,1) is clamped
		{2, 7, 20 * s, 20 * s},
	}
	for _, c := range cases {
		got := backoff(c.n, 10*s, 300*s, c.r)
		if got < c.min || got > c.max {
			t.Errorf("backoff(%d, r=%v) = %s, want %s..%s", c.n, c.r, got, c.min, c.max)
		}
	}
	// Jitter spreads agents that failed together.
	if backoff(2, 10*s, 300*s, 0.1) == backoff(2, 10*s, 300*s, 0.9) {
		t.Error("no jitter")
	}
}

func TestRetryNote(t *testing.T) {
	n := retryNote(2, 3, "a server error", "We’re currently experiencing high demand", false)
	if !strings.HasPrefix(n, "retry 2 of 3 after a server error: We’re currently experiencing high demand; ") ||
		strings.Contains(n, "cut off") || strings.Contains(n, "check what is already done") {
		t.Errorf("note %q", n)
	}
	n = retryNote(3, 3, "a timeout", "codex printed nothing for 10m0s (idle timeout)", true)
	if !strings.Contains(n, "check what is already done") {
		t.Errorf("note after work %q", n)
	}
	long := retryNote(2, 3, "a dropped stream", strings.Repeat("é", 5000), false)
	if len([]rune(long)) > 400 {
		t.Errorf("note of %d characters", len([]rune(long)))
	}
}

func TestDecideRetry(t *testing.T) {
	now := time.Now()
	e := protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream, Error: "We’re currently experiencing high demand"}
	msg := func(failures int) inbox.Message {
		if failures == 0 {
			return inbox.Message{ID: "m"}
		}
		return inbox.Message{ID: "m", Transient: &inbox.TransientRetry{Failures: failures}}
	}
	s := time.Second
	cases := []struct {
		prior, max int
		r          float64
		retry      bool
		delay      time.Duration
		note       string
		final      string
	}{
		{0, 3, 0, true, 5 * s, "retry 2 of 3 after a server error: We’re currently experiencing high demand; ", ""},
		{1, 3, 0.5, true, 15 * s, "retry 3 of 3 after a server error", ""},
		{2, 3, 0, false, 0, "", "failed 3 of 3 attempts, the last after a server error: We’re currently experiencing high demand"},
		{0, 1, 0, false, 0, "", "We’re currently experiencing high demand"}, // max_attempts 1: never retried, the error as is
		{5, 3, 0, false, 0, "", "failed 6 of 3 attempts"},                   // max_attempts lowered since
	}
	for _, c := range cases {
		v := decideRetry(msg(c.prior), e, "a server error", c.max, now, 10*s, 300*s, c.r)
		if v.retry != c.retry || v.delay != c.delay || !strings.HasPrefix(v.record.Note, c.note) || !strings.HasPrefix(v.final, c.final) {
			t.Errorf("prior %d of %d: %+v", c.prior, c.max, v)
		}
		if v.retry && (v.record.Failures != c.prior+1 || !v.record.NotBefore.Equal(now.Add(c.delay)) || v.record.LastError != e.Error) {
			t.Errorf("prior %d: record %+v", c.prior, v.record)
		}
	}
	// An attempt that had begun working says to check what is done.
	e.Items = 2
	if v := decideRetry(msg(0), e, "a server error", 3, now, 10*s, 300*s, 0); !strings.Contains(v.record.Note, "check what is already done") {
		t.Errorf("note after work: %q", v.record.Note)
	}
}
