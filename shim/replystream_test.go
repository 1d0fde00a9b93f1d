package shim

import (
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/protocol"
)

// TestReplyStream: the shim sends every reply, short or larger than a
// frame, as ReplyChunk pieces, each within its bound and all before the
// turn's TurnFinished, which carries their total and never the text.
func TestReplyStream(t *testing.T) {
	const n = 3<<20 + 123
	h := startShimWith(t, newTestMark(), nil, false)
	pieces := func(id string) (string, protocol.TurnFinished) {
		t.Helper()
		var whole strings.Builder
		for {
			m := h.next()
			if c, ok := m.(protocol.ReplyChunk); ok {
				if c.MessageID != id || len(c.Data) > protocol.MaxReplyChunk || len(c.Data) == 0 {
					t.Fatalf("piece of %d bytes for %q", len(c.Data), c.MessageID)
				}
				whole.WriteString(c.Data)
				continue
			}
			if tf, ok := m.(protocol.TurnFinished); ok {
				if tf.MessageID != id || tf.Status != protocol.TurnCompleted || tf.Reply != "" || tf.ReplySize != int64(whole.Len()) {
					t.Fatalf("turn finished %s %s, reply of %d bytes, size %d, pieces %d", tf.MessageID, tf.Status, len(tf.Reply), tf.ReplySize, whole.Len())
				}
				return whole.String(), tf
			}
		}
	}
	h.send("big", "scenario:huge:"+strconv.Itoa(n))
	if whole, _ := pieces("big"); len(whole) != n || strings.Trim(whole, "x") != "" {
		t.Fatalf("pieces make %d bytes, want %d", len(whole), n)
	}
	h.send("short", "hi")
	if whole, _ := pieces("short"); whole != "ECHO:hi" {
		t.Fatalf("short reply = %q", whole)
	}
}
