package protocol

import (
	"strings"
	"testing"
)

// TestBoundKeepsEveryEventWithinAFrame: whatever size the text a worker
// printed, every event the shim sends fits in a frame once bounded.
func TestBoundKeepsEveryEventWithinAFrame(t *testing.T) {
	huge := strings.Repeat("é", 10<<20) // 20 MiB, more than a frame
	events := []Message{
		Hello{Version: Version, ThreadID: huge},
		Accepted{ID: "m", QueueDepth: 1},
		Rejected{ID: "m", Reason: RejectInvalid, Detail: huge},
		TurnStarted{MessageID: "m", ThreadID: huge},
		ThreadChanged{ThreadID: huge, Previous: huge, Detail: huge},
		StateChanged{From: StateIdle, To: StateWorking, Reason: huge},
		TurnFinished{MessageID: "m", ThreadID: huge, Error: huge, Reply: huge, ReplyFile: huge},
		QuotaBlocked{MessageID: "m", Message: huge},
		AuthRequired{MessageID: "m", Message: huge},
		ContextExhausted{MessageID: "m", ThreadID: huge, Message: huge},
		ContextPressure{ThreadID: huge},
		Pong{Nonce: 1},
		Warning{MessageID: "m", Message: huge},
		Error{Command: KindPing, Message: huge},
		NetworkWait{MessageID: "m", Waiting: true, Message: huge},
	}
	for _, m := range events {
		b, err := Encode(Bound(m))
		if err != nil {
			t.Fatalf("%s: %v", m.Kind(), err)
		}
		if len(b) > 2<<20 {
			t.Errorf("%s: %d bytes once bounded", m.Kind(), len(b))
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", m.Kind(), err)
		}
		switch e := back.(type) {
		case TurnFinished:
			if e.ReplySize != int64(len(huge)) || !strings.HasPrefix(huge, e.Reply) || len(e.Reply) > MaxReplyPreview {
				t.Errorf("turn_finished: reply of %d bytes, reply_size %d", len(e.Reply), e.ReplySize)
			}
		}
	}
}

func TestBoundLeavesSmallEventsAlone(t *testing.T) {
	tf := TurnFinished{MessageID: "m", ThreadID: "t", Error: "e", Reply: "r", ReplySize: 0}
	if got := Bound(tf); got != Message(tf) {
		t.Errorf("Bound changed %+v into %+v", tf, got)
	}
}

func TestReplyPieces(t *testing.T) {
	var p ReplyPieces
	p.Add(ReplyChunk{MessageID: "a", Data: "stale"})
	p.Add(ReplyChunk{MessageID: "m", Data: "hello "})
	p.Add(ReplyChunk{MessageID: "m", Data: "world"})
	if p.Len("m") != 11 || p.Len("a") != 0 {
		t.Fatalf("Len = %d, %d", p.Len("m"), p.Len("a"))
	}
	if got, ok := p.Take("m", 11); !ok || got != "hello world" {
		t.Fatalf("Take = %q, %v", got, ok)
	}
	if _, ok := p.Take("m", 11); ok {
		t.Fatal("the pieces were not forgotten")
	}
	p.Add(ReplyChunk{MessageID: "m", Data: "short"})
	if _, ok := p.Take("m", 6); ok {
		t.Fatal("a reply short of its size is whole")
	}
	big := strings.Repeat("x", MaxReplyChunk)
	for range MaxPiecedReply/MaxReplyChunk + 1 {
		p.Add(ReplyChunk{MessageID: "b", Data: big})
	}
	if p.Len("b") != MaxPiecedReply {
		t.Fatalf("kept %d bytes, want at most %d", p.Len("b"), MaxPiecedReply)
	}
}
