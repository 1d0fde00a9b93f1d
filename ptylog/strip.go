package ptylog

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/battyhq/batty/safetext"
)

// CleanWriter passes a transcript on to another writer, made safe for a
// terminal, each line's stamp shown as the time of day (ShortStamps): with colour, through safetext.Styled (the transcript's own
// colours kept, every other escape sequence dropped, other control and
// bidirectional characters shown escaped); without, through safetext.Text
// (plain text for a file, a pipe or a reader who set NO_COLOR). A
// transcript holds only what its Writer cleaned, but its directory may be
// writable by the agents it records, so `batty logs` cleans again what it
// prints. Data is cleaned a line at a time, so a sequence split between
// two writes is still recognised: the end of the data after its last
// newline is written at once when it holds no ESC, does not end in a CR
// and does not end inside a UTF-8 sequence, else held back until its line
// ends or Flush. Not safe for concurrent use.
type CleanWriter struct {
	w       io.Writer
	clean   func(string) string
	pending []byte // the start of a line not written yet
}

// NewCleanWriter returns a CleanWriter writing to w, keeping the colours
// when colour is set.
func NewCleanWriter(w io.Writer, colour bool) *CleanWriter {
	c := &CleanWriter{w: w, clean: func(s string) string { return ShortStamps(safetext.Text(s)) }}
	if colour {
		c.clean = func(s string) string { return ShortStamps(safetext.Styled(s)) }
	}
	return c
}

// Write cleans p and writes it on; it reports p as written whole unless
// the underlying writer fails.
func (c *CleanWriter) Write(p []byte) (int, error) {
	data := p
	if len(c.pending) > 0 {
		data = append(c.pending, p...)
		c.pending = nil
	}
	var rest []byte
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data, rest = data[:i+1], data[i+1:]
	} else {
		data, rest = nil, data
	}
	if holdBack(rest) {
		c.pending = append([]byte(nil), rest...)
		rest = nil
	}
	out := c.clean(string(data)) + c.clean(string(rest))
	if _, err := io.WriteString(c.w, out); err != nil {
		return 0, fmt.Errorf("write the transcript: %w", err)
	}
	return len(p), nil
}

// holdBack reports whether the start of a line may read otherwise once
// the rest of its line is there: it holds an ESC, ends in a CR (of a
// CR LF), or ends inside a UTF-8 sequence.
func holdBack(part []byte) bool {
	if len(part) == 0 {
		return false
	}
	if bytes.IndexByte(part, 0x1b) >= 0 || part[len(part)-1] == '\r' {
		return true
	}
	i := len(part) - 1
	for i > 0 && i > len(part)-utf8.UTFMax && !utf8.RuneStart(part[i]) {
		i--
	}
	return !utf8.FullRune(part[i:])
}

// Flush writes the line held back, cleaned. It is idempotent.
func (c *CleanWriter) Flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	out := c.clean(string(c.pending))
	c.pending = nil
	if _, err := io.WriteString(c.w, out); err != nil {
		return fmt.Errorf("write the transcript: %w", err)
	}
	return nil
}
