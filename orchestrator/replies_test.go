package orchestrator

import (
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/eventlog"
)

// TestLongRepliesReachTheHumanWhole: replies of 2 MiB (over the inbox's
// inline limit) and 20 MiB (over the frame limit) to human messages are
// recorded whole in the agent's done/ record and land whole in the human's
// inbox, having travelled as the shim's pieces joined by its client, and
// the agent goes on working.
func TestLongRepliesReachTheHumanWhole(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	r := p.start(nil)
	for _, n := range []int{2 << 20, 20 << 20} {
		id := p.send("solo", "human", "scenario:huge:"+strconv.Itoa(n))
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("%d bytes: status %s", n, st)
		}
		e := r.waitEvent(t, "reply to "+id, func(e eventlog.Event) bool {
			return e.Type == eventlog.EvReply && payloadOf[eventlog.Reply](e).InReplyTo == id
		})
		human := p.box("human")
		m, where, err := human.Get(e.Message)
		if err != nil || where != "new" || m.InReplyTo != id || m.BodySize != int64(n) {
			t.Fatalf("%d bytes: human message %s, body_size %d (%v)", n, where, m.BodySize, err)
		}
		whole, err := human.FullBody(m)
		if err != nil || len(whole) != n || strings.Trim(whole, "x") != "" {
			t.Fatalf("%d bytes: the human got %d bytes (%v)", n, len(whole), err)
		}
		solo := p.box("solo")
		done, _, err := solo.Get(id)
		if err != nil || done.Outcome == nil || done.Outcome.ReplySize != int64(n) {
			t.Fatalf("%d bytes: done record %+v (%v)", n, done.Outcome, err)
		}
		if whole, err := solo.FullReply(done); err != nil || len(whole) != n {
			t.Fatalf("%d bytes: the done record keeps %d bytes (%v)", n, len(whole), err)
		}
	}
	id := p.send("solo", "human", "still here")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
}
