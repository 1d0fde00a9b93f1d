package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// waitLimit bounds every wait in these tests: long enough for a loaded CI
// machine, short enough that a hang fails instead of stalling the run.
const waitLimit = 20 * time.Second

// allMessages holds the zero value of every message type in messages.go.
// TestKindsCoverEveryMessageType checks the list against the source.
var allMessages = []Message{
	Welcome{}, SendMessage{}, Interrupt{}, Ping{},
	ResetThread{}, SwitchThread{}, Shutdown{}, Kill{},
	Hello{}, Accepted{}, Rejected{}, TurnStarted{}, ThreadChanged{},
	StateChanged{}, TurnFinished{}, QuotaBlocked{}, AuthRequired{},
	ContextExhausted{}, ContextPressure{}, Pong{}, Warning{}, Error{}, NetworkWait{},
	RateLimits{}, TranscriptLines{}, Outgoing{}, OutgoingAck{}, RecallAnswer{}, ReplyChunk{},
}

var timeType = reflect.TypeFor[time.Time]()

// filled returns a value of m's type with every field, nested ones
// included, set to a non-zero value that differs from field to field (so two
// fields sharing a wire name, or swapped on the way, cannot go unnoticed).
// seed varies the values between calls.
func filled(m Message, seed int) Message {
	v := reflect.New(reflect.TypeOf(m)).Elem()
	fill(v, reflect.TypeOf(m).Name(), seed)
	return v.Interface().(Message)
}

func fill(v reflect.Value, path string, seed int) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", path, seed)
	n := h.Sum64()
	if v.Type() == timeType {
		// Nanoseconds and a zone other than UTC or Local: the wire keeps
		// the instant, not the zone, so only Equal may compare it.
		zone := time.FixedZone("UTC+5:30", 5*3600+1800)
		v.Set(reflect.ValueOf(time.Date(2025, 3, 14, 15, 9, 26, int(n%1e9)|1, zone).Add(time.Duration(seed) * time.Hour)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s #%d ✓ %x", path, seed, n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(n>>2) | 1) // large, positive, distinct
	case reflect.Uint64:
		v.SetUint(n | 1<<63)
	case reflect.Float64:
		v.SetFloat(float64(n%10000)/100 + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 3, 3)
		for i := range 3 {
			fill(s.Index(i), fmt.Sprintf("%s[%d]", path, i), seed)
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), path+"."+v.Type().Field(i).Name, seed)
		}
	default:
		// A new field kind: teach fill about it.
		panic(fmt.Sprintf("fill: %s has unsupported kind %s", path, v.Kind()))
	}
}

// zeroFields lists the fields of v, nested ones included, that are zero.
func zeroFields(v reflect.Value, path string) []string {
	if v.Type() == timeType || v.Kind() != reflect.Struct {
		if v.IsZero() {
			return []string{path}
		}
		if v.Kind() == reflect.Slice {
			var zs []string
			for i := range v.Len() {
				zs = append(zs, zeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
			}
			return zs
		}
		return nil
	}
	var zs []string
	for i := range v.NumField() {
		zs = append(zs, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
	}
	return zs
}

// sameMessage reports whether a and b are the same message: same type, the
// same instants in time fields (compared with Equal), floats equal bit for
// bit or both NaN, slices equal including nil against empty.
func sameMessage(a, b Message) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return sameValue(reflect.ValueOf(a), reflect.ValueOf(b))
}

func sameValue(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == timeType {
		return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	default:
		return a.Equal(b)
	}
}

// pair returns two Conns joined by a socketpair, the second wrapping the
// inherited end through FileConn as a shim does.
func pair(t testing.TB, opts Options) (*Conn, *Conn) {
	t.Helper()
	a, remote, err := Socketpair(opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FileConn(remote, opts)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// rawPair returns a Conn and the other end of its socketpair as a plain
// net.Conn, to write arbitrary bytes to the Conn and read what it wrote.
func rawPair(t testing.TB, opts Options) (*Conn, net.Conn) {
	t.Helper()
	c, remote, err := Socketpair(opts)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := net.FileConn(remote)
	remote.Close()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, peer
}

// frame prefixes body with its length.
func frame(body []byte) []byte {
	return header(uint32(len(body)), body)
}

// header returns a length prefix declaring n, followed by body (which need
// not be n bytes long).
func header(n uint32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, n)
	return append(b, body...)
}

func mustEncode(t testing.TB, m Message) []byte {
	t.Helper()
	b, err := Encode(m)
	if err != nil {
		t.Fatalf("Encode(%#v): %v", m, err)
	}
	return b
}

func mustWrite(t testing.TB, w net.Conn, b []byte) {
	t.Helper()
	w.SetWriteDeadline(time.Now().Add(waitLimit))
	if _, err := w.Write(b); err != nil {
		t.Fatalf("peer write: %v", err)
	}
}

// result is what a call made in another goroutine returned.
type result struct {
	m   Message
	b   []byte
	err error
}

// async runs f in a goroutine and returns a channel delivering its result.
func async(f func() result) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- f() }()
	return ch
}

func asyncRecv(c *Conn) <-chan result {
	return async(func() result { m, err := c.Recv(); return result{m: m, err: err} })
}

func asyncReadFrame(c *Conn) <-chan result {
	return async(func() result { b, err := c.ReadFrame(); return result{b: b, err: err} })
}

// await waits for a result, failing the test after waitLimit. The goroutine
// behind ch ends when the test's cleanup closes the Conns.
func await(t testing.TB, ch <-chan result, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatalf("%s: no result within %s", what, waitLimit)
		return result{}
	}
}

// expectPeerEOF asserts the Conn on the other side of peer closed its socket:
// after any bytes still in flight, peer reads EOF (or a reset).
func expectPeerEOF(t testing.TB, peer net.Conn) {
	t.Helper()
	peer.SetReadDeadline(time.Now().Add(waitLimit))
	buf := make([]byte, 64<<10)
	for {
		_, err := peer.Read(buf)
		if err == nil {
			continue
		}
		// ECONNRESET when the Conn closed with bytes it had not read.
		if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("peer read: %v, want EOF (the Conn closed its socket)", err)
		}
		return
	}
}

// Encode returns the frame body for m.
func Encode(m Message) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeTo(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
