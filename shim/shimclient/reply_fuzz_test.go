package shimclient

import (
	"errors"
	"strings"
	"testing"

	"github.com/battyhq/batty/protocol"
)

// FuzzReplyJoin feeds the assembler the frames a shim (one on a host: any
// bytes) may send — pieces of one or two messages and a TurnFinished with
// any size — and checks that it never panics, that a TurnFinished it
// passes holds exactly the pieces of its own message, in order, with the
// size the shim said, and that what it refuses wraps ErrReply.
func FuzzReplyJoin(f *testing.F) {
	f.Add("hello ", "world", "m1", "m1", "m1", int64(11), "")
	f.Add("a", "b", "m1", "m2", "m1", int64(2), "")
	f.Add("", "", "", "", "m1", int64(0), "")
	f.Add("x", "y", "m1", "m1", "m1", int64(2), "inline")
	f.Fuzz(func(t *testing.T, p1, p2, id1, id2, finID string, size int64, inline string) {
		var j ReplyJoin
		var err error
		var want strings.Builder
		for _, p := range []protocol.ReplyChunk{{MessageID: id1, Data: p1}, {MessageID: id2, Data: p2}} {
			var out protocol.Message
			if out, err = j.Take(p); err != nil {
				break
			}
			if out != nil {
				t.Fatalf("a piece reached the driver: %#v", out)
			}
			want.WriteString(p.Data)
		}
		if err != nil {
			if !errors.Is(err, ErrReply) {
				t.Fatalf("a refused piece: %v, not ErrReply", err)
			}
			return
		}
		out, err := j.Take(protocol.TurnFinished{MessageID: finID, ReplySize: size, Reply: inline})
		if err != nil {
			if !errors.Is(err, ErrReply) {
				t.Fatalf("a refused finish: %v, not ErrReply", err)
			}
			return
		}
		tf, ok := out.(protocol.TurnFinished)
		if !ok {
			t.Fatalf("the finish came out as %#v", out)
		}
		if tf.Reply != want.String() || tf.ReplySize != int64(len(tf.Reply)) || inline != "" {
			t.Fatalf("reply %q (size %d) from pieces %q, inline %q", tf.Reply, tf.ReplySize, want.String(), inline)
		}
		if want.Len() > 0 && (id1 != finID && p1 != "" || id2 != finID && p2 != "") {
			t.Fatalf("pieces of another message (%q, %q) went into the reply to %q", id1, id2, finID)
		}
		// The next turn starts empty.
		if next, err := j.Take(protocol.TurnFinished{MessageID: "next"}); err != nil || next.(protocol.TurnFinished).Reply != "" {
			t.Fatalf("the next turn after a finished one: %#v, %v", next, err)
		}
	})
}
