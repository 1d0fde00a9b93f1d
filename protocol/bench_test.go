package protocol

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// echoEnv makes the test binary an echo peer on fd 3 instead of running
// tests: "frames" speaks the protocol (Hello, then a Pong for every Ping),
// "stream" answers length-less msgpack written by an encoder straight on the
// socket.
const echoEnv = "BATTY_PROTOCOL_ECHO"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(echoEnv); mode {
	case "":
		os.Exit(m.Run())
	case "frames":
		os.Exit(echoFrames())
	case "stream":
		os.Exit(echoStream())
	case "stdio":
		os.Exit(echoStdio())
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: unknown mode\n", echoEnv, mode)
		os.Exit(2)
	}
}

func echoFrames() int {
	conn, err := FileConn(os.NewFile(3, "control"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 2
	}
	defer conn.Close()
	if err := conn.OfferHello(Hello{Agent: "echo"}, DefaultHandshakeTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 2
	}
	for {
		m, err := conn.Recv()
		if err == io.EOF {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			return 1
		}
		if p, ok := m.(Ping); ok {
			if err := conn.Send(Pong{Nonce: p.Nonce}); err != nil {
				fmt.Fprintln(os.Stderr, "echo:", err)
				return 1
			}
		}
	}
}

func echoStream() int {
	f := os.NewFile(3, "control")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 2
	}
	defer nc.Close()
	s := newStreamPeer(nc, nc)
	for {
		m, err := s.recv()
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			return 1
		}
		if p, ok := m.(Ping); ok {
			if err := s.send(Pong{Nonce: p.Nonce}); err != nil {
				fmt.Fprintln(os.Stderr, "echo:", err)
				return 1
			}
		}
	}
}

// streamPeer writes messages with a msgpack encoder directly on the
// socket, without a length prefix: the encoder issues a write per token, and
// a reader cannot bound or skip a message before decoding it. It exists to
// compare against frames.
type streamPeer struct {
	enc *msgpack.Encoder
	dec *msgpack.Decoder
}

func newStreamPeer(r io.Reader, w io.Writer) *streamPeer {
	s := &streamPeer{enc: msgpack.NewEncoder(w), dec: msgpack.NewDecoder(r)}
	s.enc.SetCustomStructTag("json")
	s.dec.SetCustomStructTag("json")
	return s
}

func (s *streamPeer) send(m Message) error {
	if err := s.enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := s.enc.EncodeString(string(m.Kind())); err != nil {
		return err
	}
	return s.enc.Encode(m)
}

func (s *streamPeer) recv() (Message, error) {
	if _, err := s.dec.DecodeArrayLen(); err != nil {
		return nil, err
	}
	kind, err := s.dec.DecodeString()
	if err != nil {
		return nil, err
	}
	decode, ok := decoders[Kind(kind)]
	if !ok {
		return nil, fmt.Errorf("%q: %w", kind, ErrUnknownKind)
	}
	return decode(s.dec)
}

// countingConn counts Write calls on a connection.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// startEcho runs the test binary as an echo child in mode, with the other
// end of a socketpair as its fd 3. It returns this end, whose writes are
// counted. At cleanup the channel is closed, so the child exits; it is
// killed if it does not, and reaped either way.
func startEcho(tb testing.TB, mode string) (*Conn, *countingConn) {
	tb.Helper()
	conn, remote, err := Socketpair(Options{})
	if err != nil {
		tb.Fatal(err)
	}
	counter := &countingConn{Conn: conn.c}
	conn.c = counter

	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	// Under the race detector a process sleeps a second before exiting
	// unless told otherwise. If this process dies, the child reads EOF on
	// fd 3 and exits.
	cmd.Env = append(os.Environ(), echoEnv+"="+mode, "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	cmd.ExtraFiles = []*os.File{remote} // fd 3
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	remote.Close()
	if err != nil {
		conn.Close()
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		conn.Close()
		select {
		case err := <-exited:
			if err != nil {
				tb.Errorf("echo child: %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			tb.Error("echo child did not exit when the channel closed; killed it")
		}
	})
	return conn, counter
}

func pingPong(tb testing.TB, send func(Message) error, recv func() (Message, error), nonce uint64) {
	if err := send(Ping{Nonce: nonce}); err != nil {
		tb.Fatal(err)
	}
	m, err := recv()
	if err != nil {
		tb.Fatal(err)
	}
	if m != (Pong{Nonce: nonce}) {
		tb.Fatalf("got %#v, want pong %d", m, nonce)
	}
}

// The echo child works as a shim would: Hello on an inherited fd 3, then
// answers, then a clean exit when the channel closes.
func TestCrossProcessEcho(t *testing.T) {
	t.Run("frames", func(t *testing.T) {
		conn, _ := startEcho(t, "frames")
		h, err := conn.AcceptHello(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if h.Agent != "echo" || h.PID == os.Getpid() || h.PID == 0 {
			t.Errorf("hello = %+v, want the child's", h)
		}
		for i := range 10 {
			pingPong(t, conn.Send, conn.Recv, uint64(i)<<40)
		}
	})
	t.Run("stream", func(t *testing.T) {
		conn, _ := startEcho(t, "stream")
		s := newStreamPeer(conn.c, conn.c)
		for i := range 10 {
			pingPong(t, s.send, s.recv, uint64(i)<<40)
		}
	})
}

// BenchmarkRoundTripCrossProcess: a Ping to a child process and its Pong
// back, both as frames over a socketpair.
func BenchmarkRoundTripCrossProcess(b *testing.B) {
	conn, counter := startEcho(b, "frames")
	if _, err := conn.AcceptHello(10 * time.Second); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := counter.writes.Load()
	var i uint64
	for b.Loop() {
		i++
		pingPong(b, conn.Send, conn.Recv, i)
	}
	b.ReportMetric(float64(counter.writes.Load()-start)/float64(b.N), "writes/op")
}

// BenchmarkEncoderOnSocket is the same round trip with a msgpack encoder
// writing straight on the socket, on both sides, and no length prefix. The
// encoder writes token by token, a system call each; a frame is one write.
func BenchmarkEncoderOnSocket(b *testing.B) {
	conn, counter := startEcho(b, "stream")
	s := newStreamPeer(conn.c, conn.c)
	b.ReportAllocs()
	start := counter.writes.Load()
	var i uint64
	for b.Loop() {
		i++
		pingPong(b, s.send, s.recv, i)
	}
	b.ReportMetric(float64(counter.writes.Load()-start)/float64(b.N), "writes/op")
}

// BenchmarkRoundTripInProcess: the same round trip with the echo in a
// goroutine of this process.
func BenchmarkRoundTripInProcess(b *testing.B) {
	a, peer := pair(b, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := peer.Recv()
			if err != nil {
				return
			}
			if p, ok := m.(Ping); ok && peer.Send(Pong{Nonce: p.Nonce}) != nil {
				return
			}
		}
	}()
	b.Cleanup(func() { a.Close(); <-done })
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		i++
		pingPong(b, a.Send, a.Recv, i)
	}
}

// benchTurnFinished is a typical TurnFinished with a 2 KB reply.
func benchTurnFinished() TurnFinished {
	const prose = "I updated the retry loop in shim/server.go so that a turn interrupted during shutdown reports status interrupted, added a regression test, and ran the package tests; all pass. "
	reply := strings.Repeat(prose, 2048/len(prose)+1)[:2048]
	return TurnFinished{
		MessageID:  "01JD6G2V7Q8N4K3M5P9R0S1T2U",
		ThreadID:   "0199b3c4-5d6e-7f80-91a2-b3c4d5e6f708",
		Status:     TurnCompleted,
		Reply:      reply,
		Usage:      Usage{Input: 48213, CachedInput: 40960, Output: 1532, ReasoningOutput: 896},
		Thread:     Usage{Input: 512345, CachedInput: 470112, Output: 20411, ReasoningOutput: 9980},
		ContextPct: 0.3712,
		Duration:   93*time.Second + 417*time.Millisecond,
	}
}

func BenchmarkEncodeTurnFinished(b *testing.B) {
	m := benchTurnFinished()
	b.SetBytes(int64(len(mustEncode(b, m))))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTurnFinished(b *testing.B) {
	body := mustEncode(b, benchTurnFinished())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
