package retry

import (
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

// TestRetryCause: the decision reads the failure's typed kinds
// (Failure, Transient), never its text: a message that reads transient
// with no transient kind is final, and the other way round.
func TestRetryCause(t *testing.T) {
	failed := func(k protocol.FailureKind, msg string) protocol.TurnFinished {
		return protocol.TurnFinished{Status: protocol.TurnFailed, Failure: k, Error: msg}
	}
	stream := func(tr protocol.Transient, msg string) protocol.TurnFinished {
		e := failed(protocol.FailStream, msg)
		e.Transient = tr
		return e
	}
	cases := []struct {
		e    protocol.TurnFinished
		want string
	}{
		{stream(protocol.TransientServer, "We’re currently experiencing high demand, which may cause temporary errors."), "a server error"},
		{stream(protocol.TransientOverloaded, "anything"), "an overloaded model"},
		{stream(protocol.TransientRateLimit, "anything"), "a rate limit"},
		{stream(protocol.TransientDropped, "anything"), "a dropped stream"},
		{stream(protocol.TransientStalled, "anything"), "a stalled stream"},
		{stream(protocol.TransientUnreachable, "anything"), "an unreachable API"},
		{stream(protocol.TransientOther, "anything"), "a transient failure"},
		{stream(protocol.TransientNone, "the model said no"), ""},
		{stream(protocol.TransientNone, "unexpected status 502 Bad Gateway"), ""},
		{stream(protocol.Transient("unknown"), "unexpected status 502 Bad Gateway"), ""},
		{failed(protocol.FailQuota, "unexpected status 502 Bad Gateway"), ""},
		{failed(protocol.FailNetwork, "codex could not reach the API for 30m0s"), "an unreachable API"},
		{protocol.TurnFinished{Status: protocol.TurnTimedOut, Error: "codex printed nothing for 10m0s (idle timeout)"}, "a timeout"},
		{failed(protocol.FailQuota, "You’ve hit your usage limit."), ""},
		{failed(protocol.FailAuth, "401 Unauthorized"), ""},
		{failed(protocol.FailContextWindow, "out of room"), ""},
		{failed(protocol.FailExit, "codex exited with status 3"), ""},
		{failed(protocol.FailKilled, "codex was killed by a signal"), KilledCause},
		{failed(protocol.FailSpawn, "no such file"), ""},
		{failed(protocol.FailInputTooLarge, "Input exceeds"), ""},
		{protocol.TurnFinished{Status: protocol.TurnInterrupted, Error: "stopped"}, ""},
		{protocol.TurnFinished{Status: protocol.TurnCompleted}, ""},
	}
	for _, c := range cases {
		if got := Cause(c.e); got != c.want {
			t.Errorf("Cause(%s %s %q) = %q, want %q", c.e.Status, c.e.Failure, c.e.Error, got, c.want)
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
		got := Backoff(c.n, 10*s, 300*s, c.r)
		if got < c.min || got > c.max {
			t.Errorf("Backoff(%d, r=%v) = %s, want %s..%s", c.n, c.r, got, c.min, c.max)
		}
	}
	// Jitter spreads agents that failed together.
	if Backoff(2, 10*s, 300*s, 0.1) == Backoff(2, 10*s, 300*s, 0.9) {
		t.Error("no jitter")
	}
}

// The plan of the next probe: a printed minute is read as its end (by
// codex.ResetBy) plus jitter; a reset time already past is the smallest
// back-off, never "at once"; a probe that hits the limit again backs off
// doubling from one minute, capped; no reset time means a cool-down,
// doubling, capped. Times derive from an injected now.
func TestNextProbe(t *testing.T) {
	p := QuotaPolicy{BackoffMin: time.Minute, BackoffMax: 30 * time.Minute, Cooldown: 15 * time.Minute, CooldownMax: 2 * time.Hour, Jitter: 15 * time.Second}
	now := time.Now().Truncate(time.Second)
	s := func(d time.Duration) time.Time { return now.Add(d) }
	cases := []struct {
		name    string
		resetBy time.Time
		failed  int
		jitter  time.Duration
		want    time.Time
	}{
		{"reset ahead: its time plus jitter", s(35 * time.Second), 0, 7 * time.Second, s(42 * time.Second)},
		{"reset ahead, no jitter", s(2 * time.Hour), 0, 0, s(2 * time.Hour)},
		{"reset just now: smallest back-off, not at once", s(0), 0, 0, s(time.Minute)},
		{"reset already past: smallest back-off", s(-40 * time.Second), 0, 3 * time.Second, s(time.Minute + 3*time.Second)},
		{"probe hit again, reset past: 1m", s(-time.Minute), 1, 0, s(time.Minute)},
		{"second failed probe: 2m", s(-time.Minute), 2, 0, s(2 * time.Minute)},
		{"third failed probe: 4m", s(-time.Minute), 3, 0, s(4 * time.Minute)},
		{"sixth failed probe: capped at 30m", s(-time.Minute), 6, 0, s(30 * time.Minute)},
		{"many failed probes: capped, no overflow", s(-time.Minute), 500, 0, s(30 * time.Minute)},
		{"probe hit again with a later reset: the reset wins", s(10 * time.Minute), 1, 0, s(10 * time.Minute)},
		{"probe hit again with a near reset: the back-off wins", s(10 * time.Second), 2, 0, s(2 * time.Minute)},
		{"no reset time: cool-down", time.Time{}, 0, 0, s(15 * time.Minute)},
		{"no reset time, one failed probe: 30m", time.Time{}, 1, 2 * time.Second, s(30*time.Minute + 2*time.Second)},
		{"no reset time, capped", time.Time{}, 5, 0, s(2 * time.Hour)},
		{"no reset time, no overflow", time.Time{}, 1000, 0, s(2 * time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := p.NextProbe(now, c.resetBy, c.failed, c.jitter); !got.Equal(c.want) {
				t.Fatalf("NextProbe = now%+v, want now%+v", got.Sub(now), c.want.Sub(now))
			}
		})
	}
}
