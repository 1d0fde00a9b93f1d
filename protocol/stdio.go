package protocol

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// StdioConn makes this process's stdin and stdout a control channel, for
// a shim at the other end of a stream (ssh, kubectl exec): frames are
// read from fd 0 and written to fd 1. It takes both descriptors over:
// the channel gets non-blocking copies of its own (so frame deadlines
// hold) and fd 0 and 1 are pointed at /dev/null, so that nothing else
// of the process can write into the stream or read from it. Call it once,
// before anything else uses stdin or stdout. The end of stdin is the
// channel's io.EOF.
func StdioConn(opts Options) (*Conn, error) {
	r, err := takeFD(0, "batty-control-in")
	if err != nil {
		return nil, err
	}
	w, err := takeFD(1, "batty-control-out")
	if err != nil {
		r.Close()
		return nil, err
	}
	return NewConn(&pipeConn{r: r, w: w}, opts), nil
}

// takeFD moves descriptor fd to a new close-on-exec, non-blocking
// descriptor (which the runtime's poller can give deadlines) and points
// fd at /dev/null.
func takeFD(fd int, name string) (*os.File, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("control channel on fd %d: %w", fd, err)
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("control channel on fd %d: %w", fd, err)
	}
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Dup2(null, fd)
		unix.Close(null)
	}
	if err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("control channel on fd %d: pointing it at %s: %w", fd, os.DevNull, err)
	}
	return os.NewFile(uintptr(nfd), name), nil
}

// pipeConn is a net.Conn made of a file to read and a file to write.
type pipeConn struct{ r, w *os.File }

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }

// Close closes both files (which unblocks a pending Read).
func (c *pipeConn) Close() error { return errors.Join(c.r.Close(), c.w.Close()) }

func (c *pipeConn) LocalAddr() net.Addr  { return stdioAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr { return stdioAddr{} }

func (c *pipeConn) SetDeadline(t time.Time) error {
	return errors.Join(c.r.SetReadDeadline(t), c.w.SetWriteDeadline(t))
}
func (c *pipeConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

// stdioAddr names both ends of a StdioConn.
type stdioAddr struct{}

func (stdioAddr) Network() string { return "stdio" }
func (stdioAddr) String() string  { return "stdio" }
