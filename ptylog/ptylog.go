// Package ptylog writes the readable, per-agent transcript that humans follow
// with `tail -F` in a tmux pane.
//
// A Writer renders semantic events (turn headers, agent messages, commands,
// usage, ...) into optionally coloured lines, each starting with the full
// time it was written (StampLayout), and appends them to a transcript file. Callers never wait on disk: every method renders the
// event, enqueues the lines into a bounded in-memory buffer and returns. One
// goroutine owned by the Writer drains the buffer, appends to the file and
// rotates it by size (path → path.1 → path.2 ...), which `tail -F` follows
// by name. When the buffer is full, lines are dropped and counted, and the
// next accepted line is preceded by a "[batty: N transcript lines dropped]"
// marker.
//
// Text that comes from the model or from command output is untrusted: it
// goes through package safetext before anything reaches the file (escape
// sequences removed, other control and bidirectional characters shown
// escaped), so the only ANSI sequences in a transcript are the Writer's own
// colours. CleanWriter cleans a transcript again as it is printed.
//
// The transcript's directory may be writable by the agents it records, so
// nothing is opened, created or renamed through a symbolic link (see Open).
package ptylog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/safetext"
)

// Defaults applied by Open to zero (or negative) Options fields.
const (
	// DefaultMaxBytes is the size at which the transcript is rotated.
	DefaultMaxBytes int64 = 10 << 20
	// DefaultKeep is the number of rotated generations (path.1 ... path.N) kept.
	DefaultKeep = 3
	// DefaultBuffer is the number of rendered lines that may wait for disk.
	DefaultBuffer = 4096
	// DefaultTailLines is the number of recent lines remembered for Tail.
	DefaultTailLines = 500
)

// Options configures a Writer. The zero value is usable: every numeric field
// that is zero or negative takes its Default* value, Now defaults to
// time.Now, and Color is off. DefaultOptions returns the recommended settings
// for a terminal pane, with Color on.
type Options struct {
	// MaxBytes is the size a transcript file may reach before it is rotated.
	// A single line larger than MaxBytes is still written whole, alone in a
	// fresh file. Default DefaultMaxBytes.
	MaxBytes int64
	// Keep is how many rotated generations (path.1 ... path.Keep) are kept;
	// older generations are deleted. Default DefaultKeep.
	Keep int
	// Color enables ANSI colours in the file. Off in the zero Options, on in
	// DefaultOptions.
	Color bool
	// Buffer is the maximum number of lines queued for the disk. Lines that
	// do not fit are dropped and counted. Default DefaultBuffer.
	Buffer int
	// Now supplies timestamps; tests inject a fixed clock. Default time.Now.
	Now func() time.Time
	// TailLines is the size of the in-memory ring served by Tail.
	// Default DefaultTailLines.
	TailLines int
	// OnError, if set, is told about a write, rotation or reopen failure. It
	// is called once per run of consecutive failures (again only after a
	// successful write), on the Writer's goroutine. It must not block for
	// long and must not call Close; it may call the other methods.
	OnError func(error)
	// Root, if set, is a directory the transcript lies beneath (the
	// project directory holding .batty): no directory between Root and the
	// transcript may be a symbolic link. Root itself is trusted. Unset, only
	// the transcript's own directory is checked.
	Root string

	hooks hooks
}

// hooks lets tests replace the file system operations used by the sink and
// observe the writer goroutine. Zero fields use the real implementations.
type hooks struct {
	openFile   func(name string, flag int, perm os.FileMode) (file, error)
	rename     func(oldpath, newpath string) error
	afterBatch func()
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.TailLines <= 0 {
		o.TailLines = DefaultTailLines
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Writer is a non-blocking transcript writer for one agent. Create it with
// Open; all methods are safe for concurrent use and none of them waits on
// disk except Close. A nil *Writer is valid and discards everything, so
// callers can leave the transcript disabled without nil checks.
//
// The Writer owns one goroutine, which runs from Open until Close returns.
type Writer struct {
	path    string
	color   bool
	now     func() time.Time
	buffer  int
	onError func(error)
	hooks   hooks

	closed atomic.Bool // fast path for calls after Close

	mu           sync.Mutex
	closing      bool
	pending      []string // rendered lines waiting for the goroutine
	markLines    int      // drop markers among pending
	markCount    int64    // lost lines those markers report
	dropped      int64    // lines lost since the last queued marker
	droppedTotal int64    // lines lost since Open
	ring         []string // plain copies of recently accepted lines
	ringNext     int
	ringLen      int
	lastStart    string // command of the most recent CommandStarted
	afterStart   bool   // nothing was queued since that CommandStarted

	wake      chan struct{} // capacity 1; coalesced "pending has lines"
	done      chan struct{} // closed when the goroutine has exited
	closeOnce sync.Once
	closeErr  error

	// Owned by the writer goroutine.
	sink    lineSink
	failing bool
	spare   []string
}

// Open opens (creating if needed) the transcript at path and starts the
// Writer's goroutine. Parent directories are created with mode 0700 and the
// file with mode 0600; an existing transcript is appended to, never
// truncated. Open does touch the disk and may block briefly; the returned
// Writer must be closed with Close to flush it and stop the goroutine.
//
// Nothing is written through a symbolic link: the transcript's directory
// (and, with Options.Root, every directory below Root) is opened with
// O_NOFOLLOW and held open, and the transcript and its rotated generations
// are opened, renamed and removed relative to it with O_NOFOLLOW. A link
// found at Open is an error matching atomicfile.ErrSymlink; a link planted
// later makes the reopen after a rotation or a failure fail the same way,
// reported to OnError, and the lines are dropped (counted) rather than
// written through it.
func Open(path string, opts Options) (*Writer, error) {
	if path == "" {
		return nil, errors.New("open transcript: empty path")
	}
	opts = opts.withDefaults()
	dir, err := openDir(filepath.Dir(path), opts.Root)
	if err != nil {
		return nil, fmt.Errorf("open transcript %s: %w", path, err)
	}
	s := &sink{
		dir:      dir,
		path:     path,
		maxBytes: opts.MaxBytes,
		keep:     opts.Keep,
		openFile: opts.hooks.openFile,
		rename:   opts.hooks.rename,
	}
	if err := s.open(); err != nil {
		dir.Close()
		return nil, err
	}
	return start(path, s, opts), nil
}

// start returns a Writer of lines to s and starts its goroutine.
func start(path string, s lineSink, opts Options) *Writer {
	w := &Writer{
		path:    path,
		color:   opts.Color,
		now:     opts.Now,
		buffer:  opts.Buffer,
		onError: opts.OnError,
		hooks:   opts.hooks,
		ring:    make([]string, opts.TailLines),
		pending: make([]string, 0, min(opts.Buffer, 256)),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		sink:    s,
	}
	go w.run()
	return w
}

// lineSink is where a Writer's goroutine puts its lines: a transcript
// file (sink) or a function (Stream).
type lineSink interface {
	// write puts lines, each without its newline; it returns how many of
	// them were lost and the first error.
	write(lines []string) (lost int, err error)
	// close flushes and releases the sink.
	close() error
}

// funcSink hands lines to a function.
type funcSink func(lines []string) error

func (f funcSink) write(lines []string) (int, error) {
	if err := f(lines); err != nil {
		return len(lines), err
	}
	return 0, nil
}

func (funcSink) close() error { return nil }

// Stream returns a Writer like Open's whose rendered lines go to emit
// instead of a file: the transcript of a process whose file is elsewhere
// (a shim on another host sends its lines to the daemon, which appends
// them with Raw). emit is called on the Writer's goroutine with batches of
// lines in order, never concurrently; it may block (lines queue meanwhile,
// and beyond Options.Buffer are dropped and counted), and an error counts
// the batch as lost and goes to Options.OnError. emit must not keep lines
// after it returns. MaxBytes, Keep and Root do not apply.
func Stream(emit func(lines []string) error, opts Options) *Writer {
	return start("", funcSink(emit), opts.withDefaults())
}

// Raw queues lines that are rendered already (by another Writer, see
// Stream), their time stamps and colours kept: each goes through
// safetext.Styled (only colour sequences stay; other escapes are dropped
// and control characters shown escaped), and a line holding line breaks
// becomes several. It never blocks, as the event methods do.
func (w *Writer) Raw(lines ...string) {
	if !w.accepting() || len(lines) == 0 {
		return
	}
	e := entry{at: w.now()}
	for _, l := range lines {
		for _, part := range strings.Split(strings.TrimRight(safetext.Styled(l), "\n"), "\n") {
			e.lines = append(e.lines, rline{out: part, plain: safetext.StripANSI(part)})
		}
	}
	w.enqueue(e)
}

// Tail returns copies of the last n lines accepted for the transcript, oldest
// first, without ANSI sequences and without trailing newlines. Lines still
// queued for the disk are included, dropped lines are not (the drop marker
// is). At most Options.TailLines lines are remembered; n <= 0 returns nil.
// Tail keeps working after Close and never blocks on disk.
func (w *Writer) Tail(n int) []string {
	if w == nil || n <= 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n = min(n, w.ringLen)
	out := make([]string, n)
	size := len(w.ring)
	start := w.ringNext - n + size
	for i := range out {
		out[i] = w.ring[(start+i)%size]
	}
	return out
}

// Close flushes every queued line (followed by a drop marker if lines were
// dropped since the last one), stops the Writer's goroutine, fsyncs and
// closes the file. It blocks until the queue is on disk. Close is idempotent
// and safe for concurrent use: every call returns the result of the first.
// After Close, the event methods are no-ops; Tail and Dropped keep working.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		w.mu.Lock()
		w.closing = true
		w.mu.Unlock()
		w.signal()
		<-w.done
	})
	return w.closeErr
}

// entry is one rendered event, queued atomically with respect to other events.
type entry struct {
	at    time.Time // time shared by every line, used for a drop marker
	lines []rline
	// echo leading lines repeat command cmd; they are skipped when the
	// previously queued event was CommandStarted(cmd).
	echo    int
	cmd     string
	started bool // entry is CommandStarted(cmd)
}

// accepting reports whether rendering an event is worthwhile.
func (w *Writer) accepting() bool {
	return w != nil && !w.closed.Load()
}

// enqueue appends e to the pending queue and the Tail ring without blocking.
func (w *Writer) enqueue(e entry) {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return
	}
	lines := e.lines
	if e.echo > 0 && w.afterStart && w.lastStart == e.cmd {
		lines = lines[e.echo:]
	}
	room := w.buffer - len(w.pending)
	queued := false
	if w.dropped > 0 {
		if room < 2 {
			w.drop(len(lines))
			w.afterStart = false
			w.mu.Unlock()
			return
		}
		w.push(w.marker(e.at, w.dropped))
		w.markLines++
		w.markCount += w.dropped
		w.dropped = 0
		room--
		queued = true
	}
	n := min(len(lines), room)
	for _, l := range lines[:n] {
		w.push(l)
	}
	w.drop(len(lines) - n)
	w.afterStart = e.started && n == len(lines)
	if e.started {
		w.lastStart = e.cmd
	}
	w.mu.Unlock()
	if queued || n > 0 {
		w.signal()
	}
}

// push queues one line and remembers its plain form. Caller holds w.mu.
func (w *Writer) push(l rline) {
	w.pending = append(w.pending, l.out)
	w.ring[w.ringNext] = l.plain
	w.ringNext = (w.ringNext + 1) % len(w.ring)
	w.ringLen = min(w.ringLen+1, len(w.ring))
}

// drop counts n lost lines. Caller holds w.mu.
func (w *Writer) drop(n int) {
	w.dropped += int64(n)
	w.droppedTotal += int64(n)
}

// lose accounts for lines of a batch that could not be written. When the
// whole batch is lost, the markers in it are not counted as lines; the
// losses they reported are carried into the next marker instead. Caller
// holds w.mu.
func (w *Writer) lose(lost, batchLen, markLines int, markCount int64) {
	if lost == batchLen {
		real := int64(lost - markLines)
		w.droppedTotal += real
		w.dropped += real + markCount
		return
	}
	w.drop(lost)
}

// marker renders the "lines dropped" notice.
func (w *Writer) marker(at time.Time, n int64) rline {
	noun := "lines"
	if n == 1 {
		noun = "line"
	}
	text := fmt.Sprintf("[batty: %d transcript %s dropped]", n, noun)
	return renderLine(w.color, at, seg{styleYellow, text})
}

// signal wakes the goroutine without blocking; wake-ups coalesce.
func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run is the Writer's goroutine: it drains pending until Close.
func (w *Writer) run() {
	defer close(w.done)
	for range w.wake {
		for {
			w.mu.Lock()
			batch := w.pending
			w.pending = w.spare[:0]
			markLines, markCount := w.markLines, w.markCount
			w.markLines, w.markCount = 0, 0
			closing := w.closing
			w.mu.Unlock()
			if len(batch) == 0 {
				w.spare = batch
				if closing {
					w.finish()
					return
				}
				break
			}
			lost, err := w.sink.write(batch)
			w.report(err)
			if lost > 0 {
				w.mu.Lock()
				w.lose(lost, len(batch), markLines, markCount)
				w.mu.Unlock()
			}
			clear(batch)
			w.spare = batch[:0]
			if w.hooks.afterBatch != nil {
				w.hooks.afterBatch()
			}
		}
	}
}

// finish writes a final drop marker if needed, then syncs and closes the
// file. It runs on the goroutine after the queue is empty and closing is set.
func (w *Writer) finish() {
	w.mu.Lock()
	d := w.dropped
	w.dropped = 0
	var m rline
	if d > 0 {
		m = w.marker(w.now(), d)
		w.ring[w.ringNext] = m.plain
		w.ringNext = (w.ringNext + 1) % len(w.ring)
		w.ringLen = min(w.ringLen+1, len(w.ring))
	}
	w.mu.Unlock()
	if d > 0 {
		_, err := w.sink.write([]string{m.out})
		w.report(err)
	}
	w.closeErr = w.sink.close()
}

// report passes err to OnError once per run of consecutive failures.
func (w *Writer) report(err error) {
	if err == nil {
		w.failing = false
		return
	}
	if w.failing {
		return
	}
	w.failing = true
	if w.onError != nil {
		w.onError(err)
	}
}

// openDir opens (creating 0700 if needed) the transcript directory dir
// without following a link below root ("" = the parent of dir, whose
// missing ancestors are created as well).
func openDir(dir, root string) (*atomicfile.Dir, error) {
	dir = filepath.Clean(dir)
	if root == "" {
		root = filepath.Dir(dir)
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, err
		}
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("transcript directory %s is not beneath %s", dir, root)
	}
	return atomicfile.OpenDirBeneath(root, rel, true)
}
