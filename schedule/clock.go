package schedule

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Clock is the time source of a Runner: the system clock in the daemon, a
// FakeClock in tests.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now (at once when
	// d ≤ 0).
	NewTimer(d time.Duration) Timer
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

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }

// FakeClock is a Clock whose time moves only when Advance, Set or Jump is
// called. Like the system's, its timers run on elapsed time, not on the
// wall clock: Advance and Set move both and fire the timers due, in
// deadline order, during the call; Jump steps the wall clock alone (an
// operator or NTP setting the time, either way), as the system clock
// does. It is meant for tests and is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time     // the wall clock
	elapsed time.Duration // the monotonic clock the timers run on
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced when timers changes
}

// NewFakeClock returns a FakeClock showing t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t, changed: make(chan struct{})} }

// WaitTimers blocks until n timers are waiting to fire, or until ctx ends
// (then it returns ctx's error): a test's way to know that the goroutine
// under test went to sleep.
func (c *FakeClock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		k, ch := len(c.timers), c.changed
		c.mu.Unlock()
		if k == n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d timers wait, want %d: %w", k, n, ctx.Err())
		}
	}
}

// touch wakes WaitTimers; c.mu is held.
func (c *FakeClock) touch() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing once d more time has elapsed; a timer
// with d ≤ 0 fires at once.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.elapsed + d, ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	c.touch()
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
	c.touch()
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
			t.c.touch()
			return true
		}
	}
	return false
}
