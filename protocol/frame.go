package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultMaxFrameSize is the largest frame body a Conn accepts or sends
// unless Options.MaxFrameSize says otherwise.
const DefaultMaxFrameSize = 16 << 20

// DefaultFrameTimeout bounds how long the rest of a frame may take once its
// first byte has arrived, and how long one frame write may take.
const DefaultFrameTimeout = 10 * time.Second

// headerSize is the 4-byte big-endian length prefix of every frame.
const headerSize = 4

// ErrFrameTooLarge is returned (wrapped) when a frame's declared length is
// above the maximum. The length is checked before anything is allocated.
var ErrFrameTooLarge = errors.New("frame too large")

// ErrClosed is returned by a Conn after it was closed, by either side or
// because a protocol error made the stream unusable. Unless Close was the
// cause, it comes wrapped together with the error that closed the Conn.
var ErrClosed = errors.New("control channel closed")

// Options tune a Conn. The zero value is valid.
type Options struct {
	// MaxFrameSize caps a frame body in bytes (default DefaultMaxFrameSize).
	MaxFrameSize int
	// FrameTimeout bounds one whole frame write, and a frame read once its
	// first byte arrived (default DefaultFrameTimeout). Waiting for the next
	// frame to begin has no deadline.
	FrameTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	// The length prefix is 32 bits: a larger limit would let a frame's
	// length wrap around in its header and desynchronise the stream.
	if uint64(o.MaxFrameSize) > math.MaxUint32 {
		o.MaxFrameSize = math.MaxUint32
	}
	if o.FrameTimeout <= 0 {
		o.FrameTimeout = DefaultFrameTimeout
	}
	return o
}

// Conn is one end of a batty control channel: whole length-prefixed msgpack
// frames over a stream socket.
//
// Send is safe for concurrent use; Recv must be called from one goroutine at
// a time. A frame is either read or written whole or not at all: any error in
// the middle of a frame (timeout, bad length, undecodable body) closes the
// Conn, so the stream can never desynchronise. Close is idempotent and
// unblocks a pending Recv.
type Conn struct {
	c    net.Conn
	br   *bufio.Reader
	opts Options

	rmu sync.Mutex
	wmu sync.Mutex

	closeOnce sync.Once
	mu        sync.Mutex
	err       error // first fatal error; set once
}

// NewConn wraps a connected stream socket. The Conn owns c and closes it.
func NewConn(c net.Conn, opts Options) *Conn {
	return &Conn{c: c, br: bufio.NewReaderSize(c, 64<<10), opts: opts.withDefaults()}
}

// FileConn wraps an inherited socket file descriptor (fd 3 in a shim). It
// fails with a clear error when f is not a stream socket. The Conn owns the
// descriptor; f is closed.
func FileConn(f *os.File, opts Options) (*Conn, error) {
	defer f.Close()
	typ, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, fmt.Errorf("fd %d (%s) is not a socket: %w", f.Fd(), f.Name(), err)
	}
	if typ != unix.SOCK_STREAM {
		return nil, fmt.Errorf("fd %d (%s) is a socket of type %d, want SOCK_STREAM", f.Fd(), f.Name(), typ)
	}
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("wrap fd %d as a connection: %w", f.Fd(), err)
	}
	return NewConn(nc, opts), nil
}

// Socketpair creates a connected AF_UNIX SOCK_STREAM pair. It returns this
// side as a Conn and the other side as a file to hand to a child process
// (for example through exec.Cmd.ExtraFiles). Both ends are close-on-exec;
// the caller closes remote once the child has started.
func Socketpair(opts Options) (local *Conn, remote *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	lf := os.NewFile(uintptr(fds[0]), "batty-control-local")
	remote = os.NewFile(uintptr(fds[1]), "batty-control-remote")
	nc, err := net.FileConn(lf)
	lf.Close()
	if err != nil {
		remote.Close()
		return nil, nil, fmt.Errorf("wrap socketpair: %w", err)
	}
	return NewConn(nc, opts), remote, nil
}

// fail records err as the Conn's terminal error, unless one is already
// recorded, and closes the socket. It returns the error the failing call
// reports: err itself when it is what ended the Conn, otherwise the closed
// error (see broken).
func (c *Conn) fail(err error) error {
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = err
	}
	c.mu.Unlock()
	c.closeOnce.Do(func() { c.c.Close() })
	if first {
		return err
	}
	return c.broken()
}

// broken returns nil while the Conn is usable. Once it is closed, by Close,
// by the peer or by a protocol error, it returns ErrClosed, wrapped together
// with the cause when the cause was not Close.
func (c *Conn) broken() error {
	c.mu.Lock()
	cause := c.err
	c.mu.Unlock()
	switch cause {
	case nil:
		return nil
	case ErrClosed:
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrClosed, cause)
}

// Close closes the channel. It is idempotent and unblocks a pending Recv,
// which then returns ErrClosed.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	return nil
}

// WriteFrame writes payload as one frame with one write call, within the
// frame timeout. A failed or partial write closes the Conn.
func (c *Conn) WriteFrame(payload []byte) error {
	if len(payload) == 0 {
		return errors.New("write frame: empty payload")
	}
	if len(payload) > c.opts.MaxFrameSize {
		return fmt.Errorf("write frame of %d bytes (max %d): %w", len(payload), c.opts.MaxFrameSize, ErrFrameTooLarge)
	}
	buf := make([]byte, headerSize+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[headerSize:], payload)
	return c.writeRaw(buf)
}

func (c *Conn) writeRaw(buf []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.broken(); err != nil {
		return err
	}
	if err := c.c.SetWriteDeadline(time.Now().Add(c.opts.FrameTimeout)); err != nil {
		return c.fail(fmt.Errorf("set write deadline: %w", err))
	}
	if _, err := c.c.Write(buf); err != nil {
		return c.fail(fmt.Errorf("write frame: %w", err))
	}
	return nil
}

// ReadFrame blocks until the next whole frame arrives and returns its body.
// Once the first byte of a frame is in, the rest must arrive within the frame
// timeout. io.EOF means the peer closed the channel between frames (a reset
// between frames included); any other error closes the Conn.
func (c *Conn) ReadFrame() ([]byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if err := c.broken(); err != nil {
		return nil, err
	}
	if _, err := c.br.Peek(1); err != nil {
		// A peer that closes its end with bytes of ours unread (it was
		// killed before it read a command) resets the connection: between
		// frames that is an end like any other.
		if errors.Is(err, io.EOF) || errors.Is(err, unix.ECONNRESET) {
			c.fail(io.EOF)
			return nil, io.EOF
		}
		if e := c.broken(); e != nil {
			return nil, e
		}
		return nil, c.fail(fmt.Errorf("read frame: %w", err))
	}
	if err := c.c.SetReadDeadline(time.Now().Add(c.opts.FrameTimeout)); err != nil {
		return nil, c.fail(fmt.Errorf("set read deadline: %w", err))
	}
	var hdr [headerSize]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, c.fail(fmt.Errorf("read frame header: %w", unexpected(err)))
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, c.fail(errors.New("read frame: zero length"))
	}
	if uint64(n) > uint64(c.opts.MaxFrameSize) {
		return nil, c.fail(fmt.Errorf("read frame of %d bytes (max %d): %w", n, c.opts.MaxFrameSize, ErrFrameTooLarge))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.br, body); err != nil {
		return nil, c.fail(fmt.Errorf("read frame body (%d bytes): %w", n, unexpected(err)))
	}
	if err := c.c.SetReadDeadline(time.Time{}); err != nil {
		return nil, c.fail(fmt.Errorf("clear read deadline: %w", err))
	}
	return body, nil
}

// unexpected turns a clean EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Send encodes m and writes it as one frame. Safe for concurrent use.
func (c *Conn) Send(m Message) error {
	var buf bytes.Buffer
	buf.Write(make([]byte, headerSize))
	if err := encodeTo(&buf, m); err != nil {
		return err
	}
	b := buf.Bytes()
	n := len(b) - headerSize
	if n > c.opts.MaxFrameSize {
		return fmt.Errorf("send %s of %d bytes (max %d): %w", m.Kind(), n, c.opts.MaxFrameSize, ErrFrameTooLarge)
	}
	binary.BigEndian.PutUint32(b, uint32(n))
	return c.writeRaw(b)
}

// Recv blocks until the next message arrives and decodes it. An undecodable
// frame closes the Conn and returns the error; io.EOF means the peer closed
// the channel cleanly between frames.
func (c *Conn) Recv() (Message, error) {
	body, err := c.ReadFrame()
	if err != nil {
		return nil, err
	}
	m, err := Decode(body)
	if err != nil {
		return nil, c.fail(err)
	}
	return m, nil
}
