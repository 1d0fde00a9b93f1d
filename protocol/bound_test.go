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
		TurnFinished{MessageID: "m", ThreadID: huge, Error: huge, Reply: huge, ReplySize: 3},
		ReplyChunk{MessageID: huge, Data: huge},
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
			// The reply travels in pieces only.
			if e.Reply != "" || e.ReplySize != 3 {
				t.Errorf("turn_finished: reply of %d bytes, reply_size %d", len(e.Reply), e.ReplySize)
			}
		case ReplyChunk:
			if len(e.Data) > MaxReplyChunk || !strings.HasPrefix(huge, e.Data) {
				t.Errorf("reply_chunk: %d bytes", len(e.Data))
			}
		}
	}
}

func TestBoundLeavesSmallEventsAlone(t *testing.T) {
	tf := TurnFinished{MessageID: "m", ThreadID: "t", Error: "e", Failure: FailStream, Transient: TransientServer, ReplySize: 7}
	if got := Bound(tf); got != Message(tf) {
		t.Errorf("Bound changed %+v into %+v", tf, got)
	}
}
