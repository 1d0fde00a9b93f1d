package fanout

import "time"

// accountState is what a job knows of one account's usage limit.
type accountState struct {
	// pausedUntil is when the account may be tried again after a usage
	// limit (zero: open, no limit known).
	pausedUntil time.Time
	// probe is the row trying whether the account's limit has lifted (-1:
	// none).
	probe int
	// failedProbes counts the probes of this pause that hit the limit
	// again.
	failedProbes int
}

// open reports whether rows start on the account without a probe.
func (a accountState) open() bool { return a.pausedUntil.IsZero() }

// pick returns the account the next row starts on: the first, in order of
// preference, that is open or whose pause has run out with no probe in
// flight (that row is then its probe); -1 when there is none, with the
// earliest instant a pause runs out (zero when every paused account waits
// for its probe). It is a pure function.
func pick(accts []accountState, now time.Time) (int, time.Time) {
	var wake time.Time
	for i, a := range accts {
		switch {
		case a.open():
			return i, time.Time{}
		case a.probe >= 0:
			// Its probe decides.
		case !now.Before(a.pausedUntil):
			return i, time.Time{}
		case wake.IsZero() || a.pausedUntil.Before(wake):
			wake = a.pausedUntil
		}
	}
	return -1, wake
}

// firstOpen returns the first open account, -1 when none is.
func firstOpen(accts []accountState) int {
	for i, a := range accts {
		if a.open() {
			return i
		}
	}
	return -1
}

// accountName is account i's name for messages ("" with one account).
func (e *engine) accountName(i int) string {
	if i < 0 || i >= len(e.o.Accounts) {
		return ""
	}
	return e.o.Accounts[i]
}

// syncAccounts derives the Snapshot's pause fields from the accounts:
// PausedUntil and Probing only while no account is open (the earliest
// pause; whether a probe is in flight), Account the account rows start on
// (with several accounts), else the one paused the shortest.
func (e *engine) syncAccounts() {
	e.snap.PausedUntil, e.snap.Probing = time.Time{}, false
	cur := firstOpen(e.accts)
	if cur < 0 {
		for i, a := range e.accts {
			if cur < 0 || a.pausedUntil.Before(e.snap.PausedUntil) {
				cur, e.snap.PausedUntil = i, a.pausedUntil
			}
			if a.probe >= 0 {
				e.snap.Probing = true
			}
		}
	}
	if len(e.accts) > 1 {
		e.snap.Account = e.accountName(cur)
	}
}
