package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// fuzzMaxFrame is the frame limit of the Conns FuzzReadFrame reads with.
const fuzzMaxFrame = 1 << 20

// streamEnd is how a byte stream ends when read as frames.
type streamEnd int

const (
	endEOF           streamEnd = iota // between frames
	endUnexpectedEOF                  // inside a frame
	endZero                           // a zero length
	endTooLarge                       // a length above the limit
)

// parseStream reads data as frames the way ReadFrame must: the bodies of
// the whole frames in order, then how the stream ends.
func parseStream(data []byte, max int) ([][]byte, streamEnd) {
	var bodies [][]byte
	for {
		switch {
		case len(data) == 0:
			return bodies, endEOF
		case len(data) < headerSize:
			return bodies, endUnexpectedEOF
		}
		n := binary.BigEndian.Uint32(data)
		data = data[headerSize:]
		switch {
		case n == 0:
			return bodies, endZero
		case uint64(n) > uint64(max):
			return bodies, endTooLarge
		case uint64(n) > uint64(len(data)):
			return bodies, endUnexpectedEOF
		}
		bodies = append(bodies, data[:n])
		data = data[n:]
	}
}

// feed returns a Conn whose peer writes data and closes its end, and a
// function that closes the Conn and waits for the peer's writer to end.
func feed(t *testing.T, data []byte) (*Conn, func()) {
	conn, remote, err := Socketpair(Options{MaxFrameSize: fuzzMaxFrame})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		remote.Write(data) // fails once conn is closed: it need not read everything
		remote.Close()
	}()
	return conn, func() { conn.Close(); <-done }
}

func checkEnd(t *testing.T, err error, end streamEnd) {
	t.Helper()
	ok := false
	switch end {
	case endEOF:
		ok = err == io.EOF
	case endUnexpectedEOF:
		ok = err != io.EOF && errors.Is(err, io.ErrUnexpectedEOF)
	case endZero:
		ok = err != nil && strings.Contains(err.Error(), "zero length")
	case endTooLarge:
		ok = errors.Is(err, ErrFrameTooLarge)
	}
	if !ok {
		t.Fatalf("the stream ended with %v, want end %d", err, end)
	}
}

// FuzzReadFrame feeds arbitrary bytes to a Conn through its peer socket:
// ReadFrame returns exactly the whole frames they hold, then the right
// error, allocating no more than the frames (at most the limit each); Recv
// returns what Decode makes of those frames, stopping at the first error;
// AcceptHello takes the first frame only when it is a Hello of this version.
func FuzzReadFrame(f *testing.F) {
	var stream []byte
	for _, m := range []Message{
		Hello{Version: Version, PID: 1, Agent: "a"}, Welcome{Version: Version},
		SendMessage{ID: "1", From: "h", Body: "hi"}, filled(TurnFinished{}, 1), Ping{Nonce: 3},
		filled(RateLimits{}, 2),
	} {
		fr := frame(mustEncode(f, m))
		f.Add(fr)
		stream = append(stream, fr...)
	}
	f.Add(stream)
	f.Add(stream[:len(stream)-3])
	f.Add(append(bytes.Clone(stream), header(fuzzMaxFrame+1, []byte("xx"))...))
	f.Add(append(bytes.Clone(stream), header(0, nil)...))
	f.Add(append(frame([]byte("not msgpack")), stream...))
	f.Add(frame(mustEncode(f, Hello{Version: Version + 1, Agent: "future"})))
	f.Add(header(0xffffffff, nil))
	f.Add([]byte{0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		bodies, end := parseStream(data, fuzzMaxFrame)

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		conn, stop := feed(t, data)
		for i, want := range bodies {
			got, err := conn.ReadFrame()
			if err != nil || !bytes.Equal(got, want) {
				stop()
				t.Fatalf("frame %d: ReadFrame = %x, %v; want %x", i, got, err, want)
			}
		}
		_, err := conn.ReadFrame()
		_, err2 := conn.ReadFrame()
		stop()
		runtime.ReadMemStats(&after)
		checkEnd(t, err, end)
		if !errors.Is(err2, ErrClosed) {
			t.Fatalf("ReadFrame after the end: %v, want ErrClosed", err2)
		}
		if alloc, limit := after.TotalAlloc-before.TotalAlloc, 2*uint64(len(data)+fuzzMaxFrame)+1<<20; alloc > limit {
			t.Fatalf("reading %d bytes allocated %d bytes (limit %d)", len(data), alloc, limit)
		}

		// The handshake reads the first frame the same way: a Hello of this
		// version is taken (answering it may fail: the peer does not read),
		// anything else (or nothing) is an error.
		conn, stop = feed(t, data)
		h, err := conn.AcceptHello(waitLimit)
		stop()
		var first Message
		if len(bodies) > 0 {
			first, _ = Decode(bodies[0])
		}
		if want, ok := first.(Hello); ok && want.Version == Version {
			if h != want || (err != nil && !strings.Contains(err.Error(), "send welcome")) {
				t.Fatalf("AcceptHello = %+v, %v; want %+v", h, err, want)
			}
		} else if err == nil {
			t.Fatalf("AcceptHello took %+v from a stream starting with %#v", h, first)
		}

		conn, stop = feed(t, data)
		defer stop()
		for i, body := range bodies {
			want, werr := Decode(body)
			got, err := conn.Recv()
			if werr != nil {
				if err == nil || errors.Is(err, ErrClosed) {
					t.Fatalf("frame %d: Recv = %#v, %v; want the decode error %v", i, got, err, werr)
				}
				if _, err := conn.Recv(); !errors.Is(err, ErrClosed) {
					t.Fatalf("Recv after a decode error: %v, want ErrClosed", err)
				}
				return
			}
			if err != nil || !sameMessage(got, want) {
				t.Fatalf("frame %d: Recv = %#v, %v; want %#v", i, got, err, want)
			}
		}
		_, err = conn.Recv()
		checkEnd(t, err, end)
	})
}
