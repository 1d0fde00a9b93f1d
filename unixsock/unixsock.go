// Package unixsock binds and connects batty's unix sockets (the daemon's
// control socket, the shared app-server's broker) whatever the length of
// the path of the directory that holds them.
//
// A unix socket address holds at most 107 bytes of path (108 with the
// terminating NUL, on Linux), and a state directory under a long home or
// BATTY_STATE_HOME passes that. So a socket is never named by its path:
// its directory is opened (atomicfile.Dir: O_DIRECTORY|O_NOFOLLOW, a
// symbolic link refused) and the socket is named through that descriptor,
// "/proc/self/fd/N/NAME" (atomicfile.Dir.ProcPath), which is short
// whatever the directory's path. The kernel resolves /proc/self/fd/N to
// the very directory the descriptor pins: the socket is made in (or
// reached in) that directory, and a link swapped in for it after it was
// opened redirects nothing.
//
// A socket is bound under a temporary name, made 0600, and only then
// renamed to its name (replacing a stale socket left by a process that
// died): nothing ever finds the name with other permissions, whatever the
// umask. Its directory should be the owner's alone (0700).
package unixsock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/battyhq/batty/atomicfile"
)

// maxAddr is the longest path a unix socket address holds (its 108 bytes
// less the terminating NUL).
const maxAddr = len(syscall.RawSockaddrUnix{}.Path) - 1

// tmpSuffix is the length of the suffix of a socket's temporary name
// (".new-" and 8 hex digits).
const tmpSuffix = 13

// Listener is a stream unix socket bound by Listen. Its Close closes the
// socket, removes its name from the directory (only if the name is still
// this socket) and closes the directory. It is safe for concurrent use.
type Listener struct {
	*net.UnixListener
	dir      *atomicfile.Dir
	name     string
	dev, ino uint64

	once sync.Once
	err  error
}

// Listen binds a stream unix socket named name (one path component) in
// dir and listens on it: bound under a temporary name through dir's
// descriptor, made 0600, then renamed to name, replacing whatever entry
// but a directory was there (a stale socket). The Listener keeps a
// descriptor of its own of dir: the caller may close dir.
func Listen(dir *atomicfile.Dir, name string) (*Listener, error) {
	path := filepath.Join(dir.Path(), name)
	if err := checkName(name, tmpSuffix); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	own, err := dir.Sub(".", false)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	tmp := name + ".new-" + strconv.FormatUint(uint64(rand.Uint32())|1<<32, 16)[1:]
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: own.ProcPath(tmp), Net: "unix"})
	if err != nil {
		own.Close()
		return nil, realAddr(err, path)
	}
	// The bound name goes through own's descriptor and is renamed: Close
	// removes the socket's name itself.
	ln.SetUnlinkOnClose(false)
	l := &Listener{UnixListener: ln, dir: own, name: name}
	err = own.Chmod(tmp, 0o600)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Lstat(own.ProcPath(tmp)); err == nil {
			st := fi.Sys().(*syscall.Stat_t)
			l.dev, l.ino = st.Dev, st.Ino
			err = own.Rename(tmp, name)
		}
	}
	if err != nil {
		ln.Close()
		own.Remove(tmp)
		own.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return l, nil
}

// ListenPath is Listen in the directory of path, opened with
// atomicfile.OpenDir (its last component must not be a symbolic link; the
// directories above it are trusted), on the socket named by path's last
// component.
func ListenPath(path string) (*Listener, error) {
	dir, err := atomicfile.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	defer dir.Close()
	return Listen(dir, filepath.Base(path))
}

// Path returns the socket's path (for messages; too long, maybe, to
// connect to but with Dial).
func (l *Listener) Path() string { return filepath.Join(l.dir.Path(), l.name) }

// Addr returns the socket's address by its real path (the bound one
// names a descriptor of this process's).
func (l *Listener) Addr() net.Addr { return &net.UnixAddr{Name: l.Path(), Net: "unix"} }

// Close stops listening, removes the socket's name when it is still this
// socket (a later listener's socket renamed over it stays) and closes the
// directory. It is idempotent.
func (l *Listener) Close() error {
	l.once.Do(func() {
		err := l.UnixListener.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil // its UnixListener was closed already
		}
		if fi, serr := os.Lstat(l.dir.ProcPath(l.name)); serr == nil {
			if st := fi.Sys().(*syscall.Stat_t); st.Dev == l.dev && st.Ino == l.ino {
				if rerr := l.dir.Remove(l.name); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
					err = errors.Join(err, rerr)
				}
			}
		}
		l.err = errors.Join(err, l.dir.Close())
	})
	return l.err
}

// Dial connects to the stream unix socket at path, whatever its length:
// its directory is opened with atomicfile.OpenDir (its last component must
// not be a symbolic link; the directories above it are trusted) and the
// socket named through it, as DialIn does. A missing directory or socket
// is an error matching os.ErrNotExist, nothing listening one matching
// syscall.ECONNREFUSED.
func Dial(ctx context.Context, path string) (*net.UnixConn, error) {
	dir, err := atomicfile.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	defer dir.Close()
	return DialIn(ctx, dir, filepath.Base(path))
}

// DialIn connects to the stream unix socket named name (one path
// component) in dir, named through dir's descriptor. A name that is a
// symbolic link is refused (an error matching atomicfile.ErrSymlink). The
// error names the socket by its real path.
func DialIn(ctx context.Context, dir *atomicfile.Dir, name string) (*net.UnixConn, error) {
	path := filepath.Join(dir.Path(), name)
	if err := checkName(name, 0); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	proc := dir.ProcPath(name)
	if fi, err := os.Lstat(proc); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("connect to %s: %w", path, &atomicfile.LinkError{Path: path, What: "a symbolic link"})
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", proc)
	if err != nil {
		return nil, realAddr(err, path)
	}
	return c.(*net.UnixConn), nil
}

// checkName refuses a name that is not one path component, or that is
// too long to name through a directory's descriptor with room for extra
// more bytes.
func checkName(name string, extra int) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q is not a socket name", name)
	}
	// The longest descriptor's name: "/proc/self/fd/" and 10 digits.
	if n := len("/proc/self/fd/2147483647/") + len(name) + extra; n > maxAddr {
		return fmt.Errorf("socket name %q is %d bytes, longer than %d", name, len(name), maxAddr-n+len(name))
	}
	return nil
}

// realAddr puts path for the /proc name in the address of a *net.OpError.
func realAddr(err error, path string) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return &net.OpError{Op: op.Op, Net: op.Net, Source: op.Source, Addr: &net.UnixAddr{Name: path, Net: "unix"}, Err: op.Err}
	}
	return err
}
