package fanout

import (
	"time"

	"github.com/battyhq/batty/retry"
)

// retryCause is why r may pass when tried again ("" when it may not): the
// team messages' rule, or a worker that broke.
func retryCause(r result) string {
	if r.err != nil {
		return "a worker that ended"
	}
	return retry.Cause(r.out.TurnFinished)
}

// errorOf is the error a failed row records.
func errorOf(r result) string {
	if r.err != nil {
		return r.err.Error()
	}
	f := r.out.TurnFinished
	msg := f.Error
	if msg == "" {
		msg = "the turn ended " + string(f.Status)
	}
	if f.Failure != "" {
		msg = string(f.Failure) + ": " + msg
	}
	return msg
}

// quotaHit holds new rows back after a usage limit: until the reset codex
// named (plus jitter) when the pause begins or its probe hit the limit
// again; a limit hit by another row during the pause changes nothing. The
// row goes back to pending, its attempt not counted.
func (e *engine) quotaHit(row *pendingRow, retryAt time.Time, wasProbe bool) {
	row.note = "retried after a usage limit: the earlier attempt got no answer"
	e.requeue(row)
	if !e.snap.PausedUntil.IsZero() && !wasProbe {
		return
	}
	if wasProbe {
		e.failedProbes++
	}
	var jitter time.Duration
	if e.o.QuotaJitter > 0 {
		jitter = time.Duration(e.o.Rand() * float64(e.o.QuotaJitter))
	}
	now := time.Now()
	e.snap.PausedUntil = e.o.Quota.NextProbe(now, retryAt, e.failedProbes, jitter)
	e.o.Log.Warn("Usage limit: no new rows until the reset", "until", e.snap.PausedUntil, "reset_by", retryAt)
}
