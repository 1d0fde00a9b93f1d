package ptylog

import (
	"fmt"
	"io"

	"github.com/battyhq/batty/safetext"
)

// CleanWriter passes a transcript on to another writer, made safe for a
// terminal, each line's stamp shown as the time of day (ShortStamps): with
// colour, through safetext.Styled (the transcript's own colours kept, every
// other escape sequence dropped, other control and bidirectional characters
// shown escaped); without, through safetext.Text (plain text for a file, a
// pipe or a reader who set NO_COLOR). A transcript holds only what its
// Writer cleaned, but its directory may be writable by the agents it
// records, so `batty logs` cleans again what it prints. It is a
// safetext.Writer: cleaned a line at a time, a sequence split between two
// writes still recognised, a partial line without an ESC passed on at once.
// Not safe for concurrent use.
type CleanWriter struct {
	w *safetext.Writer
}

// NewCleanWriter returns a CleanWriter writing to w, keeping the colours
// when colour is set.
func NewCleanWriter(w io.Writer, colour bool) *CleanWriter {
	clean := func(s string) string { return ShortStamps(safetext.Text(s)) }
	if colour {
		clean = func(s string) string { return ShortStamps(safetext.Styled(s)) }
	}
	return &CleanWriter{w: safetext.NewWriter(w, clean)}
}

// Write cleans p and writes it on; it reports p as written whole unless
// the underlying writer fails.
func (c *CleanWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("write the transcript: %w", err)
	}
	return n, nil
}

// Flush writes the line held back, cleaned. It is idempotent.
func (c *CleanWriter) Flush() error {
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("write the transcript: %w", err)
	}
	return nil
}
