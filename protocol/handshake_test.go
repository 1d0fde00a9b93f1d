package protocol

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func asyncErr(f func() error) <-chan result {
	return async(func() result { return result{err: f()} })
}

func TestHandshake(t *testing.T) {
	for name, offered := range map[string]Hello{
		"defaults filled in": {Agent: "alice", ThreadID: "thread-1"},
		"explicit pid":       {Agent: "bob", PID: 4242, Version: Version},
	} {
		t.Run(name, func(t *testing.T) {
			orch, shim := pair(t, Options{})
			offer := asyncErr(func() error { return shim.OfferHello(offered, 5*time.Second) })
			h, err := orch.AcceptHello(5 * time.Second)
			if err != nil {
				t.Fatalf("AcceptHello: %v", err)
			}
			if r := await(t, offer, "OfferHello"); r.err != nil {
				t.Fatalf("OfferHello: %v", r.err)
			}
			want := offered
			want.Version = Version
			if want.PID == 0 {
				want.PID = os.Getpid()
			}
			if h != want {
				t.Errorf("AcceptHello = %+v, want %+v", h, want)
			}
			// The channel stays open after the handshake, both ways (the
			// handshake timers do not fire later).
			for _, dir := range [][2]*Conn{{orch, shim}, {shim, orch}} {
				got := asyncRecv(dir[1])
				if err := dir[0].Send(Ping{Nonce: 1}); err != nil {
					t.Fatalf("Send after the handshake: %v", err)
				}
				if r := await(t, got, "Recv"); r.err != nil || r.m != (Ping{Nonce: 1}) {
					t.Fatalf("Recv after the handshake: %#v, %v", r.m, r.err)
				}
			}
		})
	}
}

// The orchestrator refuses a Hello of another version, naming both, and
// closes the channel without a Welcome.
func TestAcceptHelloVersionMismatch(t *testing.T) {
	for _, theirs := range []int{Version + 41, 0} {
		t.Run(fmt.Sprint(theirs), func(t *testing.T) {
			orch, shim := pair(t, Options{})
			if err := shim.Send(Hello{Version: theirs, PID: 77, Agent: "carol"}); err != nil {
				t.Fatal(err)
			}
			h, err := orch.AcceptHello(5 * time.Second)
			if !errors.Is(err, ErrVersionMismatch) {
				t.Fatalf("AcceptHello = %+v, %v; want ErrVersionMismatch", h, err)
			}
			for _, s := range []string{fmt.Sprintf("protocol %d", theirs), fmt.Sprintf("speaks %d", Version), "carol"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			expectClosed(t, orch, nil)
			if r := await(t, asyncRecv(shim), "shim Recv"); r.err != io.EOF {
				t.Errorf("shim got %#v, %v; want io.EOF (no welcome)", r.m, r.err)
			}
		})
	}
}

// The shim refuses a Welcome of another version, naming both.
func TestOfferHelloVersionMismatch(t *testing.T) {
	const theirs = Version + 41
	orch, shim := pair(t, Options{})
	offer := asyncErr(func() error { return shim.OfferHello(Hello{Agent: "dave"}, 5*time.Second) })
	if m, err := orch.Recv(); err != nil {
		t.Fatalf("Recv hello: %#v, %v", m, err)
	}
	if err := orch.Send(Welcome{Version: theirs}); err != nil {
		t.Fatal(err)
	}
	err := await(t, offer, "OfferHello").err
	if !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("OfferHello: %v, want ErrVersionMismatch", err)
	}
	for _, s := range []string{fmt.Sprintf("protocol %d", theirs), fmt.Sprintf("shim %d", Version)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	expectClosed(t, shim, nil)
}

// Anything but a Hello (or a Welcome) as the first frame ends the handshake.
func TestHandshakeWrongFirstFrame(t *testing.T) {
	t.Run("orchestrator", func(t *testing.T) {
		orch, peer := rawPair(t, Options{})
		mustWrite(t, peer, frame(mustEncode(t, Ping{Nonce: 1})))
		if h, err := orch.AcceptHello(5 * time.Second); err == nil || !strings.Contains(err.Error(), "ping") {
			t.Fatalf("AcceptHello = %+v, %v; want an error naming ping", h, err)
		}
		expectClosed(t, orch, peer)
	})
	t.Run("orchestrator, undecodable", func(t *testing.T) {
		orch, peer := rawPair(t, Options{})
		mustWrite(t, peer, frame([]byte("GET / HTTP/1.1\r\n")))
		if h, err := orch.AcceptHello(5 * time.Second); err == nil {
			t.Fatalf("AcceptHello = %+v", h)
		}
		expectClosed(t, orch, peer)
	})
	t.Run("orchestrator, decoder panic", func(t *testing.T) {
		orch, peer := rawPair(t, Options{})
		mustWrite(t, peer, frame(nilRetryAt))
		if h, err := orch.AcceptHello(5 * time.Second); err == nil || !strings.Contains(err.Error(), "quota_blocked") {
			t.Fatalf("AcceptHello = %+v, %v; want a decode error naming quota_blocked", h, err)
		}
		expectClosed(t, orch, peer)
	})
	t.Run("shim, decoder panic", func(t *testing.T) {
		shim, peer := rawPair(t, Options{})
		offer := asyncErr(func() error { return shim.OfferHello(Hello{Agent: "erin"}, 5*time.Second) })
		mustWrite(t, peer, frame(nilRetryAt))
		if err := await(t, offer, "OfferHello").err; err == nil || !strings.Contains(err.Error(), "quota_blocked") {
			t.Fatalf("OfferHello: %v, want a decode error naming quota_blocked", err)
		}
		expectClosed(t, shim, nil)
	})
	t.Run("shim", func(t *testing.T) {
		orch, shim := pair(t, Options{})
		offer := asyncErr(func() error { return shim.OfferHello(Hello{Agent: "erin"}, 5*time.Second) })
		if _, err := orch.Recv(); err != nil {
			t.Fatal(err)
		}
		if err := orch.Send(Shutdown{}); err != nil {
			t.Fatal(err)
		}
		if err := await(t, offer, "OfferHello").err; err == nil || !strings.Contains(err.Error(), "shutdown") {
			t.Fatalf("OfferHello: %v, want an error naming shutdown", err)
		}
		expectClosed(t, shim, nil)
	})
}

// No Hello (or no Welcome) within the timeout: the handshake fails soon
// after it, with a deadline error, and the Conn is closed.
func TestHandshakeTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	check := func(t *testing.T, err error, elapsed time.Duration) {
		t.Helper()
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.Is(err, ErrClosed) {
			t.Fatalf("handshake: %v, want a deadline error that closed the Conn", err)
		}
		if elapsed < timeout*9/10 {
			t.Errorf("gave up after %s, before the timeout %s", elapsed, timeout)
		}
	}
	t.Run("orchestrator", func(t *testing.T) {
		orch, peer := rawPair(t, Options{})
		start := time.Now()
		r := await(t, async(func() result { _, err := orch.AcceptHello(timeout); return result{err: err} }), "AcceptHello")
		check(t, r.err, time.Since(start))
		expectClosed(t, orch, peer)
	})
	t.Run("orchestrator, hello cut short", func(t *testing.T) {
		// The frame timeout is long; the handshake timeout still applies.
		orch, peer := rawPair(t, Options{FrameTimeout: time.Hour})
		mustWrite(t, peer, frame(mustEncode(t, Hello{Version: Version}))[:6])
		start := time.Now()
		r := await(t, async(func() result { _, err := orch.AcceptHello(timeout); return result{err: err} }), "AcceptHello")
		check(t, r.err, time.Since(start))
		expectClosed(t, orch, peer)
	})
	t.Run("shim", func(t *testing.T) {
		shim, peer := rawPair(t, Options{})
		start := time.Now()
		r := await(t, asyncErr(func() error { return shim.OfferHello(Hello{Agent: "frank"}, timeout) }), "OfferHello")
		check(t, r.err, time.Since(start))
		expectClosed(t, shim, peer)
	})
}

func TestHandshakePeerGone(t *testing.T) {
	orch, shim := pair(t, Options{})
	shim.Close()
	if _, err := orch.AcceptHello(5 * time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("AcceptHello: %v, want io.EOF", err)
	}
}

func TestFileConnRefusesNonSockets(t *testing.T) {
	tmp, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	dgram := os.NewFile(uintptr(fds[0]), "dgram")

	for _, c := range []struct {
		name string
		f    *os.File
		is   error
		msg  string
	}{
		{"regular file", tmp, syscall.ENOTSOCK, "is not a socket"},
		{"pipe", pr, syscall.ENOTSOCK, "is not a socket"},
		{"datagram socket", dgram, nil, "want SOCK_STREAM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := FileConn(c.f, Options{})
			if err == nil {
				conn.Close()
				t.Fatal("FileConn succeeded")
			}
			if (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), c.f.Name()) {
				t.Errorf("error %q should say %q and name %s", err, c.msg, c.f.Name())
			}
			// FileConn owns the descriptor, even when it refuses it.
			if err := c.f.Close(); !errors.Is(err, os.ErrClosed) {
				t.Errorf("the file is still open after FileConn: Close = %v", err)
			}
		})
	}
}

func TestFileConnAcceptsSocketpairEnd(t *testing.T) {
	local, remote, err := Socketpair(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	conn, err := FileConn(remote, Options{})
	if err != nil {
		t.Fatalf("FileConn(socketpair end): %v", err)
	}
	defer conn.Close()
	if err := remote.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("remote still open after FileConn: Close = %v", err)
	}
	// Both ends are close-on-exec.
	for _, c := range []*Conn{local, conn} {
		sc, ok := c.c.(syscall.Conn)
		if !ok {
			t.Fatalf("%T is no syscall.Conn", c.c)
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var flags int
		var ferr error
		if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFD, 0) }); err != nil || ferr != nil {
			t.Fatal(err, ferr)
		}
		if flags&unix.FD_CLOEXEC == 0 {
			t.Error("descriptor is not close-on-exec")
		}
	}
	got := asyncRecv(local)
	if err := conn.Send(Hello{Version: Version, Agent: "grace"}); err != nil {
		t.Fatal(err)
	}
	if r := await(t, got, "Recv"); r.err != nil || r.m != (Hello{Version: Version, Agent: "grace"}) {
		t.Fatalf("Recv = %#v, %v", r.m, r.err)
	}
}

// A handshake that succeeds leaves a usable Conn, even when its timeout
// runs out just as the answer arrives: then either the handshake fails or
// the timer is stopped before it closes the Conn, never both.
func TestHandshakeTimeoutRace(t *testing.T) {
	welcome := frame(mustEncode(t, Welcome{Version: Version}))
	succeeded := 0
	for i := range 1000 {
		shim, peer := rawPair(t, Options{})
		// The welcome is already waiting, so the timeout (0 to 60µs) and
		// the frame race each other.
		mustWrite(t, peer, welcome)
		err := shim.OfferHello(Hello{Agent: "heidi"}, time.Duration(i%60)*time.Microsecond)
		if err == nil {
			succeeded++
			if err := shim.Send(Ping{Nonce: uint64(i)}); err != nil {
				t.Fatalf("run %d: handshake succeeded but the Conn is closed: %v", i, err)
			}
		}
		shim.Close()
		peer.Close()
	}
	t.Logf("%d of 1000 handshakes beat their timeout", succeeded)
}
