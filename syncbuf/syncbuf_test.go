package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestBufferConcurrentWrites: writes from several goroutines all land,
// whole, and String may be read meanwhile.
func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if n, err := b.Write([]byte("ab")); n != 2 || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("ab", 800) {
		t.Fatalf("got %d bytes, want 1600 of ab", len(got))
	}
}
