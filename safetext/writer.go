package safetext

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// Writer passes a stream of text batty did not write (a transcript, a
// diff) on to another writer, cleaned by a function of this package (Text,
// Styled, Block, or one built on them). Data is cleaned a line at a time,
// so a sequence split between two writes is still recognised: the end of
// the data after its last newline is cleaned and written at once when it
// holds no ESC, does not end in a CR and does not end inside a UTF-8
// sequence, else held back until its line ends or Flush. Not safe for
// concurrent use.
type Writer struct {
	w       io.Writer
	clean   func(string) string
	pending []byte // the start of a line not written yet
}

// NewWriter returns a Writer that writes to w what clean makes of the
// data. clean must keep line breaks where they are (as Text, Styled and
// Block do).
func NewWriter(w io.Writer, clean func(string) string) *Writer {
	return &Writer{w: w, clean: clean}
}

// Write cleans p and writes it on; it reports p as written whole unless
// the underlying writer fails.
func (c *Writer) Write(p []byte) (int, error) {
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
		return 0, fmt.Errorf("write cleaned text: %w", err)
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
	if bytes.IndexByte(part, esc) >= 0 || part[len(part)-1] == '\r' {
		return true
	}
	i := len(part) - 1
	for i > 0 && i > len(part)-utf8.UTFMax && !utf8.RuneStart(part[i]) {
		i--
	}
	return !utf8.FullRune(part[i:])
}

// Flush writes the line held back, cleaned. It is idempotent.
func (c *Writer) Flush() error {
	if len(c.pending) == 0 {
		return nil
	}
	out := c.clean(string(c.pending))
	c.pending = nil
	if _, err := io.WriteString(c.w, out); err != nil {
		return fmt.Errorf("write cleaned text: %w", err)
	}
	return nil
}
