package textclip

import (
	"sync"
	"unicode/utf8"
)

// Tail returns s when it is at most max bytes long; else mark followed by
// the longest end of s that fits with it and does not start inside a
// UTF-8 sequence: at most max bytes in all (when max < len(mark), mark cut
// to max). It is the end of a command's output that tells what went
// wrong, where Bytes keeps a text's start.
func Tail(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	if max <= len(mark) {
		return Bytes(mark, max, "")
	}
	i := len(s) - (max - len(mark))
	for j := 0; j < utf8.UTFMax && i < len(s) && !utf8.RuneStart(s[i]); j++ {
		i++
	}
	return mark + s[i:]
}

// TailWriter keeps the end of what is written to it: String is Tail of
// everything written, with Max and Mark, though only about 2·Max bytes are
// ever held. Safe for concurrent use (a command's stdout and stderr).
type TailWriter struct {
	Max  int    // bytes String returns at most
	Mark string // what starts a text whose beginning was dropped

	mu  sync.Mutex
	b   []byte
	cut bool // bytes were dropped from the front
}

func (t *TailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.Max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.Max:]...)
		t.cut = true
	}
	return len(p), nil
}

// String returns the end of what was written (see TailWriter).
func (t *TailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.cut {
		return Tail(string(t.b), t.Max, t.Mark)
	}
	// The front was dropped: the mark is due however short the rest.
	if t.Max <= len(t.Mark) {
		return Bytes(t.Mark, t.Max, "")
	}
	return t.Mark + Tail(string(t.b), t.Max-len(t.Mark), "")
}

// HeadWriter keeps the first Max bytes written to it and drops the rest
// (a command's output read whole, bounded). It never fails a write. Not
// safe for concurrent use: give a command's stdout and stderr one each, or
// one writer for both (os/exec then writes from one goroutine).
type HeadWriter struct {
	Max int

	b []byte
}

func (h *HeadWriter) Write(p []byte) (int, error) {
	if room := h.Max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// String returns what was kept.
func (h *HeadWriter) String() string { return string(h.b) }
