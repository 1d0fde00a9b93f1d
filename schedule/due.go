package schedule

import (
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ErrOverflow is matched (errors.Is) by the error of a due time that does
// not fit in the state file (after year 9999): the schedule fails rather
// than wrapping around.
var ErrOverflow = errors.New("due time out of range")

// maxYear is the last year a due time may fall in: the state file keeps
// RFC 3339 times, which have four-digit years.
const maxYear = 9999

// Next returns the first anchor + k·every (k ≥ 0) strictly after now; for a
// now before anchor that is anchor itself. However far apart anchor and
// now are (an anchor in year 1700 is fine: the distance is counted in
// big integers, not in a time.Duration, which ends at 292 years), the tick
// is exact. An every ≤ 0 is an error, and so is a tick after year 9999
// (an error matching ErrOverflow). It is a pure function.
func Next(anchor time.Time, every time.Duration, now time.Time) (time.Time, error) {
	if every <= 0 {
		return time.Time{}, fmt.Errorf("every must be positive, got %s", every)
	}
	if now.Before(anchor) {
		return anchor, nil
	}
	// k = ⌊(now − anchor) / every⌋ + 1, the tick anchor + k·every.
	per := big.NewInt(int64(every))
	k := new(big.Int).Quo(nanosBetween(anchor, now), per)
	k.Add(k, big.NewInt(1))
	off := new(big.Int).Mul(k, per)
	due, ok := addNanos(anchor, off)
	if !ok || due.Year() > maxYear {
		return time.Time{}, fmt.Errorf("%w: tick %s of every %s from %s falls after year %d", ErrOverflow, k, every, anchor.UTC().Format(time.RFC3339), maxYear)
	}
	return due, nil
}

// nanosBetween returns b − a in nanoseconds.
func nanosBetween(a, b time.Time) *big.Int {
	d := big.NewInt(b.Unix())
	d.Sub(d, big.NewInt(a.Unix()))
	d.Mul(d, big.NewInt(int64(time.Second)))
	return d.Add(d, big.NewInt(int64(b.Nanosecond()-a.Nanosecond())))
}

// addNanos returns t + n nanoseconds (n ≥ 0) in t's location; false when
// the seconds do not fit an int64.
func addNanos(t time.Time, n *big.Int) (time.Time, bool) {
	sec, ns := new(big.Int).QuoRem(n, big.NewInt(int64(time.Second)), new(big.Int))
	sec.Add(sec, big.NewInt(t.Unix()))
	if !sec.IsInt64() {
		return time.Time{}, false
	}
	return time.Unix(sec.Int64(), int64(t.Nanosecond())+ns.Int64()).In(t.Location()), true
}
