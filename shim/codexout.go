package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/battyhq/batty/codex"
)

// lineResult is one decoded stdout line or a non-fatal decoding problem.
type lineResult struct {
	ev  codex.Event
	err error
}

// progressReader counts what is read through it and whether a Read is
// waiting, so the turn can tell a pipe that is still being drained from one
// held open by a leftover descendant with nothing more to say.
type progressReader struct {
	r       io.Reader
	n       atomic.Int64
	reading atomic.Bool
	// owned by the turn's loop: what stalled saw last time
	lastN       int64
	lastReading bool
}

func (p *progressReader) Read(b []byte) (int, error) {
	p.reading.Store(true)
	n, err := p.r.Read(b)
	p.reading.Store(false)
	p.n.Add(int64(n))
	return n, err
}

// stalled reports whether, since its previous call, one Read has been
// waiting all along without getting a byte: the pipe was empty the whole
// time. The first call only takes a reading.
func (p *progressReader) stalled() bool {
	n, reading := p.n.Load(), p.reading.Load()
	stalled := reading && p.lastReading && n == p.lastN
	p.lastN, p.lastReading = n, reading
	return stalled
}

// readEvents decodes codex's stdout until EOF (or a forced read deadline)
// and closes out.
func readEvents(r io.Reader, out chan<- lineResult) {
	defer close(out)
	rd := codex.NewReader(r, 0)
	for {
		ev, err := rd.Next()
		if err == nil {
			out <- lineResult{ev: ev}
			continue
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if codex.IsLineError(err) {
			out <- lineResult{err: err}
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
			out <- lineResult{err: fmt.Errorf("read codex output: %w", err)}
		}
		return
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	t.Reset(d)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// describeExit renders how codex ended for a failure message.
func describeExit(code int, stderr string) string {
	msg := "codex was killed by a signal"
	if code >= 0 {
		msg = "codex exited with status " + strconv.Itoa(code) + " without finishing the turn"
	}
	if line := lastMeaningfulLine(stderr); line != "" {
		msg += ": " + line
	}
	return msg
}

// lastMeaningfulLine picks the error line from codex's stderr, skipping
// backtrace noise.
func lastMeaningfulLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Error:") || strings.HasPrefix(l, "No prompt provided") {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "Stack backtrace") && !strings.HasPrefix(l, "<unknown>") && !isFrame(l) {
			return l
		}
	}
	return ""
}

func isFrame(l string) bool {
	f := strings.Fields(l)
	return len(f) > 0 && strings.HasSuffix(f[0], ":") && strings.Trim(f[0], "0123456789:") == ""
}
