package orchestrator

import (
	"time"

	"github.com/battyhq/batty/protocol"
)

// The retry and quota policy of team messages, for other runners of turns
// (`batty fanout`) that must behave the same way.

// RetryCause names why a finished turn failed when trying it again may pass
// by itself, and returns "" when it may not (see retryCause). It is a pure
// function.
func RetryCause(e protocol.TurnFinished) string { return retryCause(e) }

// RetryBackoff is the delay before retry n (1 for the first retry): base
// doubled per earlier retry, at most limit, half of it scaled by r in
// [0, 1) as jitter (see backoff). It is a pure function.
func RetryBackoff(n int, base, limit time.Duration, r float64) time.Duration {
	return backoff(n, base, limit, r)
}

// Defaults of the retry and quota policy, as the daemon applies them.
const (
	DefaultRetryBase        = 10 * time.Second
	DefaultRetryMax         = 5 * time.Minute
	DefaultQuotaBackoffMin  = time.Minute
	DefaultQuotaJitter      = 15 * time.Second
	DefaultQuotaBackoffMax  = 30 * time.Minute
	DefaultQuotaCooldown    = 15 * time.Minute
	DefaultQuotaCooldownMax = 2 * time.Hour
)

// QuotaPolicy says when work held by a usage limit is tried again: the
// first back-off step after a probe that hit the limit again (BackoffMin,
// doubling up to BackoffMax), the wait when codex named no reset time
// (Cooldown, doubling up to CooldownMax).
type QuotaPolicy struct {
	BackoffMin, BackoffMax time.Duration
	Cooldown, CooldownMax  time.Duration
}

// DefaultQuotaPolicy is the daemon's policy with a team file's defaults.
func DefaultQuotaPolicy() QuotaPolicy {
	return QuotaPolicy{BackoffMin: DefaultQuotaBackoffMin, BackoffMax: DefaultQuotaBackoffMax,
		Cooldown: DefaultQuotaCooldown, CooldownMax: DefaultQuotaCooldownMax}
}

// NextProbe returns when to try again after a usage limit: resetBy is the
// instant codex says the limit has reset by (zero: none named), failed
// counts the tries of this pause that hit the limit again, jitter is drawn
// by the caller. It is the daemon's rule (quotaPolicy.nextProbe), a pure
// function.
func (p QuotaPolicy) NextProbe(now, resetBy time.Time, failed int, jitter time.Duration) time.Time {
	return quotaPolicy{BackoffMin: p.BackoffMin, BackoffMax: p.BackoffMax, Cooldown: p.Cooldown, CooldownMax: p.CooldownMax}.nextProbe(now, resetBy, failed, jitter)
}
