package inbox

import (
	"errors"
	"strings"
	"testing"
)

func TestReplyID(t *testing.T) {
	long := strings.Repeat("a", MaxIDLen)
	longer := strings.Repeat("a", MaxIDLen-1) + "b"
	for _, id := range []string{"20261121T125100.123456789Z-1f2e3d4c", "x", long, longer, strings.Repeat("z", MaxIDLen-len(replySuffix))} {
		r := ReplyID(id)
		if !ValidID(r) {
			t.Errorf("ReplyID(%q) = %q: not a valid id", id, r)
		}
		if r != ReplyID(id) {
			t.Errorf("ReplyID(%q) is not the same twice", id)
		}
		if len(id)+len(replySuffix) <= MaxIDLen && r <= id {
			t.Errorf("ReplyID(%q) = %q does not sort after it", id, r)
		}
	}
	if got := ReplyID("abc"); got != "abc.reply" {
		t.Errorf("ReplyID(abc) = %q", got)
	}
	// Ids that share their first bytes keep distinct replies.
	if ReplyID(long) == ReplyID(longer) {
		t.Errorf("two long ids share the reply id %q", ReplyID(long))
	}
}

func TestDeliverReplyIsOncePerAnsweredMessage(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Box("asker")
	if err != nil {
		t.Fatal(err)
	}
	b.Limit = 1
	// The box is full: a reply is owed all the same.
	if _, err := b.Deliver(Message{From: "human", To: "asker", Body: "fills the box"}); err != nil {
		t.Fatal(err)
	}
	r := Message{From: "eng", To: "asker", Body: "the answer", InReplyTo: "q1"}
	first, fresh, err := b.DeliverReply(r)
	if err != nil || !fresh || first.ID != ReplyID("q1") {
		t.Fatalf("first delivery: %+v fresh %v, %v", first, fresh, err)
	}
	// Again (a crash before the outcome was recorded, the message run a
	// second time): the first copy stands, nothing is added.
	r.Body = "a second answer"
	again, fresh, err := b.DeliverReply(r)
	if err != nil || fresh || again.ID != first.ID || again.Body != "the answer" {
		t.Fatalf("second delivery: %+v fresh %v, %v", again, fresh, err)
	}
	// Still once when the asker has taken it already.
	if _, err := b.Claim(first.ID); err != nil {
		t.Fatal(err)
	}
	if _, fresh, err := b.DeliverReply(r); err != nil || fresh {
		t.Fatalf("after claim: fresh %v, %v", fresh, err)
	}
	// A file planted under the reply's id does not swallow the reply.
	b.Limit = 0
	if _, err := b.Deliver(Message{ID: ReplyID("q2"), From: "mallory", To: "asker", Body: "planted"}); err != nil {
		t.Fatal(err)
	}
	got, fresh, err := b.DeliverReply(Message{From: "eng", To: "asker", Body: "real", InReplyTo: "q2"})
	if err != nil || !fresh || got.ID == ReplyID("q2") || got.Body != "real" {
		t.Fatalf("planted id: %+v fresh %v, %v", got, fresh, err)
	}
	if _, _, err := b.DeliverReply(Message{From: "eng", To: "asker", Body: "x"}); err == nil {
		t.Fatal("a reply without in_reply_to was delivered")
	}
	if _, _, err := b.DeliverReply(Message{ID: "set", From: "eng", To: "asker", Body: "x", InReplyTo: "q3"}); err == nil || errors.Is(err, ErrExists) {
		t.Fatalf("a reply with its own id: %v", err)
	}
}

// A tracked box's CountOnDisk sees a message another process wrote a
// moment ago, before the index hears of it.
func TestCountOnDiskSeesWhatTheIndexHasNotHeardOf(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Box("eng")
	if err != nil {
		t.Fatal(err)
	}
	b.Track()
	if _, _, err := b.Count(); err != nil {
		t.Fatal(err)
	}
	other, err := s.Box("eng") // as batty send, in another process
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Deliver(Message{From: "human", To: "eng", Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	if pending, inflight, err := b.CountOnDisk(); err != nil || pending != 1 || inflight != 0 {
		t.Fatalf("CountOnDisk = %d, %d, %v; want 1 pending", pending, inflight, err)
	}
}
