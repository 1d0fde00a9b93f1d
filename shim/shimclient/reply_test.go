package shimclient

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/team"
)

// TestReplyJoin: the pieces of a reply are held, never handed on, and
// make the Reply of the TurnFinished that follows them; the pieces of
// a turn that breaks the protocol are refused.
func TestReplyJoin(t *testing.T) {
	chunk := func(id, data string) protocol.Message { return protocol.ReplyChunk{MessageID: id, Data: data} }
	done := func(id string, size int64) protocol.Message {
		return protocol.TurnFinished{MessageID: id, Status: protocol.TurnCompleted, ReplySize: size}
	}
	cases := []struct {
		name   string
		events []protocol.Message
		reply  string // the last TurnFinished's Reply
		err    bool   // the last event is refused
	}{
		{"pieces make the reply", []protocol.Message{chunk("m", "hello "), chunk("m", "world"), done("m", 11)}, "hello world", false},
		{"no piece: an empty reply", []protocol.Message{done("m", 0)}, "", false},
		{"other events pass between pieces", []protocol.Message{chunk("m", "a"), protocol.Warning{Message: "w"}, chunk("m", "b"), done("m", 2)}, "ab", false},
		{"one turn after another", []protocol.Message{chunk("a", "one"), done("a", 3), chunk("b", "two"), done("b", 3)}, "two", false},
		{"short of its size", []protocol.Message{chunk("m", "abc"), done("m", 4)}, "", true},
		{"past its size", []protocol.Message{chunk("m", "abcde"), done("m", 4)}, "", true},
		{"pieces of another turn", []protocol.Message{chunk("a", "x"), done("b", 1)}, "", true},
		{"a piece of another turn midway", []protocol.Message{chunk("a", "x"), chunk("b", "y")}, "", true},
		{"a reply outside its pieces", []protocol.Message{protocol.TurnFinished{MessageID: "m", Reply: "inline", ReplySize: 6}}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var j ReplyJoin
			var last protocol.Message
			for i, m := range c.events {
				got, err := j.Take(m)
				if i < len(c.events)-1 {
					if err != nil {
						t.Fatalf("event %d refused: %v", i, err)
					}
					if _, piece := m.(protocol.ReplyChunk); piece != (got == nil) {
						t.Fatalf("event %d (%s) handed on as %v", i, m.Kind(), got)
					}
					continue
				}
				if (err != nil) != c.err || (err != nil && !errors.Is(err, ErrReply)) {
					t.Fatalf("last event: error %v, want an error %v", err, c.err)
				}
				last = got
			}
			if c.err {
				return
			}
			if tf, ok := last.(protocol.TurnFinished); !ok || tf.Reply != c.reply || tf.ReplySize != int64(len(c.reply)) {
				t.Fatalf("turn finished = %+v, want reply %q", last, c.reply)
			}
		})
	}
}

// TestReplyJoinRefusesAFlood: pieces past protocol.MaxReply are refused
// as they pass it, before they are held.
func TestReplyJoinRefusesAFlood(t *testing.T) {
	var j ReplyJoin
	piece := strings.Repeat("f", protocol.MaxReplyChunk)
	for i := range protocol.MaxReply / protocol.MaxReplyChunk {
		if _, err := j.Take(protocol.ReplyChunk{MessageID: "m", Data: piece}); err != nil {
			t.Fatalf("piece %d within the bound refused: %v", i, err)
		}
	}
	if _, err := j.Take(protocol.ReplyChunk{MessageID: "m", Data: "x"}); !errors.Is(err, ErrReply) {
		t.Fatalf("a byte past the bound: %v, want ErrReply", err)
	}
	if j.buf.Len() != protocol.MaxReply {
		t.Fatalf("holding %d bytes, want at most %d", j.buf.Len(), protocol.MaxReply)
	}
}

// A reply of 1 MiB and more travels from a real shim in pieces and
// reaches the driver whole, in the turn's TurnFinished, with no piece
// among the events; the next turn's short reply too.
func TestClientLongReplyArrivesWhole(t *testing.T) {
	c, _ := startRealClient(t)
	const n = 1<<20 + 4321
	send := func(id, body string) protocol.TurnFinished {
		t.Helper()
		if err := c.Send(protocol.SendMessage{ID: id, From: team.Human, Body: body}); err != nil {
			t.Fatal(err)
		}
		for {
			switch e := nextEvent(t, c).(type) {
			case protocol.ReplyChunk:
				t.Fatal("a reply piece reached the driver")
			case protocol.TurnFinished:
				if e.MessageID != id || e.Status != protocol.TurnCompleted {
					t.Fatalf("turn finished = %s %s %s", e.MessageID, e.Status, e.Error)
				}
				return e
			}
		}
	}
	if tf := send("big", "scenario:huge:1052897"); len(tf.Reply) != n || strings.Trim(tf.Reply, "x") != "" || tf.ReplySize != n {
		t.Fatalf("reply of %d bytes (size %d), want %d", len(tf.Reply), tf.ReplySize, n)
	}
	if tf := send("short", "hi"); tf.Reply != "ECHO:hi" || tf.ReplySize != int64(len("ECHO:hi")) {
		t.Fatalf("short reply %q (size %d)", tf.Reply, tf.ReplySize)
	}
}

// The kind of a transient failure reaches the driver typed, as the shim
// classified it.
func TestClientFailureKindArrivesTyped(t *testing.T) {
	c, _ := startRealClient(t)
	if err := c.Send(protocol.SendMessage{ID: "s", From: team.Human, Body: "scenario:servererror"}); err != nil {
		t.Fatal(err)
	}
	for {
		if tf, ok := nextEvent(t, c).(protocol.TurnFinished); ok {
			if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailStream || tf.Transient != protocol.TransientServer {
				t.Fatalf("turn finished = %s %s %q (%s)", tf.Status, tf.Failure, tf.Transient, tf.Error)
			}
			return
		}
	}
}

// A shim that floods reply pieces past protocol.MaxReply is refused: the
// Client breaks the channel (Err matches ErrReply), hands no piece and
// nothing after the flood to the driver, and the shim is left to its
// driver's Close.
func TestClientRefusesAReplyFlood(t *testing.T) {
	c, err := startFake(t, context.Background(), "flood", eventWait)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, c); len(got) != 0 {
		t.Fatalf("events %s, want none", describe(got))
	}
	if !errors.Is(c.Err(), ErrReply) {
		t.Fatalf("Err = %v, want ErrReply", c.Err())
	}
}
