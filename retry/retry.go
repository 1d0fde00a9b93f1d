// Package retry is the policy for a Codex turn that failed in a way that
// may pass by itself: whether to try it again (Cause), after how long
// (Backoff), and, for a usage limit, when to try again (QuotaPolicy). The
// daemon applies it to team messages and `batty fanout` to rows, so the two
// behave the same. Everything here is a pure function.
package retry

import (
	"time"

	"github.com/battyhq/batty/protocol"
)

// Defaults of the policy, as the daemon applies them with a team file's
// defaults.
const (
	DefaultBase             = 10 * time.Second
	DefaultMax              = 5 * time.Minute
	DefaultQuotaBackoffMin  = time.Minute
	DefaultQuotaBackoffMax  = 30 * time.Minute
	DefaultQuotaCooldown    = 15 * time.Minute
	DefaultQuotaCooldownMax = 2 * time.Hour
	DefaultQuotaJitter      = 15 * time.Second
)

// KilledCause is Cause's name for a turn cut off by the death of its codex
// (protocol.FailKilled); the retried prompt's note says it.
const KilledCause = "a cut-off attempt (codex killed from outside)"

// DefaultQuotaPolicy is the policy with the defaults.
func DefaultQuotaPolicy() QuotaPolicy {
	return QuotaPolicy{BackoffMin: DefaultQuotaBackoffMin, BackoffMax: DefaultQuotaBackoffMax,
		Cooldown: DefaultQuotaCooldown, CooldownMax: DefaultQuotaCooldownMax, Jitter: DefaultQuotaJitter}
}

// Cause names why a finished turn failed when trying it again may
// pass by itself, and returns "" when it may not: a turn that timed out
// ("a timeout"), one that waited for the network too long ("an unreachable
// API"), one cut off by the death of its codex, which batty did not cause
// ("a cut-off attempt (codex killed from outside)": the OOM killer, a kill from
// outside; the thread is kept), and a stream failure the shim classified
// as transient (TurnFinished.Transient, named by TransientCause: "a server
// error", "a rate limit", "an overloaded model", "a dropped stream", …);
// the failure's text is not read again. Quota, auth and context failures are
// handled by their own mechanisms, interrupted turns are requeued, and
// everything else is final. It is a pure function.
func Cause(e protocol.TurnFinished) string {
	switch {
	case e.Status == protocol.TurnTimedOut:
		return "a timeout"
	case e.Status != protocol.TurnFailed:
		return ""
	case e.Failure == protocol.FailNetwork:
		return "an unreachable API"
	case e.Failure == protocol.FailKilled:
		return KilledCause
	case e.Failure == protocol.FailStream:
		return TransientCause(e.Transient)
	}
	return ""
}

// TransientCause names a transient failure's kind for a person, in a few
// words (the retried prompt's note says it): "an unreachable API", "a
// rate limit", "an overloaded model", "a server error", "a stalled
// stream", "a dropped stream", "a transient failure" for any other; "" for
// TransientNone or an unknown kind (not transient: final). It is a pure
// function.
func TransientCause(k protocol.Transient) string {
	switch k {
	case protocol.TransientUnreachable:
		return "an unreachable API"
	case protocol.TransientRateLimit:
		return "a rate limit"
	case protocol.TransientOverloaded:
		return "an overloaded model"
	case protocol.TransientServer:
		return "a server error"
	case protocol.TransientStalled:
		return "a stalled stream"
	case protocol.TransientDropped:
		return "a dropped stream"
	case protocol.TransientOther:
		return "a transient failure"
	}
	return ""
}

// Backoff is the delay before retry n (1 for the first retry): base
// doubled for every retry before it, at most limit, with jitter — half of
// the delay is fixed, the other half scaled by r, a random number in
// [0, 1) — so agents that failed together do not retry together. It is a
// pure function.
func Backoff(n int, base, limit time.Duration, r float64) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	r = min(1, max(0, r))
	return d/2 + time.Duration(r*float64(d/2))
}

// QuotaPolicy says when work held by a usage limit is tried again (the
// daemon probes an account, a fan-out job tries one row). The zero value is
// not useful; see DefaultQuotaPolicy.
type QuotaPolicy struct {
	// BackoffMin is the first back-off step after a probe hit the limit
	// again, or after a reset time that had already passed (1m); it
	// doubles per probe up to BackoffMax (30m).
	BackoffMin, BackoffMax time.Duration
	// Cooldown is the wait before the first probe when codex named no
	// reset time (15m); it doubles per probe up to CooldownMax (2h).
	Cooldown, CooldownMax time.Duration
	// Jitter is the most added to every planned probe (15s), so agents
	// of several teams on one account do not all come back at once.
	Jitter time.Duration
}

// Grow returns base doubled n times, at most limit. It never overflows.
func Grow(base time.Duration, n int, limit time.Duration) time.Duration {
	d := base
	for range n {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// NextProbe returns when to send the next probe turn of an account that
// hit a usage limit. It is a pure function.
//
//   - resetBy is the instant by which codex says the limit has reset (the
//     end of the printed minute, see codex.ResetBy); zero when it named
//     none.
//   - failed counts the probes of this pause that hit the limit again (0
//     when the pause begins).
//   - jitter is drawn by the caller in [0, Jitter].
//
// With a reset time, the probe goes at resetBy+jitter — never sooner than
// the back-off after a failed probe (BackoffMin doubling per failed probe,
// capped), and never at once: a reset time already past counts as the
// smallest back-off. Without one, it goes after the cool-down, doubling per
// failed probe, capped.
func (p QuotaPolicy) NextProbe(now, resetBy time.Time, failed int, jitter time.Duration) time.Time {
	if resetBy.IsZero() {
		return now.Add(Grow(p.Cooldown, failed, p.CooldownMax) + jitter)
	}
	backoff := now.Add(Grow(p.BackoffMin, max(failed-1, 0), p.BackoffMax) + jitter)
	at := resetBy.Add(jitter)
	if failed > 0 && at.Before(backoff) {
		at = backoff
	}
	if !at.After(now) {
		at = backoff
	}
	return at
}
