package ptylog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStreamThenRaw renders events into a Stream, appends what it emits
// to a transcript file with Raw, and finds the file as a Writer on that
// file writes it itself: the path of a remote shim's transcript.
func TestStreamThenRaw(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return at }
	dir := t.TempDir()
	direct, err := Open(filepath.Join(dir, "direct.log"), Options{Color: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	relayed, err := Open(filepath.Join(dir, "relayed.log"), Options{Color: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var batches [][]string
	s := Stream(func(lines []string) error {
		mu.Lock()
		batches = append(batches, slices.Clone(lines))
		mu.Unlock()
		relayed.Raw(lines...)
		return nil
	}, Options{Color: true, Now: now})
	for _, w := range []*Writer{direct, s} {
		w.Notice("shim started")
		w.AgentMessage("hello\nworld")
		w.CommandStarted("ls")
		w.Error("boom")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Writer{direct, relayed} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := os.ReadFile(filepath.Join(dir, "direct.log"))
	got, _ := os.ReadFile(filepath.Join(dir, "relayed.log"))
	if len(want) == 0 || string(got) != string(want) {
		t.Fatalf("relayed transcript:\n%q\nwant:\n%q", got, want)
	}
	if len(batches) == 0 {
		t.Fatal("the stream emitted nothing")
	}
	if tail := s.Tail(2); len(tail) != 2 || !strings.Contains(tail[1], "boom") {
		t.Fatalf("stream's tail = %q", tail)
	}
}

// TestRawCleans checks that Raw keeps colours but drops other escape
// sequences and splits lines.
func TestRawCleans(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.log")
	w, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Raw("\x1b[31mred\x1b[0m\x1b]52;c;AAAA\x07 one\ntwo\r\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "\x1b[31mred\x1b[0m one\ntwo\n" {
		t.Fatalf("file = %q", b)
	}
}
