package ptylog

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var fixedTime = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func fixedNow() time.Time { return fixedTime }

// waitTimeout bounds every wait on an event in these tests.
const waitTimeout = 10 * time.Second

// openTest opens a Writer on a fresh path with a fixed clock and closes it
// when the test ends.
func openTest(t testing.TB, opts Options) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agents", "agent-1", "transcript.log")
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	w, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w, path
}

// readLines returns the lines of the file at path (without newlines), each
// line's stamp shown as the time of day (ShortStamps; the stamp itself is
// TestStampFormat's).
func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	s := ShortStamps(string(data))
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("%s does not end with a newline: %q", path, s)
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// wait receives from ch or fails the test after waitTimeout.
func wait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// signalChan returns a coalescing signal channel and a func that notifies it
// without blocking.
func signalChan() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// waitQueueEmpty waits, on batch notifications, until nothing is pending.
func waitQueueEmpty(t testing.TB, w *Writer, batches <-chan struct{}) {
	t.Helper()
	for {
		w.mu.Lock()
		n := len(w.pending)
		w.mu.Unlock()
		if n == 0 {
			return
		}
		wait(t, batches, "the writer goroutine to take the queue")
	}
}

// ourSequences matches every escape sequence the package itself emits.
var ourSequences = regexp.MustCompile(`\x1b\[(0|1|2|31|32|33|35|36|1;36)m`)

// checkOnlyOurSequences fails if s contains an ESC that does not start one
// of the package's own colour sequences.
func checkOnlyOurSequences(t testing.TB, s string) {
	t.Helper()
	rest := ourSequences.ReplaceAllString(s, "")
	if i := strings.IndexByte(rest, 0x1b); i >= 0 {
		t.Errorf("foreign escape sequence near %q", rest[max(0, i-10):min(len(rest), i+20)])
	}
}

// DefaultOptions returns the recommended Options: every Default* value and
// Color on. It allocates nothing shared; callers may modify the result.
func DefaultOptions() Options {
	return Options{
		MaxBytes:  DefaultMaxBytes,
		Keep:      DefaultKeep,
		Color:     true,
		Buffer:    DefaultBuffer,
		TailLines: DefaultTailLines,
	}
}

// Path returns the transcript path given to Open. It never blocks.
func (w *Writer) Path() string {
	if w == nil {
		return ""
	}
	return w.path
}

// Dropped returns how many lines were lost since Open, either because the
// buffer was full or because a write failed. It never blocks on disk.
func (w *Writer) Dropped() int64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.droppedTotal
}
