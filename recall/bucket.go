package recall

import (
	"math"
	"time"
)

// The rate of an agent's recalls: a burst of BucketSize, then one every
// BucketRefill.
const (
	BucketSize   = 10
	BucketRefill = 3 * time.Second
)

// Bucket is a token bucket that bounds how often an agent asks: the zero
// Bucket is full. Not safe for concurrent use: its owner (the agent's
// goroutine in the daemon) alone takes from it.
type Bucket struct {
	tokens float64
	last   time.Time
}

// Take takes a token at now and returns 0, or, when the bucket is empty,
// takes none and returns how long until there is one.
func (b *Bucket) Take(now time.Time) time.Duration {
	if b.last.IsZero() {
		b.tokens = BucketSize
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(BucketSize, b.tokens+float64(d)/float64(BucketRefill))
	}
	if now.After(b.last) || b.last.IsZero() {
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(BucketRefill))
}
