package appshare

import (
	"context"
	"fmt"
)

// Ready blocks until the shared process has opened its session (nil), or
// a start of it has failed since Ready was called or before any start
// succeeded (that start's error), or ctx ends (its error). A caller that
// wants the process warm before its first turn calls it once after
// Listen; the broker goes on restarting a process that failed either way.
func (b *Broker) Ready(ctx context.Context) error {
	b.mu.Lock()
	up, ready, failed, lastErr := b.up, b.ready, b.failed, b.lastErr
	b.mu.Unlock()
	if up != nil {
		return nil
	}
	if lastErr != nil {
		return fmt.Errorf("the shared app-server did not start: %w", lastErr)
	}
	select {
	case <-ready:
		return nil
	case <-failed:
		b.mu.Lock()
		err := b.lastErr
		b.mu.Unlock()
		return fmt.Errorf("the shared app-server did not start: %w", err)
	case <-ctx.Done():
		return fmt.Errorf("the shared app-server did not start in time: %w", ctx.Err())
	}
}
