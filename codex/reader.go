package codex

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine is the line length limit NewReader uses when given 0. Real
// lines reach several megabytes (a 5 MB reply is one 5,077,005-byte line).
const DefaultMaxLine = 64 << 20

// readBufferSize is the size of the bufio buffer; longer lines are
// assembled from several reads.
const readBufferSize = 64 << 10

// retainLimit is the largest line buffer a Reader keeps between lines;
// a bigger one is released after use so that one huge reply does not pin
// its memory for the rest of the stream.
const retainLimit = 1 << 20

// ErrLineTooLong is wrapped in the *LineError that Reader.Next returns for a
// line longer than the reader's limit. The line has been consumed up to and
// including its newline; reading can go on.
var ErrLineTooLong = errors.New("codex: line too long")

// LineError reports one unusable line: longer than the limit (Err wraps
// ErrLineTooLong) or not an event (Err is the ParseEvent error). It is not
// fatal: the Reader continues with the next line.
type LineError struct {
	// Line is the 1-based line number in the stream, blank lines included.
	Line int
	// Err is the reason.
	Err error
}

// Error implements error.
func (e *LineError) Error() string {
	return fmt.Sprintf("stdout line %d: %v", e.Line, e.Err)
}

// Unwrap returns Err.
func (e *LineError) Unwrap() error { return e.Err }

// IsLineError reports whether err is (or wraps) a *LineError, i.e. a
// non-fatal error after which Reader.Next can be called again.
func IsLineError(err error) bool {
	var le *LineError
	return errors.As(err, &le)
}

// Reader reads the JSONL stream of `codex exec --json` one event at a time.
// It has no line length limit other than the one it is given, skips blank
// lines and accepts a last line without a newline. A Reader is not safe for
// concurrent use.
type Reader struct {
	br   *bufio.Reader
	max  int
	line int
	buf  []byte
	err  error // sticky: io.EOF or a read error
}

// NewReader returns a Reader of r that accepts lines of up to maxLine bytes
// (newline excluded); maxLine <= 0 means DefaultMaxLine.
func NewReader(r io.Reader, maxLine int) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Reader{br: bufio.NewReaderSize(r, readBufferSize), max: maxLine}
}

// Next returns the next event. Its errors are:
//   - *LineError for a line longer than the limit (wrapping ErrLineTooLong)
//     or a line ParseEvent rejects: not fatal, call Next again;
//   - io.EOF at the end of the stream;
//   - any other error when reading failed: fatal, and returned again by
//     every later call.
func (r *Reader) Next() (Event, error) {
	for {
		if r.err != nil {
			return Event{}, r.err
		}
		line, size, err := r.readLine()
		if err != nil && err != io.EOF {
			r.err = fmt.Errorf("codex: read stdout line %d: %w", r.line+1, err)
			return Event{}, r.err
		}
		if err == io.EOF {
			r.err = io.EOF
			if size == 0 {
				return Event{}, io.EOF
			}
		}
		r.line++
		if size > r.max {
			return Event{}, &LineError{Line: r.line, Err: errLineTooLong(size, r.max)}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			r.release()
			continue
		}
		ev, perr := ParseEvent(line)
		r.release()
		if perr != nil {
			return Event{}, &LineError{Line: r.line, Err: perr}
		}
		return ev, nil
	}
}

// grow makes room for n more bytes in r.buf, doubling its capacity (up to
// the line limit) rather than growing by append's smaller steps: a 5 MB
// line then costs about 10 MB of allocation instead of 25 MB.
func (r *Reader) grow(n int) {
	need := len(r.buf) + n
	if need <= cap(r.buf) {
		return
	}
	c := max(2*cap(r.buf), 2*readBufferSize)
	c = max(min(c, r.max), need)
	nb := make([]byte, len(r.buf), c)
	copy(nb, r.buf)
	r.buf = nb
}

func errLineTooLong(size, limit int) error {
	return fmt.Errorf("%w: %d bytes, limit %d", ErrLineTooLong, size, limit)
}

// release drops an oversized line buffer.
func (r *Reader) release() {
	if cap(r.buf) > retainLimit {
		r.buf = nil
	}
}

// readLine reads one line without its newline. size is the length of the
// line (newline excluded); when size exceeds the limit, line is nil and the
// rest of the line has been discarded. The returned slice is valid until the
// next read. err is io.EOF when the stream ended, with size > 0 if an
// unterminated last line came before it.
func (r *Reader) readLine() (line []byte, size int, err error) {
	r.buf = r.buf[:0]
	tooLong := false
	for {
		frag, err := r.br.ReadSlice('\n')
		n := len(frag)
		if err == nil {
			n-- // the newline
		}
		size += n
		switch {
		case tooLong:
		case size > r.max:
			tooLong = true
			r.buf = r.buf[:0]
		case err == nil && len(r.buf) == 0:
			// The whole line is in the bufio buffer: no copy.
			return frag[:n], size, nil
		default:
			r.grow(n)
			r.buf = append(r.buf, frag[:n]...)
		}
		switch err {
		case nil:
			if tooLong {
				return nil, size, nil
			}
			return r.buf, size, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if tooLong {
				return nil, size, io.EOF
			}
			return r.buf, size, io.EOF
		default:
			return nil, size, err
		}
	}
}
