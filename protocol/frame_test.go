package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Several goroutines send on each side at once, both ways, with frames large
// enough to take several writes: every message arrives whole, once, in the
// order its sender sent it.
func TestConcurrentSendBothWays(t *testing.T) {
	const senders, perSender = 4, 150
	a, b := pair(t, Options{})

	// msg is the i-th message of sender s: mostly pings, every 25th a
	// frame bigger than the socket buffer.
	msg := func(s, i int) Message {
		if i%25 == 0 {
			return TurnFinished{MessageID: fmt.Sprint(s), ExitCode: i, Reply: strings.Repeat(fmt.Sprintf("%d/%d;", s, i), 40_000)}
		}
		return Ping{Nonce: uint64(s)<<32 | uint64(i)}
	}
	origin := func(m Message) (s, i int) {
		switch m := m.(type) {
		case Ping:
			return int(m.Nonce >> 32), int(m.Nonce & math.MaxUint32)
		case TurnFinished:
			fmt.Sscan(m.MessageID, &s)
			return s, m.ExitCode
		}
		return -1, -1
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2*(senders+1))
	for _, c := range []*Conn{a, b} {
		for s := range senders {
			wg.Go(func() {
				for i := range perSender {
					if err := c.Send(msg(s, i)); err != nil {
						errs <- fmt.Errorf("sender %d, message %d: %w", s, i, err)
						return
					}
				}
			})
		}
	}
	for _, c := range []*Conn{a, b} {
		wg.Go(func() {
			next := make([]int, senders)
			for range senders * perSender {
				m, err := c.Recv()
				if err != nil {
					errs <- fmt.Errorf("recv: %w", err)
					return
				}
				s, i := origin(m)
				if s < 0 || s >= senders || i != next[s] || !sameMessage(m, msg(s, i)) {
					errs <- fmt.Errorf("got %.80v (sender %d, #%d), want #%d", m, s, i, next[max(s, 0)%senders])
					return
				}
				next[s]++
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-errs:
		a.Close() // unblocks everyone
		b.Close()
		<-done
		t.Fatal(err)
	case <-time.After(waitLimit):
		a.Close()
		b.Close()
		<-done
		t.Fatal("exchange did not finish")
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// sized returns a TurnFinished whose encoding is exactly n bytes.
func sized(t testing.TB, n int) TurnFinished {
	t.Helper()
	m := TurnFinished{MessageID: "m", Status: TurnCompleted, Reply: strings.Repeat("r", 70_000)}
	overhead := len(mustEncode(t, m)) - len(m.Reply)
	m.Reply = strings.Repeat("r", n-overhead)
	if got := len(mustEncode(t, m)); got != n {
		t.Fatalf("sized(%d) encodes to %d bytes", n, got)
	}
	return m
}

func TestMaxFrameSize(t *testing.T) {
	for _, max := range []int{1 << 20, DefaultMaxFrameSize} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			opts := Options{MaxFrameSize: max}
			if max == DefaultMaxFrameSize {
				opts = Options{}
			}
			a, b := pair(t, opts)

			// Exactly the maximum goes through, as a message and as a raw frame.
			exact := sized(t, max)
			got := asyncRecv(b)
			if err := a.Send(exact); err != nil {
				t.Fatalf("Send of exactly %d bytes: %v", max, err)
			}
			if r := await(t, got, "Recv"); r.err != nil || !sameMessage(r.m, exact) {
				t.Fatalf("Recv: %v (message intact: %v)", r.err, sameMessage(r.m, exact))
			}
			raw := bytes.Repeat([]byte{0x5a}, max)
			gotFrame := asyncReadFrame(b)
			if err := a.WriteFrame(raw); err != nil {
				t.Fatalf("WriteFrame of exactly %d bytes: %v", max, err)
			}
			if r := await(t, gotFrame, "ReadFrame"); r.err != nil || !bytes.Equal(r.b, raw) {
				t.Fatalf("ReadFrame: %v (%d bytes)", r.err, len(r.b))
			}

			// One byte more is refused by the sender, which writes nothing
			// and stays usable: the next frame the peer reads is the ping.
			if err := a.Send(sized(t, max+1)); !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("Send of %d bytes: %v, want ErrFrameTooLarge", max+1, err)
			}
			if err := a.WriteFrame(make([]byte, max+1)); !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("WriteFrame of %d bytes: %v, want ErrFrameTooLarge", max+1, err)
			}
			if err := a.Send(Ping{Nonce: 9}); err != nil {
				t.Fatalf("Send after a refused frame: %v", err)
			}
			if r := await(t, asyncRecv(b), "Recv"); r.err != nil || r.m != (Ping{Nonce: 9}) {
				t.Fatalf("Recv after a refused frame: %#v, %v", r.m, r.err)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	if o := (Options{}).withDefaults(); o.MaxFrameSize != DefaultMaxFrameSize || o.FrameTimeout != DefaultFrameTimeout {
		t.Errorf("zero Options = %+v", o)
	}
	if o := (Options{MaxFrameSize: -1, FrameTimeout: -1}).withDefaults(); o.MaxFrameSize != DefaultMaxFrameSize || o.FrameTimeout != DefaultFrameTimeout {
		t.Errorf("negative Options = %+v", o)
	}
	// A limit past what the 32-bit length prefix can say is capped, so a
	// frame's length can never wrap around in its header.
	if strconv.IntSize == 64 {
		var big uint64 = 4 * math.MaxUint32
		if o := (Options{MaxFrameSize: int(big)}).withDefaults(); uint64(o.MaxFrameSize) != math.MaxUint32 {
			t.Errorf("MaxFrameSize %d becomes %d, want %d", big, o.MaxFrameSize, uint32(math.MaxUint32))
		}
	}
}

// A declared length above the maximum is refused before the body is
// allocated, and the Conn is closed.
func TestReadFrameTooLarge(t *testing.T) {
	for _, c := range []struct {
		name     string
		max      int
		declared uint32
	}{
		{"max+1", 1 << 20, 1<<20 + 1},
		{"4GiB under the default", 0, math.MaxUint32},
		{"default+1", 0, DefaultMaxFrameSize + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, peer := rawPair(t, Options{MaxFrameSize: c.max})
			mustWrite(t, peer, header(c.declared, []byte("some body bytes")))

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b, err := conn.ReadFrame()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("ReadFrame = %d bytes, %v; want ErrFrameTooLarge", len(b), err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<10 {
				t.Errorf("ReadFrame allocated %d bytes refusing the frame", alloc)
			}
			expectClosed(t, conn, peer)
		})
	}
}

// expectClosed asserts conn is unusable, every call failing with ErrClosed
// (at once: a Conn left open would block reading, so each call has a time
// limit), and that it closed its socket.
func expectClosed(t *testing.T, conn *Conn, peer net.Conn) {
	t.Helper()
	for name, call := range map[string]func() error{
		"ReadFrame":  func() error { _, err := conn.ReadFrame(); return err },
		"Recv":       func() error { _, err := conn.Recv(); return err },
		"Send":       func() error { return conn.Send(Ping{}) },
		"WriteFrame": func() error { return conn.WriteFrame([]byte{1}) },
	} {
		ch := async(func() result { return result{err: call()} })
		select {
		case r := <-ch:
			if !errors.Is(r.err, ErrClosed) {
				t.Errorf("%s after the failure: %v, want ErrClosed", name, r.err)
			}
		case <-time.After(5 * time.Second):
			conn.Close() // ends the call
			<-ch
			t.Fatalf("%s after the failure blocked: the Conn is still open", name)
		}
	}
	if peer != nil {
		expectPeerEOF(t, peer)
	}
}

func TestZeroLength(t *testing.T) {
	conn, peer := rawPair(t, Options{})
	if err := conn.WriteFrame(nil); err == nil {
		t.Fatal("WriteFrame(nil) succeeded")
	}
	if err := conn.Send(nil); err == nil {
		t.Fatal("Send(nil) succeeded")
	}
	// Neither wrote anything nor broke the Conn.
	if err := conn.Send(Ping{Nonce: 3}); err != nil {
		t.Fatal(err)
	}
	want := frame(mustEncode(t, Ping{Nonce: 3}))
	peer.SetReadDeadline(time.Now().Add(waitLimit))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("peer read %x, %v; want %x", got, err, want)
	}

	mustWrite(t, peer, append(header(0, nil), frame(mustEncode(t, Ping{}))...))
	if b, err := conn.ReadFrame(); err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "zero length") {
		t.Fatalf("ReadFrame of a zero-length frame = %x, %v", b, err)
	}
	expectClosed(t, conn, peer)
}

// A frame that is not a message fails Recv and closes the Conn: the valid
// frame behind it is never delivered.
func TestUndecodableBody(t *testing.T) {
	for name, body := range map[string][]byte{
		"garbage":        []byte("hello, world"),
		"unknown kind":   {0x92, 0xa3, 'f', 'o', 'o', 0x80},
		"trailing bytes": append(mustEncode(t, Ping{}), 0x00),
		"nested deep":    append([]byte{0x92, 0xa4, 'p', 'i', 'n', 'g', 0x81, 0xa1, 'x'}, bytes.Repeat([]byte{0x91}, 100_000)...),
		"decoder panic":  nilRetryAt,
	} {
		t.Run(name, func(t *testing.T) {
			conn, peer := rawPair(t, Options{})
			mustWrite(t, peer, append(frame(body), frame(mustEncode(t, Pong{Nonce: 1}))...))
			if m, err := conn.Recv(); err == nil || errors.Is(err, ErrClosed) {
				t.Fatalf("Recv = %#v, %v; want a decode error", m, err)
			}
			expectClosed(t, conn, peer)
		})
	}
}

// A peer that stops part-way through a frame fails the read after the
// frame timeout, and the Conn is closed.
func TestStalledPeerMidFrame(t *testing.T) {
	const timeout = 200 * time.Millisecond
	body := mustEncode(t, SendMessage{ID: "1", Body: "never finished"})
	for name, partial := range map[string][]byte{
		"in the header": frame(body)[:2],
		"in the body":   frame(body)[:headerSize+len(body)/2],
	} {
		t.Run(name, func(t *testing.T) {
			conn, peer := rawPair(t, Options{FrameTimeout: timeout})
			mustWrite(t, peer, partial)
			start := time.Now()
			r := await(t, asyncReadFrame(conn), "ReadFrame")
			elapsed := time.Since(start)
			if !errors.Is(r.err, os.ErrDeadlineExceeded) {
				t.Fatalf("ReadFrame = %x, %v; want a deadline error", r.b, r.err)
			}
			if elapsed < timeout*9/10 {
				t.Errorf("ReadFrame gave up after %s, before the frame timeout %s", elapsed, timeout)
			}
			expectClosed(t, conn, peer)
		})
	}
}

// Waiting for a frame to begin has no deadline, also after a frame was read
// (its deadline is cleared).
func TestIdleBetweenFramesHasNoDeadline(t *testing.T) {
	const timeout = 100 * time.Millisecond
	a, b := pair(t, Options{FrameTimeout: timeout})
	if err := a.Send(Ping{Nonce: 1}); err != nil {
		t.Fatal(err)
	}
	if m, err := b.Recv(); err != nil || m != (Ping{Nonce: 1}) {
		t.Fatalf("Recv = %#v, %v", m, err)
	}
	pending := asyncRecv(b)
	select {
	case r := <-pending:
		t.Fatalf("Recv on an idle channel returned %#v, %v", r.m, r.err)
	case <-time.After(5 * timeout): // idle for several frame timeouts
	}
	if err := a.Send(Ping{Nonce: 2}); err != nil {
		t.Fatal(err)
	}
	if r := await(t, pending, "Recv"); r.err != nil || r.m != (Ping{Nonce: 2}) {
		t.Fatalf("Recv after idling = %#v, %v", r.m, r.err)
	}
}

func TestCleanEOFBetweenFrames(t *testing.T) {
	a, b := pair(t, Options{})
	if err := a.Send(Ping{Nonce: 1}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if m, err := b.Recv(); err != nil || m != (Ping{Nonce: 1}) {
		t.Fatalf("Recv = %#v, %v", m, err)
	}
	if m, err := b.Recv(); err != io.EOF {
		t.Fatalf("Recv at the end = %#v, %v; want io.EOF", m, err)
	}
	// From then on the Conn is closed, for sending too.
	expectClosed(t, b, nil)
}

func TestEOFMidFrame(t *testing.T) {
	body := mustEncode(t, Pong{Nonce: 77})
	for name, partial := range map[string][]byte{
		"after 1 header byte":  frame(body)[:1],
		"after 3 header bytes": frame(body)[:3],
		"after the header":     frame(body)[:headerSize],
		"in the body":          frame(body)[:headerSize+len(body)-1],
		"after a whole frame":  append(frame(body), frame(body)[:headerSize+1]...),
	} {
		t.Run(name, func(t *testing.T) {
			conn, peer := rawPair(t, Options{})
			mustWrite(t, peer, partial)
			peer.Close()
			if len(partial) > len(frame(body)) {
				if m, err := conn.Recv(); err != nil || m != (Pong{Nonce: 77}) {
					t.Fatalf("Recv = %#v, %v", m, err)
				}
			}
			b, err := conn.ReadFrame()
			if err == io.EOF || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("ReadFrame = %x, %v; want an error wrapping io.ErrUnexpectedEOF", b, err)
			}
			expectClosed(t, conn, nil)
		})
	}
}

// Close unblocks a pending Recv, which returns ErrClosed, whether it waits
// for a frame to begin or for the rest of one; Close is idempotent.
func TestCloseUnblocksRecv(t *testing.T) {
	for name, partial := range map[string][]byte{
		"between frames": nil,
		"mid-frame":      frame(mustEncode(t, Ping{}))[:3],
	} {
		t.Run(name, func(t *testing.T) {
			conn, peer := rawPair(t, Options{})
			mustWrite(t, peer, partial)
			pending := asyncRecv(conn)
			if err := conn.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if r := await(t, pending, "Recv"); r.err != ErrClosed {
				t.Fatalf("pending Recv = %#v, %v; want ErrClosed", r.m, r.err)
			}
			if err := conn.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			for _, f := range []func() error{
				func() error { _, err := conn.Recv(); return err },
				func() error { return conn.Send(Ping{}) },
			} {
				if err := f(); err != ErrClosed {
					t.Errorf("after Close: %v, want ErrClosed", err)
				}
			}
			expectPeerEOF(t, peer)
		})
	}
}

// A peer that never reads makes Send fail within the frame timeout once the
// socket buffer is full, instead of blocking forever; the peer then reads
// every frame that Send reported as sent, whole, and no other.
func TestSendToStalledReaderTimesOut(t *testing.T) {
	const timeout = 200 * time.Millisecond
	a, b := pair(t, Options{FrameTimeout: timeout})
	big := TurnFinished{MessageID: "x", Reply: strings.Repeat("z", 256<<10)}
	type outcome struct {
		sent    int
		err     error
		lastDur time.Duration
	}
	ch := make(chan outcome, 1)
	go func() {
		for i := 0; ; i++ {
			big.ExitCode = i
			start := time.Now()
			if err := a.Send(big); err != nil {
				ch <- outcome{i, err, time.Since(start)}
				return
			}
		}
	}()
	var o outcome
	select {
	case o = <-ch:
	case <-time.After(waitLimit):
		a.Close() // unblocks the sender
		<-ch
		t.Fatal("Send to a peer that never reads kept blocking")
	}
	if !errors.Is(o.err, os.ErrDeadlineExceeded) {
		t.Fatalf("Send #%d: %v, want a deadline error", o.sent, o.err)
	}
	if o.lastDur < timeout*9/10 {
		t.Errorf("the failing Send gave up after %s, before the frame timeout %s", o.lastDur, timeout)
	}
	expectClosed(t, a, nil)

	for i := range o.sent {
		m, err := b.Recv()
		if err != nil {
			t.Fatalf("peer Recv #%d of %d sent: %v", i, o.sent, err)
		}
		if tf, ok := m.(TurnFinished); !ok || tf.ExitCode != i || tf.Reply != big.Reply {
			t.Fatalf("peer Recv #%d: %.60v", i, m)
		}
	}
	if m, err := b.Recv(); err == nil {
		t.Fatalf("peer received %.60v beyond the %d frames sent", m, o.sent)
	}
}

// NewConn works on any stream net.Conn; on a net.Pipe, where every write
// waits for a reader, the frame timeout bounds a write nobody reads.
func TestNetPipe(t *testing.T) {
	p1, p2 := net.Pipe()
	a := NewConn(p1, Options{FrameTimeout: 200 * time.Millisecond})
	b := NewConn(p2, Options{FrameTimeout: 200 * time.Millisecond})
	defer a.Close()
	defer b.Close()

	want := filled(TurnFinished{}, 3)
	got := asyncRecv(b)
	if err := a.Send(want); err != nil {
		t.Fatal(err)
	}
	if r := await(t, got, "Recv"); r.err != nil || !sameMessage(r.m, want) {
		t.Fatalf("Recv = %#v, %v", r.m, r.err)
	}
	got = asyncRecv(a)
	if err := b.Send(Pong{Nonce: 5}); err != nil {
		t.Fatal(err)
	}
	if r := await(t, got, "Recv"); r.err != nil || r.m != (Pong{Nonce: 5}) {
		t.Fatalf("Recv = %#v, %v", r.m, r.err)
	}

	if r := await(t, asyncErr(func() error { return a.Send(Ping{}) }), "Send nobody reads"); !errors.Is(r.err, os.ErrDeadlineExceeded) {
		t.Fatalf("Send nobody reads: %v, want a deadline error", r.err)
	}
	if err := a.Send(Ping{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after the timeout: %v, want ErrClosed", err)
	}
	if r := await(t, asyncRecv(b), "peer Recv"); r.err != io.EOF {
		t.Fatalf("peer Recv = %#v, %v; want io.EOF", r.m, r.err)
	}
}

// A peer that closes its end with a frame of ours unread resets the
// connection; between frames that reads as the peer's end, io.EOF, not as a
// broken channel.
func TestResetBetweenFramesIsEOF(t *testing.T) {
	a, b := pair(t, Options{})
	if err := a.Send(Pong{Nonce: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(Pong{Nonce: 2}); err != nil {
		t.Fatal(err)
	}
	b.Close() // with a's Pong unread: a reset
	if m, err := a.Recv(); err != nil || m != (Pong{Nonce: 2}) {
		t.Fatalf("Recv = %v, %v; want the frame sent before the close", m, err)
	}
	if _, err := a.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("Recv after the peer's reset = %v, want io.EOF", err)
	}
}
