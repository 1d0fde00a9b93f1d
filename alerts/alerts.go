// Package alerts carries the team's alerts to the channels that tell the
// human: one interface (Sink) every channel implements, one bounded queue
// (Queue) they are built on, and one fan-out (Fanout) the daemon gives
// every event to, where eventlog.AlertFor decides, once, which events are
// alerts.
//
// A new channel is one file: a Deliver function around a Queue (its
// constructor starts it) and a test that runs alertstest.Run.
package alerts

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/eventlog"
)

// Sink is one channel the team's alerts go out on (the on_alert command,
// the cockpit's attached clients, the console). The contract, which
// alertstest.Run checks:
//   - Alert never blocks the daemon, whatever the channel's consumer does:
//     the sink owns the goroutine that delivers, and its queue is bounded;
//     past the bound the oldest alert is dropped and the number dropped is
//     logged.
//   - Alerts are delivered in the order given.
//   - Close stops taking alerts, delivers those still queued until ctx
//     ends, then asks the delivery in flight to stop (its context ends) and
//     returns once the sink's goroutine has ended. Alert after Close does
//     nothing. Close is idempotent.
//
// Alert and Close are safe from any goroutine.
type Sink interface {
	Alert(a eventlog.Alert)
	Close(ctx context.Context)
}

// Deliver hands a batch of alerts (oldest first, at most the queue's Batch)
// to a channel's consumer. It may block; it should return soon after ctx
// ends.
type Deliver func(ctx context.Context, batch []eventlog.Alert)

// QueueConfig is how a Queue queues and delivers.
type QueueConfig struct {
	Name    string // the channel's name, in the log
	Limit   int    // alerts waiting at most (0: DefaultLimit); beyond, the oldest go
	Batch   int    // alerts given to one Deliver at most (0: 1)
	Log     hclog.Logger
	Deliver Deliver
	// Keep, if set, says whether the channel tells of a (its filter: the
	// cockpit shows some kinds only); nil keeps every alert.
	Keep func(a eventlog.Alert) bool
}

// DefaultLimit is how many alerts a queue holds by default.
const DefaultLimit = 64

// Queue is a Sink built on a Deliver: a bounded queue, dropping (and
// logging) the oldest past its limit, drained in order by its own
// goroutine. NewQueue starts it unless told to wait for Start.
type Queue struct {
	cfg    QueueConfig
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // buffered(1)
	done   chan struct{} // closed as the goroutine ends

	mu      sync.Mutex
	queue   []eventlog.Alert
	dropped int
	closed  bool
	started bool
}

// NewQueue returns a started queue for c.
func NewQueue(c QueueConfig) *Queue {
	q := NewHeldQueue(c)
	q.Start()
	return q
}

// NewHeldQueue returns a queue for c that takes alerts but delivers none
// until Start (a channel whose consumer is not ready yet: the on_alert
// command runs once the daemon reaps its children).
func NewHeldQueue(c QueueConfig) *Queue {
	if c.Limit <= 0 {
		c.Limit = DefaultLimit
	}
	if c.Batch <= 0 {
		c.Batch = 1
	}
	if c.Log == nil {
		c.Log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Queue{cfg: c, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Start starts the goroutine that delivers; once only, and not after Close.
func (q *Queue) Start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started || q.closed {
		return
	}
	q.started = true
	go q.run()
}

// Alert queues a (see Sink); it never blocks.
func (q *Queue) Alert(a eventlog.Alert) {
	if q.cfg.Keep != nil && !q.cfg.Keep(a) {
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if len(q.queue) >= q.cfg.Limit {
		q.queue = q.queue[1:]
		q.dropped++
	}
	q.queue = append(q.queue, a)
	q.mu.Unlock()
	q.kick()
}

func (q *Queue) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the oldest queued alerts (at most Batch); none when the
// queue is empty.
func (q *Queue) take() (batch []eventlog.Alert, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sayDropped()
	n := min(len(q.queue), q.cfg.Batch)
	batch = append([]eventlog.Alert(nil), q.queue[:n]...)
	q.queue = q.queue[n:]
	return batch, q.closed
}

// sayDropped logs how many alerts were dropped since it last did. q.mu is
// held.
func (q *Queue) sayDropped() {
	if q.dropped > 0 {
		q.cfg.Log.Warn("Alert queue full: oldest alerts dropped", "sink", q.cfg.Name, "dropped", q.dropped, "limit", q.cfg.Limit)
		q.dropped = 0
	}
}

// run delivers until the queue is closed and empty or its context ends.
func (q *Queue) run() {
	defer close(q.done)
	for {
		batch, closed := q.take()
		if len(batch) > 0 {
			if q.ctx.Err() != nil {
				return
			}
			q.cfg.Deliver(q.ctx, batch)
			continue
		}
		if closed || q.ctx.Err() != nil {
			return
		}
		select {
		case <-q.wake:
		case <-q.ctx.Done():
			return
		}
	}
}

// Close stops the queue (see Sink).
func (q *Queue) Close(ctx context.Context) {
	q.mu.Lock()
	q.closed = true
	started := q.started
	q.mu.Unlock()
	defer q.cancel()
	if !started {
		q.mu.Lock()
		q.sayDropped()
		q.queue = nil
		q.mu.Unlock()
		return
	}
	q.kick()
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancel()
		<-q.done
	}
	q.mu.Lock()
	q.sayDropped()
	q.queue = nil
	q.mu.Unlock()
}

// Fanout gives each alert to every sink: the one place the daemon's events
// become alerts (eventlog.AlertFor) and go out. Safe for concurrent use.
type Fanout struct {
	team string
	now  func() time.Time

	mu    sync.Mutex
	sinks []Sink
}

// NewFanout returns the fan-out of the team named team to sinks; now
// stamps an alert whose event has no time (nil: time.Now).
func NewFanout(team string, now func() time.Time, sinks ...Sink) *Fanout {
	if now == nil {
		now = time.Now
	}
	return &Fanout{team: team, now: now, sinks: sinks}
}

// Add has s get the alerts from now on.
func (f *Fanout) Add(s Sink) {
	f.mu.Lock()
	f.sinks = append(f.sinks, s)
	f.mu.Unlock()
}

// Event gives the alert of e, if it is one, to every sink; it never
// blocks (the sinks do not). Meant as the event log's observer.
func (f *Fanout) Event(e eventlog.Event) {
	a, ok := eventlog.AlertFor(e)
	if !ok {
		return
	}
	a.Team = f.team
	if a.Time.IsZero() {
		a.Time = f.now().UTC()
	}
	f.mu.Lock()
	sinks := f.sinks
	f.mu.Unlock()
	for _, s := range sinks {
		s.Alert(a)
	}
}

// Close closes every sink at once, each delivering what it holds until ctx
// ends, and returns when all have stopped.
func (f *Fanout) Close(ctx context.Context) {
	f.mu.Lock()
	sinks := f.sinks
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sinks {
		wg.Go(func() { s.Close(ctx) })
	}
	wg.Wait()
}
