package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

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
	e := protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream, Transient: protocol.TransientServer, Error: "We’re currently experiencing high demand"}
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
