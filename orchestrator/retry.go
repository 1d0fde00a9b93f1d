package orchestrator

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
)

// retryCause names why a finished turn failed when trying it again may
// pass by itself, and returns "" when it may not: a turn that timed out
// ("a timeout"), one that waited for the network too long ("an unreachable
// API"), and a stream failure whose message codex.Classify calls transient
// (codex.TransientCause: "a server error", "a rate limit", "an overloaded
// model", "a dropped stream", …). Quota, auth and context failures are
// handled by their own mechanisms, interrupted turns are requeued, and
// everything else is final. It is a pure function.
func retryCause(e protocol.TurnFinished) string {
	switch {
	case e.Status == protocol.TurnTimedOut:
		return "a timeout"
	case e.Status != protocol.TurnFailed:
		return ""
	case e.Failure == protocol.FailNetwork:
		return "an unreachable API"
	case e.Failure == protocol.FailStream:
		return codex.TransientCause(e.Error)
	}
	return ""
}

// backoff is the delay before retry n (1 for the first retry): base
// doubled for every retry before it, at most limit, with jitter — half of
// the delay is fixed, the other half scaled by r, a random number in
// [0, 1) — so agents that failed together do not retry together. It is a
// pure function.
func backoff(n int, base, limit time.Duration, r float64) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	r = min(1, max(0, r))
	return d/2 + time.Duration(r*float64(d/2))
}

// maxNoteError bounds, in characters, the failure a retry note quotes.
const maxNoteError = 200

// retryNote is the prompt header's note for attempt n of maxAttempts of a
// message whose previous attempt failed with cause and error lastErr.
// worked says whether that attempt had completed any item (a command, a
// patch, a message): only then may work be half done. It is a pure
// function.
func retryNote(n, maxAttempts int, cause, lastErr string, worked bool) string {
	if utf8.RuneCountInString(lastErr) > maxNoteError {
		lastErr = string([]rune(lastErr)[:maxNoteError-1]) + "…"
	}
	after := "the earlier attempt ended before any work was done and got no answer (the thread may show it above without one)"
	if worked {
		after = "the earlier attempt had begun working when it failed: check what is already done before repeating work"
	}
	return fmt.Sprintf("retry %d of %d after %s: %s; %s", n, maxAttempts, cause, lastErr, after)
}
