// Package iostreams is the standard streams of one run of the batty
// command: made once (System in main, Test in a test) and handed to every
// command, which reads its input and writes its output and its messages
// through them and nowhere else. Whether a stream is a terminal, how wide
// that terminal is and whether colour is wanted are told here, so a
// command behaves the same on buffers in a test as on a real terminal once
// those are set.
//
// The writers are used as given: a command that writes one of them from
// several goroutines makes each write whole (one Fprintf call, as a
// terminal or a file takes it); Test's buffers are safe for that.
package iostreams

import (
	"bytes"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// IOStreams are the input, output and error output of a run of batty.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	inTTY, outTTY, errTTY bool
	noColor               bool // NO_COLOR is set to something (https://no-color.org)
	errWidth              func() int
}

// System returns the process's streams, os.Stdin, os.Stdout and
// os.Stderr, each asked once whether it is a terminal, and NO_COLOR from
// the environment.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		inTTY: isTerminal(os.Stdin), outTTY: isTerminal(os.Stdout), errTTY: isTerminal(os.Stderr),
		noColor:  os.Getenv("NO_COLOR") != "",
		errWidth: func() int { return width(os.Stderr) },
	}
}

// Test returns streams on buffers, for running a command in a test: In
// reads in (empty unless written), Out and ErrOut write out and errOut. No
// stream is a terminal until set (SetStdinTTY, …), and colour is off
// unless stdout is one.
func Test() (ios *IOStreams, in *bytes.Buffer, out, errOut *Buffer) {
	in, out, errOut = new(bytes.Buffer), new(Buffer), new(Buffer)
	return &IOStreams{In: in, Out: out, ErrOut: errOut, errWidth: func() int { return 0 }}, in, out, errOut
}

// IsStdinTTY says whether In is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.inTTY }

// IsStdoutTTY says whether Out is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }

// IsStderrTTY says whether ErrOut is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// SetStdinTTY says whether In is to be taken as a terminal.
func (s *IOStreams) SetStdinTTY(tty bool) { s.inTTY = tty }

// SetStdoutTTY says whether Out is to be taken as a terminal.
func (s *IOStreams) SetStdoutTTY(tty bool) { s.outTTY = tty }

// SetStderrTTY says whether ErrOut is to be taken as a terminal, and its
// width in columns (0: unknown).
func (s *IOStreams) SetStderrTTY(tty bool, columns int) {
	s.errTTY = tty
	s.errWidth = func() int { return columns }
}

// ColorEnabled says whether Out may carry colours: it is a terminal and
// NO_COLOR is not set. A command with a --color flag decides with it
// instead.
func (s *IOStreams) ColorEnabled() bool { return s.outTTY && !s.noColor }

// NoColor says whether NO_COLOR is set (to anything but "").
func (s *IOStreams) NoColor() bool { return s.noColor }

// ErrWidth is the width in columns of the terminal ErrOut is, now (it
// follows a resize); 0 when it is none or it cannot be told.
func (s *IOStreams) ErrWidth() int {
	if !s.errTTY || s.errWidth == nil {
		return 0
	}
	return s.errWidth()
}

// Buffer is a bytes.Buffer safe for concurrent use: the output of a
// command that writes from several goroutines (and a child's copied
// stderr) in a test.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// isTerminal says whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// width is the columns of the terminal f is, 0 when unknown.
func width(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
