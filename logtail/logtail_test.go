package logtail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/battyhq/batty/ptylog"
)

// syncBuf is an io.Writer that a test can wait on.
type syncBuf struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newSyncBuf() *syncBuf { return &syncBuf{changed: make(chan struct{}, 1)} }

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the output contains want, failing after a deadline.
func (s *syncBuf) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("no %q within the deadline; output:\n%s", want, s.String())
		}
	}
}

// counting opens files whose reads are counted in read.
type counting struct{ read atomic.Int64 }

type countingFile struct {
	*os.File
	c *counting
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.c.read.Add(int64(n))
	return n, err
}

func (c *counting) open(path string) (File, error) {
	f, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f.(*os.File), c: c}, nil
}

// follow runs t.Follow(n) in a goroutine until the test ends or the
// returned stop is called; stop returns Follow's error.
func follow(t *testing.T, tail *Tail, n int) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tail.Follow(ctx, n, time.Hour) }() // only file system events wake it
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		data string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"}, // a last line without a newline counts
		{"a\nb\n", 5, "a\nb\n"},
		{"a\nb\n", 0, ""},
		{"", 3, ""},
		{"\n\n\n", 2, "\n\n"},
	} {
		start, err := LastLines(strings.NewReader(tc.data), int64(len(tc.data)), tc.n)
		if err != nil || tc.data[start:] != tc.want {
			t.Errorf("LastLines(%q, %d) = %d (%q), %v; want %q", tc.data, tc.n, start, tc.data[min(int(start), len(tc.data)):], err, tc.want)
		}
	}
	// Lines spanning several chunks.
	var b strings.Builder
	for i := range 3 * chunkSize / 9 {
		fmt.Fprintf(&b, "%08d\n", i) // 9 bytes a line
	}
	data := b.String()
	start, err := LastLines(strings.NewReader(data), int64(len(data)), 20000)
	if err != nil || int(start) != len(data)-20000*9 {
		t.Fatalf("LastLines over chunks = %d, %v; want %d", start, err, len(data)-20000*9)
	}
}

// writeBigLog writes a log of size bytes whose last lines are tail: all but
// the tail is a hole, so the file costs no disk, but reading it would
// still cost size bytes.
func writeBigLog(t *testing.T, path string, size int64, tail string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size - int64(len(tail))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(tail), size-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
}

// The last lines of a 100 MB transcript cost a read of its end only, also
// when it is followed afterwards.
func TestPrintLastReadsOnlyTheTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.log")
	var tail strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&tail, "line %d\n", i)
	}
	const size = 100 << 20
	writeBigLog(t, path, size, tail.String())

	var c counting
	var out bytes.Buffer
	tl := &Tail{Path: path, Label: "log", Out: &out, Open: c.open}
	if err := tl.PrintLast(10); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 41; i <= 50; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if out.String() != want.String() {
		t.Fatalf("output %q, want %q", out.String(), want.String())
	}
	if got := c.read.Load(); got > 2*chunkSize {
		t.Fatalf("read %d bytes of a %d-byte file for its last 10 lines; want at most %d", got, size, 2*chunkSize)
	}

	c.read.Store(0)
	buf := newSyncBuf()
	fl := &Tail{Path: path, Label: "log", Out: buf, Open: c.open}
	stop := follow(t, fl, 10)
	buf.waitFor(t, "line 50\n")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("appended\n")
	f.Close()
	buf.waitFor(t, "line 50\nappended\n")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := c.read.Load(); got > 2*chunkSize {
		t.Fatalf("following read %d bytes of a %d-byte file; want at most %d", got, size, 2*chunkSize)
	}
}

var lineRE = regexp.MustCompile(`line (\d{5})`)

// A transcript written by ptylog and rotated at least twice per batch is
// followed with no line lost or printed twice, in order.
func TestFollowAcrossRotationsLosesAndDuplicatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engineer-1.log")
	w, err := ptylog.Open(path, ptylog.Options{MaxBytes: 1024, Keep: 3, Color: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	buf := newSyncBuf()
	stop := follow(t, &Tail{Path: path, Label: "transcript", Out: buf}, 1_000_000)
	w.Notice("ready")
	buf.waitFor(t, "ready")

	const batches, perBatch = 4, 50 // about 2.5 KiB, so 2 rotations, a batch
	next := 1
	for range batches {
		for range perBatch {
			w.Notice(fmt.Sprintf("line %05d", next))
			next++
		}
		buf.waitFor(t, fmt.Sprintf("line %05d", next-1))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{".1", ".2"} {
		if _, err := os.Stat(path + g); err != nil {
			t.Fatalf("no rotation to %s: %v", g, err)
		}
	}
	var got []int
	for _, m := range lineRE.FindAllStringSubmatch(buf.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	if len(got) != next-1 {
		t.Fatalf("printed %d numbered lines, want %d", len(got), next-1)
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("line %d printed as number %d: a line lost or duplicated; numbers %v", i+1, n, got)
		}
	}
}

// A truncated log is printed again from its start, with a notice.
func TestFollowTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte("first 1\nfirst 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	buf, notice := newSyncBuf(), newSyncBuf()
	follow(t, &Tail{Path: path, Label: "log", Out: buf, Notice: notice}, 10)
	buf.waitFor(t, "first 2\n")
	if err := os.WriteFile(path, []byte("new\n"), 0o600); err != nil { // truncates
		t.Fatal(err)
	}
	buf.waitFor(t, "first 2\nnew\n")
	notice.waitFor(t, "was truncated")
}

func TestPrintLastMissing(t *testing.T) {
	tl := &Tail{Path: filepath.Join(t.TempDir(), "none.log"), Label: "log", Out: &bytes.Buffer{}}
	if err := tl.PrintLast(5); !errors.Is(err, ErrNoFile) {
		t.Fatalf("PrintLast of a missing file = %v, want ErrNoFile", err)
	}
}

// BenchmarkPrintLast100MB prints the last 10 lines of a 100 MB log and
// reports the bytes read for it.
func BenchmarkPrintLast100MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.log")
	var tail strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&tail, "line %d\n", i)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(100<<20 - int64(tail.Len())); err != nil {
		b.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(tail.String()), 100<<20-int64(tail.Len())); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	var c counting
	for b.Loop() {
		tl := &Tail{Path: path, Label: "log", Out: io.Discard, Open: c.open}
		if err := tl.PrintLast(10); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.read.Load())/float64(b.N), "bytes-read/op")
}

// The notice for a log that does not exist yet is one short line, without
// the path (which wraps in a cockpit pane); the log then follows as usual.
func TestFollowMissingNoticeIsShort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("deep", 20))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "engineer-1.log")
	buf, notice := newSyncBuf(), newSyncBuf()
	follow(t, &Tail{Path: path, Label: "transcript for engineer-1", Out: buf, Notice: notice}, 10)
	notice.waitFor(t, "batty: no transcript for engineer-1 yet; waiting\n")
	if got := notice.String(); strings.Contains(got, dir) || len(got) > 60 {
		t.Fatalf("notice %q: want one short line without the path", got)
	}
	if err := os.WriteFile(path, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	buf.waitFor(t, "hello\n")
}

// With DimNotices the notice is one dim line.
func TestFollowDimNotice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	buf, notice := newSyncBuf(), newSyncBuf()
	follow(t, &Tail{Path: path, Label: "log", Out: buf, Notice: notice, DimNotices: true}, 10)
	notice.waitFor(t, "\x1b[2mbatty: no log yet; waiting\x1b[0m\n")
}

// HistoryDone is called once, after the last n lines and before the lines
// written later; for a missing file, before its first line.
func TestFollowHistoryDone(t *testing.T) {
	dir := t.TempDir()
	for _, existing := range []bool{true, false} {
		path := filepath.Join(dir, fmt.Sprintf("%v.log", existing))
		if existing {
			if err := os.WriteFile(path, []byte("old 1\nold 2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		buf := newSyncBuf()
		var history atomic.Value
		calls := make(chan struct{}, 2)
		follow(t, &Tail{Path: path, Label: "log", Out: buf, HistoryDone: func() {
			history.Store(buf.String())
			calls <- struct{}{}
		}}, 10)
		select {
		case <-calls:
		case <-time.After(20 * time.Second):
			t.Fatalf("existing=%v: HistoryDone not called", existing)
		}
		want := ""
		if existing {
			want = "old 1\nold 2\n"
		}
		if got := history.Load().(string); got != want {
			t.Errorf("existing=%v: history %q, want %q", existing, got, want)
		}
		appendFile(t, path, "new\n")
		buf.waitFor(t, "new\n")
		if len(calls) != 0 {
			t.Errorf("existing=%v: HistoryDone called again", existing)
		}
	}
}

// appendFile appends s to path, creating it if needed.
func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
