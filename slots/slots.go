// Package slots admits turns to a team's bounded number of slots: at most
// Limits.Turns turns at once across the team, at most a host's own cap on
// that host, and no new turn on this machine while its free memory is
// below Limits.MinFree. Turns that cannot start wait in one queue, first
// asked first served across agents. The decisions are pure functions
// (Grants, MemoryStep); Pool applies them under a mutex and tells a
// waiter it was granted a slot through a callback, so nobody ever blocks
// on it.
package slots

import (
	"slices"
	"sync"
	"time"
)

// Limits are the caps of a team. A zero Turns, a missing or zero host cap
// and a zero MinFree mean no cap.
type Limits struct {
	// Turns caps the turns running at once across the team.
	Turns int
	// Hosts caps the turns running at once on a host, by host name; ""
	// is this machine.
	Hosts map[string]int
	// MinFree is the memory (bytes of MemAvailable) below which no new
	// turn starts on this machine.
	MinFree uint64
}

// Enabled reports whether l caps anything.
func (l Limits) Enabled() bool {
	if l.Turns > 0 || l.MinFree > 0 {
		return true
	}
	for _, n := range l.Hosts {
		if n > 0 {
			return true
		}
	}
	return false
}

// Waiter is a turn waiting for a slot: who asks (an agent) and the host it
// runs on ("" for this machine).
type Waiter struct {
	Who, Host string
}

// Grants returns the indexes, in order, of the waiters of queue that get a
// slot now, given the turns running (running, on each host: onHost) and
// whether memory here is low. Waiters are served in queue order; one whose
// host is full (or, on this machine, whose memory is low) is passed over
// without holding up those behind it on other hosts, and none is served
// once the team is full. It is a pure function.
func Grants(queue []Waiter, running int, onHost map[string]int, l Limits, memLow bool) []int {
	var out []int
	used := map[string]int{}
	for i, w := range queue {
		if l.Turns > 0 && running+len(out) >= l.Turns {
			break
		}
		if w.Host == "" && memLow {
			continue
		}
		if c := l.Hosts[w.Host]; c > 0 && onHost[w.Host]+used[w.Host] >= c {
			continue
		}
		used[w.Host]++
		out = append(out, i)
	}
	return out
}

// MemoryStep decides memory's state from free bytes available (ok: read
// without error) against min, given whether an episode of low memory was
// on: low says whether it is on now, began whether it began with this
// reading (the one alert of an episode), ended whether it ended. A memory
// that cannot be read keeps the state as it was. It is a pure function.
func MemoryStep(free uint64, ok bool, min uint64, wasLow bool) (low, began, ended bool) {
	switch {
	case min == 0:
		return false, false, wasLow
	case !ok:
		return wasLow, false, false
	case free < min:
		return true, !wasLow, false
	default:
		return false, false, wasLow
	}
}

// Verdict is the answer to Acquire.
type Verdict int

const (
	// Granted: the asker holds a slot until it releases it.
	Granted Verdict = iota + 1
	// Waiting: the asker is in the queue; the pool's wake callback is
	// called with its name once it is granted a slot.
	Waiting
	// LowMemory: the asker is in the queue and memory here is low: the
	// pool cannot tell when it recovers, so the asker asks again later.
	LowMemory
)

// Memory reports the memory available on this machine in bytes.
type Memory func() (uint64, error)

// Episode is the start or the end of a low-memory episode, as Pool tells
// it: Free bytes were available against Min.
type Episode struct {
	Low       bool
	Free, Min uint64
}

// Pool is the slots of one team, safe for concurrent use. Its callbacks are
// called after its lock is released, never while it is held.
type Pool struct {
	lim  Limits
	mem  Memory
	wake func(who string)
	told func(Episode)
	// waited, when set (ObserveWaits), hears how long each waiter granted
	// after waiting waited.
	waited func(who string, d time.Duration)

	mu      sync.Mutex
	held    map[string]string // who → host, for each slot held
	onHost  map[string]int
	queue   []Waiter
	since   map[string]time.Time // when each waiter joined the queue
	memLow  bool
	lastMem uint64
}

// New returns the pool of limits l; mem reads the memory here (used only
// when l.MinFree is set), wake is called with the name of a waiter once it
// holds a slot, told with each start and end of a low-memory episode. wake
// and told must not block.
func New(l Limits, mem Memory, wake func(who string), told func(Episode)) *Pool {
	return &Pool{lim: l, mem: mem, wake: wake, told: told, held: map[string]string{}, onHost: map[string]int{}, since: map[string]time.Time{}}
}

// ObserveWaits has f told, with the waiter's wake, how long each waiter
// granted a slot after waiting for one waited (a waiter granted in its own
// Acquire waited none and is not told). Call it before the pool is used;
// f must not block.
func (p *Pool) ObserveWaits(f func(who string, waited time.Duration)) {
	if p != nil {
		p.waited = f
	}
}

// Acquire asks a slot for who's turn on host ("" for this machine). A
// holder asking again is granted at once; a waiter keeps its place.
func (p *Pool) Acquire(who, host string) Verdict {
	if p == nil || !p.lim.Enabled() {
		return Granted
	}
	p.mu.Lock()
	if _, ok := p.held[who]; ok {
		p.mu.Unlock()
		return Granted
	}
	if !slices.ContainsFunc(p.queue, func(w Waiter) bool { return w.Who == who }) {
		p.queue = append(p.queue, Waiter{Who: who, Host: host})
		p.since[who] = time.Now()
	}
	granted, ep := p.fill()
	_, mine := p.held[who]
	low := p.memLow
	p.mu.Unlock()
	p.tell(granted, ep, who)
	switch {
	case mine:
		return Granted
	case low && host == "":
		return LowMemory
	default:
		return Waiting
	}
}

// Release gives back who's slot, if it holds one, and hands it to the next
// waiter; who keeps its place if it waits. It never blocks.
func (p *Pool) Release(who string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	host, ok := p.held[who]
	if !ok {
		p.mu.Unlock()
		return
	}
	delete(p.held, who)
	p.onHost[host]--
	granted, ep := p.fill()
	p.mu.Unlock()
	p.tell(granted, ep, "")
}

// Leave releases who's slot and takes it out of the queue: who is gone.
func (p *Pool) Leave(who string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.queue = slices.DeleteFunc(p.queue, func(w Waiter) bool { return w.Who == who })
	delete(p.since, who)
	p.mu.Unlock()
	p.Release(who)
}

// Waiting reports whether who waits for a slot.
func (p *Pool) Waiting(who string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.queue, func(w Waiter) bool { return w.Who == who })
}

// Holds reports whether who holds a slot.
func (p *Pool) Holds(who string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.held[who]
	return ok
}

// Held returns how many slots are held.
func (p *Pool) Held() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// fill grants the slots Grants decides, under p.mu, the memory read first
// when a waiter runs here. It returns the waiters granted and the episode
// to tell, if any.
func (p *Pool) fill() (granted []grant, ep *Episode) {
	if p.lim.MinFree > 0 && slices.ContainsFunc(p.queue, func(w Waiter) bool { return w.Host == "" }) {
		free, err := p.mem()
		low, began, ended := MemoryStep(free, err == nil, p.lim.MinFree, p.memLow)
		p.memLow = low
		if err == nil {
			p.lastMem = free
		}
		if began || ended {
			ep = &Episode{Low: low, Free: p.lastMem, Min: p.lim.MinFree}
		}
	}
	idx := Grants(p.queue, len(p.held), p.onHost, p.lim, p.memLow)
	for _, i := range idx {
		w := p.queue[i]
		p.held[w.Who] = w.Host
		p.onHost[w.Host]++
		granted = append(granted, grant{who: w.Who, waited: time.Since(p.since[w.Who])})
		delete(p.since, w.Who)
	}
	for j := len(idx) - 1; j >= 0; j-- {
		p.queue = slices.Delete(p.queue, idx[j], idx[j]+1)
	}
	return granted, ep
}

// tell calls the callbacks for what fill did, outside the lock; asker,
// granted in its own Acquire, is not woken.
func (p *Pool) tell(granted []grant, ep *Episode, asker string) {
	if ep != nil && p.told != nil {
		p.told(*ep)
	}
	for _, g := range granted {
		if g.who == asker {
			continue
		}
		if p.waited != nil {
			p.waited(g.who, g.waited)
		}
		if p.wake != nil {
			p.wake(g.who)
		}
	}
}

// grant is a waiter granted a slot and how long it waited.
type grant struct {
	who    string
	waited time.Duration
}
