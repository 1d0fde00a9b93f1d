package ptylog

import (
	"bytes"
	"fmt"
	"io"
)

// StripWriter passes what is written to it on to another writer without
// ANSI escape sequences (see StripANSI): it turns a coloured transcript into
// plain text for a file, a pipe or a reader who set NO_COLOR. Lines are
// stripped whole, so a sequence split between two writes is still removed:
// the end of the data after its last newline is written at once when it
// holds no ESC, else held back until its line ends or Flush. Not safe for
// concurrent use.
type StripWriter struct {
	w       io.Writer
	pending []byte // the start of a line holding an ESC, not written yet
}

// NewStripWriter returns a StripWriter writing to w.
func NewStripWriter(w io.Writer) *StripWriter { return &StripWriter{w: w} }

// Write strips p and writes it on; it reports p as written whole unless
// the underlying writer fails.
func (s *StripWriter) Write(p []byte) (int, error) {
	data := p
	if len(s.pending) > 0 {
		data = append(s.pending, p...)
		s.pending = nil
	}
	var rest []byte
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data, rest = data[:i+1], data[i+1:]
	} else {
		data, rest = nil, data
	}
	if bytes.IndexByte(rest, esc) >= 0 {
		s.pending = append([]byte(nil), rest...)
		rest = nil
	}
	out := StripANSI(string(data)) + string(rest)
	if _, err := io.WriteString(s.w, out); err != nil {
		return 0, fmt.Errorf("strip colours: %w", err)
	}
	return len(p), nil
}

// Flush writes the line held back, stripped. It is idempotent.
func (s *StripWriter) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	out := StripANSI(string(s.pending))
	s.pending = nil
	if _, err := io.WriteString(s.w, out); err != nil {
		return fmt.Errorf("strip colours: %w", err)
	}
	return nil
}
