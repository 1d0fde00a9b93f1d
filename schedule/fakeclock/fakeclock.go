// Package fakeclock is a clock for tests of what runs on a schedule.Clock:
// its time moves only when the test says. It imports nothing of batty, so
// the tests of package schedule may use it too.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a schedule.Clock whose time moves only when Advance, Set or Jump is
// called. Like the system's, its timers run on elapsed time, not on the
// wall clock: Advance and Set move both and fire the timers due during
// the call; Jump steps the wall clock alone (an
// operator or NTP setting the time, either way), as the system clock
// does. It is meant for tests and is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time     // the wall clock
	elapsed time.Duration // the monotonic clock the timers run on
	timers  []*timer
}

// New returns a Clock showing t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// TimerAt returns a timer firing once the time from the fake now to t has
// elapsed; a timer with t not after now fires at once.
func (c *Clock) TimerAt(at time.Time) interface {
	C() <-chan time.Time
	Stop() bool
} {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := at.Sub(c.now)
	t := &timer{c: c, at: c.elapsed + d, ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// NextAt is when, by the wall clock, the earliest pending timer fires;
// zero without any.
func (c *Clock) NextAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, tm := range c.timers {
		if t := c.now.Add(tm.at - c.elapsed); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// Advance lets d pass (d ≥ 0): the wall clock and the timers move by d,
// and the timers due fire.
func (c *Clock) Advance(d time.Duration) {
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
func (c *Clock) Set(t time.Time) { c.Advance(t.Sub(c.Now())) }

// Jump sets the wall clock to t, forwards or backwards, with no time
// elapsing: no timer fires and none moves.
func (c *Clock) Jump(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

type timer struct {
	c  *Clock
	at time.Duration // elapsed time at which it fires
	ch chan time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
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
