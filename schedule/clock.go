package schedule

import (
	"time"
)

// Clock is the time source of a Runner: the system clock in the daemon, a
// fakeclock.Clock in tests.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// TimerAt returns a timer that fires once the time from now to t has
	// elapsed (at once when t is not after now). It runs on elapsed time:
	// a wall clock set later does not move it. Taking the deadline rather
	// than a duration, it cannot be armed late from a stale Now.
	TimerAt(t time.Time) Timer
}

// Timer is a one-shot timer of a Clock: C delivers the time once the timer
// fires; Stop prevents the timer from firing and reports whether it did.
// It is an interface literal, so that a Clock of another package (the
// tests' fakeclock) can return one without importing this one.
type Timer = interface {
	C() <-chan time.Time
	Stop() bool
}

// SystemClock returns the Clock of package time.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) TimerAt(t time.Time) Timer { return sysTimer{time.NewTimer(time.Until(t))} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }
