package ptylog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// stallFile blocks every Write until gate is closed.
type stallFile struct {
	*os.File
	gate    <-chan struct{}
	entered func()
}

func (f *stallFile) Write(p []byte) (int, error) {
	f.entered()
	<-f.gate
	return f.File.Write(p)
}

// stallOpener returns an openFile hook whose files stall until gate closes;
// entered is signalled when a write starts waiting.
func stallOpener(gate <-chan struct{}, entered func()) func(string, int, os.FileMode) (file, error) {
	return func(name string, flag int, perm os.FileMode) (file, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return &stallFile{File: f, gate: gate, entered: entered}, nil
	}
}

// failingFile fails Write with ENOSPC while the shared budget lasts.
type failingFile struct {
	*os.File
	fails *atomic.Int32
}

func (f *failingFile) Write(p []byte) (int, error) {
	if f.fails.Add(-1) >= 0 {
		return 0, syscall.ENOSPC
	}
	return f.File.Write(p)
}

var markerRE = regexp.MustCompile(`\[batty: (\d+) transcript lines? dropped\]`)

// markerCount returns the N of a drop marker line, or -1.
func markerCount(line string) int64 {
	m := markerRE.FindStringSubmatch(line)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func TestOpenCreatesPrivateDirAndFile(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "t.log")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, tc := range []struct {
		path string
		perm os.FileMode
	}{{filepath.Join(root, "a"), 0o700}, {filepath.Join(root, "a", "b"), 0o700}, {path, 0o600}} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != tc.perm {
			t.Errorf("%s: mode %v, want %v", tc.path, got, tc.perm)
		}
	}
	if w.Path() != path {
		t.Errorf("Path() = %q, want %q", w.Path(), path)
	}
}

func TestOpenAppendsToExistingTranscript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.log")
	if err := os.WriteFile(path, []byte("old line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	w.Notice("restarted")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"old line", "15:04:05 [batty] restarted"}
	if got := readLines(t, path); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"", filepath.Join(blocker, "sub", "t.log"), dir} {
		if w, err := Open(path, Options{}); err == nil {
			w.Close()
			t.Errorf("Open(%q) succeeded", path)
		} else if !strings.Contains(err.Error(), "transcript") {
			t.Errorf("Open(%q) error %q lacks context", path, err)
		}
	}
}

func TestOptionDefaults(t *testing.T) {
	got := Options{}.withDefaults()
	if got.MaxBytes != DefaultMaxBytes || got.Keep != DefaultKeep || got.Buffer != DefaultBuffer ||
		got.TailLines != DefaultTailLines || got.Now == nil || got.Color {
		t.Errorf("zero Options defaults: %+v", got)
	}
	d := DefaultOptions()
	if !d.Color || d.MaxBytes != 10<<20 || d.Keep != 3 || d.Buffer != 4096 || d.TailLines != 500 {
		t.Errorf("DefaultOptions: %+v", d)
	}
}

func TestRotation(t *testing.T) {
	tests := []struct {
		name     string
		keep     int
		lines    int
		maxBytes int64
		allKept  bool
	}{
		{name: "keeps three generations", keep: 3, lines: 500, maxBytes: 1024},
		{name: "keeps everything when keep is large", keep: 100, lines: 500, maxBytes: 1024, allKept: true},
		{name: "line larger than max", keep: 50, lines: 20, maxBytes: 10, allKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, path := openTest(t, Options{MaxBytes: tt.maxBytes, Keep: tt.keep, Buffer: tt.lines + 10})
			// A leftover from an earlier run with a larger Keep.
			stale := fmt.Sprintf("%s.%d", path, tt.keep+1)
			if err := os.WriteFile(stale, []byte("stale\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for i := range tt.lines {
				w.Notice(fmt.Sprintf("line %04d", i))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if d := w.Dropped(); d != 0 {
				t.Fatalf("dropped %d lines", d)
			}
			// Oldest generation first.
			var all []string
			for i := tt.keep; i >= 0; i-- {
				name := path
				if i > 0 {
					name = fmt.Sprintf("%s.%d", path, i)
				}
				fi, err := os.Stat(name)
				if errors.Is(err, os.ErrNotExist) {
					if !tt.allKept {
						t.Errorf("generation %s missing", name)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				lines := readLines(t, name)
				if fi.Size() > tt.maxBytes && len(lines) > 1 {
					t.Errorf("%s has %d bytes, max %d", name, fi.Size(), tt.maxBytes)
				}
				all = append(all, lines...)
			}
			if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("generation beyond Keep survived: %v", err)
			}
			if len(all) == 0 {
				t.Fatal("no lines kept")
			}
			if tt.allKept && len(all) != tt.lines {
				t.Errorf("kept %d lines, want all %d", len(all), tt.lines)
			}
			// Whatever was kept is the contiguous, in-order end of what was written.
			first := tt.lines - len(all)
			for i, l := range all {
				if want := fmt.Sprintf("15:04:05 [batty] line %04d", first+i); l != want {
					t.Fatalf("line %d = %q, want %q", i, l, want)
				}
			}
		})
	}
}

func TestRotationFailureKeepsAppending(t *testing.T) {
	var reports atomic.Int32
	opts := Options{MaxBytes: 200, Keep: 2, Buffer: 1000, OnError: func(error) { reports.Add(1) }}
	opts.hooks.rename = func(oldpath, newpath string) error {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EACCES}
	}
	// The first write waits until every line is queued, so the failed
	// rotations all fall in the second batch: one run of failures.
	gate := make(chan struct{})
	entered, enter := signalChan()
	opts.hooks.openFile = stallOpener(gate, enter)
	w, path := openTest(t, opts)
	for i := range 100 {
		w.Notice(fmt.Sprintf("line %04d", i))
		if i == 0 {
			wait(t, entered, "the first write to stall")
		}
	}
	close(gate)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(readLines(t, path)); got != 100 {
		t.Errorf("%d lines in %s, want 100", got, path)
	}
	if _, err := os.Stat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unexpected generation: %v", err)
	}
	if got := reports.Load(); got != 1 {
		t.Errorf("OnError called %d times, want 1", got)
	}
}

func TestNeverBlocksWhenDiskStalls(t *testing.T) {
	gate := make(chan struct{})
	entered, enter := signalChan()
	const buffer = 8
	opts := Options{Buffer: buffer}
	opts.hooks.openFile = stallOpener(gate, enter)
	w, path := openTest(t, opts)

	w.Notice("first")
	wait(t, entered, "the first write to stall")

	const goroutines, perG = 8, 500
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range perG {
					w.AgentMessage(fmt.Sprintf("g%d m%d", g, i))
				}
			})
		}
		wg.Wait()
	}()
	wait(t, done, "writers to return while the disk is stalled")

	if got, want := w.Dropped(), int64(goroutines*perG-buffer); got != want {
		t.Errorf("Dropped() = %d, want %d", got, want)
	}
	if tail := w.Tail(1); len(tail) != 1 || !strings.HasPrefix(tail[0], "15:04:05 » g") {
		t.Errorf("Tail(1) = %q, want a queued message", tail)
	}

	close(gate)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 1+buffer+1 {
		t.Fatalf("%d lines, want %d: %q", len(lines), 1+buffer+1, lines)
	}
	if got := markerCount(lines[len(lines)-1]); got != w.Dropped() {
		t.Errorf("final marker %q reports %d, want %d", lines[len(lines)-1], got, w.Dropped())
	}
}

func TestDropMarkerPrecedesNextLine(t *testing.T) {
	gate := make(chan struct{})
	entered, enter := signalChan()
	batches, batchDone := signalChan()
	opts := Options{Buffer: 4}
	opts.hooks.openFile = stallOpener(gate, enter)
	opts.hooks.afterBatch = batchDone
	w, path := openTest(t, opts)

	w.Notice("line 0")
	wait(t, entered, "the first write to stall")
	for i := 1; i < 10; i++ {
		w.Notice(fmt.Sprintf("line %d", i)) // 1-4 queued, 5-9 dropped
	}
	close(gate)
	waitQueueEmpty(t, w, batches)
	w.Notice("after")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"15:04:05 [batty] line 0",
		"15:04:05 [batty] line 1",
		"15:04:05 [batty] line 2",
		"15:04:05 [batty] line 3",
		"15:04:05 [batty] line 4",
		"15:04:05 [batty: 5 transcript lines dropped]",
		"15:04:05 [batty] after",
	}
	if got := readLines(t, path); !slices.Equal(got, want) {
		t.Errorf("file:\n got %q\nwant %q", got, want)
	}
	if got := w.Tail(3); !slices.Equal(got, want[4:]) {
		t.Errorf("Tail(3) = %q, want %q", got, want[4:])
	}
}

func TestWriteErrorReportedOnceAndRecovers(t *testing.T) {
	var fails atomic.Int32
	fails.Store(3)
	var (
		mu     sync.Mutex
		errs   []error
		opened atomic.Int32
	)
	batches, batchDone := signalChan()
	opts := Options{OnError: func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}}
	opts.hooks.afterBatch = batchDone
	opts.hooks.openFile = func(name string, flag int, perm os.FileMode) (file, error) {
		opened.Add(1)
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return &failingFile{File: f, fails: &fails}, nil
	}
	w, path := openTest(t, opts)
	for i := range 5 {
		w.Notice(fmt.Sprintf("line %d", i))
		wait(t, batches, "the line to be written")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 {
		t.Fatalf("OnError called %d times (%v), want once", len(errs), errs)
	}
	if !errors.Is(errs[0], syscall.ENOSPC) || !strings.Contains(errs[0].Error(), path) {
		t.Errorf("error %q should wrap ENOSPC and name the transcript", errs[0])
	}
	want := []string{
		"15:04:05 [batty: 3 transcript lines dropped]",
		"15:04:05 [batty] line 3",
		"15:04:05 [batty] line 4",
	}
	if got := readLines(t, path); !slices.Equal(got, want) {
		t.Errorf("file:\n got %q\nwant %q", got, want)
	}
	if got := w.Dropped(); got != 3 {
		t.Errorf("Dropped() = %d, want 3", got)
	}
	if got := opened.Load(); got < 2 {
		t.Errorf("file opened %d times; a failed file should be reopened", got)
	}
}

func TestCloseIdempotentAndFlushes(t *testing.T) {
	w, path := openTest(t, Options{})
	for i := range 1000 {
		w.Notice(fmt.Sprintf("line %d", i))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := w.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	lines := readLines(t, path)
	if len(lines) != 1000 || lines[999] != "15:04:05 [batty] line 999" {
		t.Fatalf("after Close: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	tail := w.Tail(1)
	w.AgentMessage("after close")
	w.CommandStarted("x")
	w.TurnEnd("completed", "")
	if got := readLines(t, path); len(got) != 1000 {
		t.Errorf("write after Close changed the file: %d lines", len(got))
	}
	if got := w.Tail(1); !slices.Equal(got, tail) {
		t.Errorf("Tail changed after Close: %q", got)
	}
	select {
	case <-w.done:
	default:
		t.Error("writer goroutine still running after Close")
	}
}

func TestConcurrentUseAndClose(t *testing.T) {
	w, path := openTest(t, Options{Color: true, Buffer: 64, MaxBytes: 4096, Keep: 2})
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			<-start
			for i := range 300 {
				switch i % 6 {
				case 0:
					w.AgentMessage(fmt.Sprintf("g%d msg %d\nsecond", g, i))
				case 1:
					w.CommandStarted("ls")
				case 2:
					w.CommandFinished("ls", intp(i%2), "completed", "a\nb")
				case 3:
					w.Usage(UsageLine{TurnInput: int64(i), ContextPct: -1})
				case 4:
					_ = w.Tail(5)
				case 5:
					_ = w.Dropped()
				}
			}
		})
	}
	close(start)
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	wg.Wait()
	for _, l := range readLines(t, path) {
		checkOnlyOurSequences(t, l)
	}
}

func TestTail(t *testing.T) {
	gate := make(chan struct{})
	entered, enter := signalChan()
	opts := Options{Color: true, TailLines: 4}
	opts.hooks.openFile = stallOpener(gate, enter)
	w, _ := openTest(t, opts)
	defer close(gate)

	w.Notice("first")
	wait(t, entered, "the first write to stall")
	for i := range 10 {
		w.Warning(fmt.Sprintf("queued %d", i))
	}
	want := []string{
		"15:04:05 warning: queued 6",
		"15:04:05 warning: queued 7",
		"15:04:05 warning: queued 8",
		"15:04:05 warning: queued 9",
	}
	if got := w.Tail(2); !slices.Equal(got, want[2:]) {
		t.Errorf("Tail(2) = %q, want %q", got, want[2:])
	}
	if got := w.Tail(100); !slices.Equal(got, want) {
		t.Errorf("Tail(100) = %q, want %q", got, want)
	}
	if got := w.Tail(0); got != nil {
		t.Errorf("Tail(0) = %q, want nil", got)
	}
	got := w.Tail(1)
	got[0] = "mutated"
	if w.Tail(1)[0] == "mutated" {
		t.Error("Tail returned the ring's storage")
	}
}

func TestNilWriter(t *testing.T) {
	var w *Writer
	w.TurnHeader(TurnHeader{})
	w.AgentMessage("x")
	w.Reasoning("x")
	w.CommandStarted("x")
	w.CommandFinished("x", nil, "", "")
	w.FileChanges([]FileChange{{"a", "add"}})
	w.WebSearch("x")
	w.Warning("x")
	w.Error("x")
	w.Notice("x")
	w.Usage(UsageLine{})
	w.TurnEnd("completed", "")
	if w.Tail(5) != nil || w.Dropped() != 0 || w.Path() != "" || w.Close() != nil {
		t.Error("nil Writer should be inert")
	}
}

// discardFile accepts writes without touching the disk.
type discardFile struct{ *os.File }

func (discardFile) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkAgentMessage(b *testing.B) {
	opts := Options{Color: true, Buffer: 1 << 16}
	opts.hooks.openFile = func(name string, flag int, perm os.FileMode) (file, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return discardFile{f}, nil
	}
	w, _ := openTest(b, opts)
	msg := "I updated shim/shim.go to parse the new event.\n\nAll tests pass:\n  go test ./...\nNext I will wire the transcript."
	b.ReportAllocs()
	for b.Loop() {
		w.AgentMessage(msg)
	}
	b.StopTimer()
	b.ReportMetric(float64(w.Dropped())/float64(b.N), "dropped-lines/op")
}
