package unixsock

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile"
)

// longDir makes a 0700 directory whose path is at least n bytes long.
func longDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for len(dir) < n {
		dir = filepath.Join(dir, strings.Repeat("d", 50))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// roundTrip accepts one connection on ln, dials path and checks that a
// line goes through.
func roundTrip(t *testing.T, ln *Listener, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()
	c, err := Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if s := <-got; s != "hello" {
		t.Fatalf("the listener read %q, want hello", s)
	}
}

// TestLongDirectory binds and connects through a directory whose path is
// far longer than a socket address holds: the socket is made in that very
// directory, 0600, and nothing else is left there.
func TestLongDirectory(t *testing.T) {
	dir := longDir(t, 220)
	path := filepath.Join(dir, "daemon.sock")
	if _, err := net.Listen("unix", path); err == nil {
		t.Fatalf("a socket path of %d bytes was bound by its path: the test proves nothing", len(path))
	}
	ln, err := ListenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.Path() != path || ln.Addr().String() != path {
		t.Errorf("Path() = %q, Addr() = %q, want %q", ln.Path(), ln.Addr(), path)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s is %v, want a socket 0600", path, fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the directory holds %v, want the socket alone", ents)
	}
	roundTrip(t, ln, path)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Close the socket is still there: %v", err)
	}
	if err := ln.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestSymlinkRefused checks that neither Listen nor Dial goes through a
// directory that is a symbolic link, nor Dial to a socket name that is one.
func TestSymlinkRefused(t *testing.T) {
	dir := longDir(t, 210)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if ln, err := ListenPath(filepath.Join(link, "s.sock")); !errors.Is(err, atomicfile.ErrSymlink) {
		if err == nil {
			ln.Close()
		}
		t.Fatalf("listen through a linked directory: %v, want a link refused", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the linked directory holds %v", ents)
	}
	ln, err := ListenPath(filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx := context.Background()
	if _, err := Dial(ctx, filepath.Join(link, "s.sock")); !errors.Is(err, atomicfile.ErrSymlink) {
		t.Fatalf("dial through a linked directory: %v, want a link refused", err)
	}
	if err := os.Symlink("s.sock", filepath.Join(dir, "alias.sock")); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, filepath.Join(dir, "alias.sock")); !errors.Is(err, atomicfile.ErrSymlink) {
		t.Fatalf("dial a socket name that is a link: %v, want a link refused", err)
	}
}

// TestStaleSocketReplaced checks that a socket left by a listener that
// died is replaced, and that the Close of a listener whose name was taken
// over leaves its successor's socket.
func TestStaleSocketReplaced(t *testing.T) {
	dir := longDir(t, 200)
	path := filepath.Join(dir, "s.sock")
	first, err := ListenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	// A process that died leaves its socket: nothing listens.
	first.UnixListener.Close()
	if _, err := Dial(context.Background(), path); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a stale socket: %v, want connection refused", err)
	}
	second, err := ListenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, second, path)
	second.Close()
	if _, err := Dial(context.Background(), path); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("dial a socket that is gone: %v, want not found, naming %s", err, path)
	}
	if _, err := Dial(context.Background(), filepath.Join(dir, "none", "s.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dial in a directory that is missing: %v, want not found", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra int
		ok    bool
	}{
		{"daemon.sock", tmpSuffix, true},
		{"0123456789ab.sock", tmpSuffix, true},
		{strings.Repeat("x", 82), 0, true},
		{strings.Repeat("x", 83), 0, false},
		{strings.Repeat("x", 70), tmpSuffix, false},
		{"", 0, false},
		{".", 0, false},
		{"..", 0, false},
		{"a/b", 0, false},
	} {
		if err := checkName(c.name, c.extra); (err == nil) != c.ok {
			t.Errorf("checkName(%q, %d) = %v, want ok %v", c.name, c.extra, err, c.ok)
		}
	}
}

// TestDescriptorPinsTheDirectory swaps a symbolic link in for the
// directory after it was opened: the socket is still made in the
// directory that was opened, never where the link points.
func TestDescriptorPinsTheDirectory(t *testing.T) {
	base := longDir(t, 200)
	dir, moved, elsewhere := filepath.Join(base, "d"), filepath.Join(base, "moved"), filepath.Join(base, "elsewhere")
	for _, d := range []string{dir, elsewhere} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d, err := atomicfile.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(d, "s.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Lstat(filepath.Join(moved, "s.sock")); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("the socket in the opened directory: %v, %v", fi, err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("the link's target holds %v", ents)
	}
	roundTrip(t, ln, filepath.Join(moved, "s.sock"))
}
