package protocol

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
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
	if got := Bound(tf); !reflect.DeepEqual(got, Message(tf)) {
		t.Errorf("Bound changed %+v into %+v", tf, got)
	}
}

// A turn's commands keep their last MaxCommands, each command line
// clipped and the tail of its output kept, valid UTF-8 whatever codex
// printed; the argument is left as it was.
func TestBoundCommands(t *testing.T) {
	in := make([]Command, MaxCommands+5)
	for i := range in {
		in[i] = Command{Command: fmt.Sprintf("cmd %d", i), Output: "ok", ExitCode: i}
	}
	in[len(in)-1] = Command{Command: strings.Repeat("c", MaxCommandLine+10), Output: "\xff" + strings.Repeat("o", MaxCommandOutput) + "END", ExitCode: -1}
	out := BoundCommands(in)
	if len(out) != MaxCommands || out[0].Command != "cmd 5" || out[0].ExitCode != 5 {
		t.Fatalf("kept %d, first %+v", len(out), out[0])
	}
	last := out[len(out)-1]
	if len(last.Command) > MaxCommandLine || !strings.HasSuffix(last.Output, "END") || len(last.Output) > MaxCommandOutput+len("… ") ||
		!utf8.ValidString(last.Output) || last.ExitCode != -1 {
		t.Fatalf("last: %d bytes of command, output %q…", len(last.Command), last.Output[:20])
	}
	if in[len(in)-1].Output[0] != 0xff || BoundCommands(nil) != nil {
		t.Fatal("the argument changed, or nil is not nil")
	}
	if m := Bound(TurnFinished{Commands: in}).(TurnFinished); len(m.Commands) != MaxCommands {
		t.Fatalf("Bound kept %d commands", len(m.Commands))
	}
}
