package orchestrator

import "sync"

// mailbox is how the daemon's goroutine and an agent's talk: a queue of
// messages that put never blocks on, whichever goroutine reads it and
// whatever that goroutine is doing. The reader selects on ready and takes
// every message waiting; once closed, put refuses new messages, so
// nothing put is left unread by a reader that closes the box and then
// takes what is left. Safe for concurrent use.
type mailbox[T any] struct {
	mu     sync.Mutex
	queue  []T
	closed bool
	kick   chan struct{} // buffered(1): something waits
}

func newMailbox[T any]() *mailbox[T] {
	return &mailbox[T]{kick: make(chan struct{}, 1)}
}

// put queues m for the reader; it never blocks. It reports false, m not
// queued, once the box is closed.
func (b *mailbox[T]) put(m T) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.queue = append(b.queue, m)
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return true
}

// ready is readable when messages may wait (take may still find none).
func (b *mailbox[T]) ready() <-chan struct{} { return b.kick }

// take returns the messages waiting, oldest first, and empties the box.
func (b *mailbox[T]) take() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue
	b.queue = nil
	return q
}

// close refuses every later put and returns what waits, as take does.
func (b *mailbox[T]) close() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	q := b.queue
	b.queue = nil
	return q
}
