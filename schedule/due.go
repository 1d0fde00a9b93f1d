package schedule

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrOverflow is matched (errors.Is) by the error of a due time that does
// not fit in a time.Time or a time.Duration: the schedule fails rather than
// wrapping around.
var ErrOverflow = errors.New("due time out of range")

// Next returns the first anchor + k·every (k ≥ 0) strictly after now; for a
// now before anchor that is anchor itself. An every ≤ 0 is an error, and
// so is an overflow of k·every or of the addition (an error matching
// ErrOverflow). It is a pure function.
func Next(anchor time.Time, every time.Duration, now time.Time) (time.Time, error) {
	if every <= 0 {
		return time.Time{}, fmt.Errorf("every must be positive, got %s", every)
	}
	if now.Before(anchor) {
		return anchor, nil
	}
	since := now.Sub(anchor)
	if since == math.MaxInt64 {
		// Sub saturates: the true distance does not fit a Duration.
		return time.Time{}, fmt.Errorf("%w: %s is too far after the anchor %s", ErrOverflow, now.UTC().Format(time.RFC3339), anchor.UTC().Format(time.RFC3339))
	}
	k := int64(since/every) + 1
	if k > math.MaxInt64/int64(every) {
		return time.Time{}, fmt.Errorf("%w: run %d of every %s from %s", ErrOverflow, k, every, anchor.UTC().Format(time.RFC3339))
	}
	off := time.Duration(k * int64(every))
	due := anchor.Add(off)
	if due.Sub(anchor) != off || !due.After(now) {
		return time.Time{}, fmt.Errorf("%w: %s after %s", ErrOverflow, off, anchor.UTC().Format(time.RFC3339))
	}
	return due, nil
}
