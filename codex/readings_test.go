package codex

// Readings of codex's output that batty itself does not need and its tests
// do: they check what the parsers see.

import (
	"regexp"
	"strconv"
	"time"
)

// ParseRetryAt is ResetBy without the precision: the time the usage-limit
// message prints, in UTC.
func ParseRetryAt(message string, now time.Time, loc *time.Location) (at time.Time, ok bool) {
	at, _, ok = parseRetry(message, now, loc)
	return at, ok
}

var retryNoticeRE = regexp.MustCompile(`(?is)^\s*reconnecting(?:\.\.\.|\x{2026})\s*(?:(\d+)\s*/\s*(\d+)|waiting for network)?\s*(?:\((.*)\))?\s*$`)

// ParseRetryNotice splits a retry notice into its attempt counter and its
// cause: "Reconnecting... 1/2 (X)" gives 1, 2, "X"; "Reconnecting...
// waiting for network (X)" gives 0, 0, "X" (codex then retries without a
// limit). ok is false when message is not a retry notice.
func ParseRetryNotice(message string) (attempt, maxAttempts int, cause string, ok bool) {
	if !IsRetryNotice(message) {
		return 0, 0, "", false
	}
	m := retryNoticeRE.FindStringSubmatch(message)
	if m == nil {
		return 0, 0, "", true
	}
	if m[1] != "" {
		attempt, _ = strconv.Atoi(m[1])
		maxAttempts, _ = strconv.Atoi(m[2])
	}
	return attempt, maxAttempts, m[3], true
}

// Retryable reports whether the same turn may succeed when simply sent
// again later without human action: FailureTransient and
// FailureActiveWriter. FailureQuota becomes retryable only after its reset
// time.
func (f Failure) Retryable() bool {
	return f == FailureTransient || f == FailureActiveWriter
}

// IsTerminal reports whether e ends a turn: turn.completed or turn.failed.
func (e Event) IsTerminal() bool {
	return e.Type == TypeTurnCompleted || e.Type == TypeTurnFailed
}

// IsRetryNotice reports whether e is a non-fatal top-level error event that
// only announces a retry ("Reconnecting... 1/2 (...)").
func (e Event) IsRetryNotice() bool {
	return e.Type == TypeError && IsRetryNotice(e.Message)
}

// Line returns the number of lines consumed so far, blank lines included.
func (r *Reader) Line() int { return r.line }
