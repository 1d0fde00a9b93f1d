package schedule

import (
	"sync"
	"time"
)

// Clock is the time source of a Runner: the system clock in the daemon, a
// FakeClock in tests.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// TimerAt returns a timer that fires once the time from now to t has
	// elapsed (at once when t is not after now). It runs on elapsed time:
	// a wall clock set later does not move it. Taking the deadline rather
	// than a duration, it cannot be armed late from a stale Now.
	TimerAt(t time.Time) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
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

// FakeClock is a Clock whose time moves only when Advance, Set or Jump is
// called. Like the system's, its timers run on elapsed time, not on the
// wall clock: Advance and Set move both and fire the timers due during
// the call; Jump steps the wall clock alone (an
// operator or NTP setting the time, either way), as the system clock
// does. It is meant for tests and is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time     // the wall clock
	elapsed time.Duration // the monotonic clock the timers run on
	timers  []*fakeTimer
}

// NewFakeClock returns a FakeClock showing t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// TimerAt returns a timer firing once the time from the fake now to t has
// elapsed; a timer with t not after now fires at once.
func (c *FakeClock) TimerAt(at time.Time) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := at.Sub(c.now)
	t := &fakeTimer{c: c, at: c.elapsed + d, ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance lets d pass (d ≥ 0): the wall clock and the timers move by d,
// and the timers due fire.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
		c.elapsed += d
	}
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at <= c.elapsed {
			tm.ch <- c.now
			continue
		}
		kept = append(kept, tm)
	}
	c.timers = kept
}

// Set lets time pass until the wall clock shows t (never backwards: use
// Jump) and fires the timers due.
func (c *FakeClock) Set(t time.Time) { c.Advance(t.Sub(c.Now())) }

// Jump sets the wall clock to t, forwards or backwards, with no time
// elapsing: no timer fires and none moves.
func (c *FakeClock) Jump(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

type fakeTimer struct {
	c  *FakeClock
	at time.Duration // elapsed time at which it fires
	ch chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, tm := range t.c.timers {
		if tm == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}
