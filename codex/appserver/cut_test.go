package appserver

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// A call cut short by the end of the connection returns only once Done is
// closed, so whoever the caller tells finds the end recorded. Tried many
// times: a client that woke its calls before closing Done failed here in
// about one try of a thousand.
func TestCutCallsFindDoneClosed(t *testing.T) {
	// More Ps than cores: a woken call is taken up by an idle P at once,
	// which is when a wrong order shows.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	early := 0
	const tries = 10000
	for range tries {
		cr, pw := io.Pipe()
		pr, cw := io.Pipe()
		c := newClient(cr, cw, Options{})
		res := make(chan bool, 1)
		go func() {
			_ = c.Call(context.Background(), MethodThreadResume, nil, nil)
			select {
			case <-c.Done():
				res <- true
			default:
				res <- false
			}
		}()
		if _, err := pr.Read(make([]byte, 4096)); err != nil { // the request is out: the call waits
			t.Fatal(err)
		}
		_ = pw.Close() // the server's output ends
		if !<-res {
			early++
		}
		_ = c.Close()
		_ = pr.Close()
	}
	if early > 0 {
		t.Fatalf("%d of %d cut calls returned before Done was closed", early, tries)
	}
}

// failWriter is the client's side of a connection whose peer is gone:
// every write fails, and the first one ends the peer's output as well
// (as a dead server's pipes or a closed socket do, a moment apart).
type failWriter struct {
	out  *io.PipeWriter
	once chan struct{}
}

func (w *failWriter) Write([]byte) (int, error) {
	select {
	case <-w.once:
	default:
		close(w.once)
		_ = w.out.Close()
	}
	return 0, syscall.EPIPE
}

func (w *failWriter) Close() error { return nil }

// endOf returns the *ClosedError that err wraps, failing the test when it
// wraps none.
func endOf(t *testing.T, err error) *ClosedError {
	t.Helper()
	var end *ClosedError
	if !errors.As(err, &end) || !errors.Is(err, ErrClosed) {
		t.Fatalf("error %v (%T) does not say why the connection ended", err, err)
	}
	return end
}

// The error of a call the connection's end cut short says what ended it:
// the server's end (its output closed, or a write to it failed) or the
// client (Close, its context). The shim classifies a cut turn by it.
func TestCutCallSaysWhoEndedTheConnection(t *testing.T) {
	t.Run("output ends", func(t *testing.T) {
		c, p := newPeer(t, Options{})
		done := make(chan error, 1)
		go func() { _, err := c.ResumeThread(ctxT(t), "T1", ThreadOptions{}); done <- err }()
		p.expect(MethodThreadResume)
		_ = p.out.Close()
		if end := endOf(t, <-done); !end.ByPeer || end.Died != nil {
			t.Fatalf("cut by the peer: %+v, want ByPeer and no process state", end)
		}
		if end := endOf(t, c.Err()); !end.ByPeer {
			t.Fatalf("Err %+v", end)
		}
	})
	t.Run("write fails", func(t *testing.T) {
		cr, pw := io.Pipe()
		c := newClient(cr, &failWriter{out: pw, once: make(chan struct{})}, Options{})
		defer c.Close()
		_, err := c.RunTurn(ctxT(t), "T1", "x", nil)
		if end := endOf(t, err); !end.ByPeer {
			t.Fatalf("a write to a gone peer: %+v, want ByPeer", end)
		}
	})
	t.Run("closed by the client", func(t *testing.T) {
		c, p := newPeer(t, Options{})
		done := make(chan error, 1)
		go func() { _, err := c.StartThread(ctxT(t), ThreadOptions{}); done <- err }()
		p.expect(MethodThreadStart)
		// Close waits for the reader, which the fake peer's output
		// (closed by the cleanup) holds up.
		go func() { _ = c.Close() }()
		if end := endOf(t, <-done); end.ByPeer {
			t.Fatalf("closed by the client: %+v, want not ByPeer", end)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		ctx, cancel := context.WithCancel(context.Background())
		c, err := Dial(ctx, a, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cancel()
		<-c.Done()
		if end := endOf(t, c.Err()); end.ByPeer {
			t.Fatalf("ended by the context: %+v, want not ByPeer", end)
		}
	})
}

// A server process that dies under a call: the call's error carries how
// it ended, killed by a signal or exiting, whether the call was waiting
// for its answer or writing to a server that had already closed its
// input.
func TestCutCallCarriesHowTheServerDied(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		signaled     bool
		code         int
	}{
		{"killed waiting", "read line\nkill -KILL $$\n", true, -1},
		{"exits waiting", "read line\nexit 3\n", false, 3},
		{"killed, input closed", "exec 0<&-\nkill -KILL $$\n", true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "codex")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tc.script), 0o700); err != nil {
				t.Fatal(err)
			}
			c, err := Start(context.Background(), Options{Bin: bin})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Initialize(ctxT(t))
			end := endOf(t, err)
			if !end.ByPeer || end.Died == nil {
				t.Fatalf("%+v, want ByPeer with the process's state", end)
			}
			ws := end.Died.Sys().(syscall.WaitStatus)
			if ws.Signaled() != tc.signaled || end.Died.ExitCode() != tc.code {
				t.Fatalf("died %v, want signaled %v, code %d", end.Died, tc.signaled, tc.code)
			}
			if c.Died() != end.Died {
				t.Fatalf("Died %v, want the error's %v", c.Died(), end.Died)
			}
		})
	}
}
