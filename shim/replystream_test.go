package shim

import (
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// TestReplyStream: with ReplyStream and no reply directory, a reply
// larger than a frame arrives whole in pieces, each within its bound and
// all before the turn's TurnFinished, whose size they make.
func TestReplyStream(t *testing.T) {
	const n = 3<<20 + 123
	h := startShim(t, func(c *shimconfig.Config) { c.ReplyDir, c.ReplyStream = "", true })
	h.send("big", "scenario:huge:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted, kThread)
	var whole strings.Builder
	for {
		m := h.next()
		if c, ok := m.(protocol.ReplyChunk); ok {
			if c.MessageID != "big" || len(c.Data) > protocol.MaxReplyChunk || len(c.Data) == 0 {
				t.Fatalf("piece of %d bytes for %q", len(c.Data), c.MessageID)
			}
			whole.WriteString(c.Data)
			continue
		}
		tf, ok := m.(protocol.TurnFinished)
		if !ok {
			t.Fatalf("got %s before the turn's end", m.Kind())
		}
		if tf.MessageID != "big" || tf.Status != protocol.TurnCompleted || tf.ReplyFile != "" || tf.ReplySize != n || !strings.HasPrefix(whole.String(), tf.Reply) {
			t.Fatalf("turn finished %+v (reply of %d bytes)", tf.Status, len(tf.Reply))
		}
		break
	}
	if whole.Len() != n || strings.Trim(whole.String(), "x") != "" {
		t.Fatalf("pieces make %d bytes, want %d", whole.Len(), n)
	}
}
