package fanout

import (
	"fmt"
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

// quotaHit pauses account acct after a usage limit: until the reset codex
// named (plus jitter) when its pause begins or its probe hit the limit
// again (then backed off by the failed probes of this pause); a limit hit
// by another row during the pause changes nothing. The row goes back to
// pending, its attempt not counted; it and the next rows go on on the next
// account with quota left, if any (see pick).
func (e *engine) quotaHit(row *pendingRow, acct int, retryAt time.Time, wasProbe bool) {
	row.note = "retried after a usage limit: the earlier attempt got no answer"
	e.requeue(row)
	a := &e.accts[acct]
	if !a.open() && !wasProbe {
		return
	}
	if wasProbe {
		a.failedProbes++
	}
	var jitter time.Duration
	if e.o.QuotaJitter > 0 {
		jitter = time.Duration(e.o.Rand() * float64(e.o.QuotaJitter))
	}
	now := time.Now()
	wasCurrent := firstOpen(e.accts) == acct
	a.pausedUntil = e.o.Quota.NextProbe(now, retryAt, a.failedProbes, jitter)
	e.syncAccounts()
	if len(e.accts) == 1 {
		e.o.Log.Warn("Usage limit: no new rows until the reset", "until", a.pausedUntil, "reset_by", retryAt)
		return
	}
	name := e.accountName(acct)
	switch next := firstOpen(e.accts); {
	case next < 0:
		e.o.Log.Warn(fmt.Sprintf("Usage limit on account %s, and every account is paused: no new rows until the earliest reset", name),
			"until", e.snap.PausedUntil, "account_until", a.pausedUntil, "reset_by", retryAt)
	case wasCurrent:
		e.o.Log.Warn(fmt.Sprintf("Usage limit on account %s: rows go on on account %s", name, e.accountName(next)),
			"until", a.pausedUntil, "reset_by", retryAt)
	default:
		e.o.Log.Info(fmt.Sprintf("Account %s is still at its usage limit: rows stay on account %s", name, e.accountName(next)),
			"until", a.pausedUntil, "failed_probes", a.failedProbes)
	}
}

// quotaLifted opens account acct after its probe got through.
func (e *engine) quotaLifted(acct int) {
	a := &e.accts[acct]
	if a.open() {
		return
	}
	before := firstOpen(e.accts)
	a.pausedUntil, a.failedProbes = time.Time{}, 0
	switch {
	case len(e.accts) == 1:
		e.o.Log.Info("The usage limit lifted: rows start again")
	case before < 0 || before > acct:
		e.o.Log.Warn(fmt.Sprintf("The usage limit of account %s lifted: rows go on on it", e.accountName(acct)))
	default:
		e.o.Log.Info(fmt.Sprintf("The usage limit of account %s lifted", e.accountName(acct)))
	}
}
