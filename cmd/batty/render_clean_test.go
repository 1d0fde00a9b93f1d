package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

// TestHumanEventCleansOutsideText: `batty chat` prints the model's reply
// and codex's words; none of it reaches the terminal with an escape
// sequence, a CR or a bidirectional control. The reply keeps its lines,
// indented; every other text is one line.
func TestHumanEventCleansOutsideText(t *testing.T) {
	events := []protocol.Message{
		protocol.TurnFinished{MessageID: "chat-1", Status: protocol.TurnFailed, Failure: protocol.FailExit, Error: hostile, Reply: "answer " + hostile},
		protocol.Rejected{ID: "chat-2", Reason: "busy", Detail: hostile},
		protocol.TurnStarted{MessageID: "chat-3", ThreadID: hostile, Resume: true},
		protocol.ThreadChanged{Reason: protocol.ThreadReset, Previous: hostile, Detail: hostile},
		protocol.QuotaBlocked{MessageID: "chat-4", Message: hostile},
		protocol.AuthRequired{Message: hostile},
		protocol.ContextExhausted{ThreadID: hostile},
		protocol.Warning{Message: hostile},
		protocol.NetworkWait{MessageID: "chat-5", Waiting: true, Since: time.Now(), Message: hostile},
		protocol.Error{Command: "send", Message: hostile},
	}
	for _, m := range events {
		out := humanEvent(m)
		checkTerminalSafe(t, string(m.Kind()), out, false)
		if !strings.Contains(out, "boom fake") {
			t.Errorf("%s: the text is not shown: %q", m.Kind(), out)
		}
	}
	if got, want := humanEvent(events[0]), "\n  answer boom\n  fake\\x08\\x08\n  next \\u202eevil\\u2066\\u200f\\u061c"; !strings.HasSuffix(got, want) {
		t.Errorf("reply: %q, want it to end with %q", got, want)
	}
}

// TestEventJSONEscapesControls: with --json the texts are kept whole, as
// JSON escapes them: no control character (ESC, CR, BEL, a line break) and
// no U+2028/U+2029 reaches the terminal raw, and a JSON decoder reads the
// text back as it was.
func TestEventJSONEscapesControls(t *testing.T) {
	text := hostile + "\u2028\u2029"
	s := eventJSON(protocol.TurnFinished{MessageID: "chat-1", Status: protocol.TurnCompleted, Reply: text})
	for _, r := range s {
		if r < 0x20 || r == '\u2028' || r == '\u2029' {
			t.Fatalf("%U raw in %q", r, s)
		}
	}
	var back struct{ Reply string }
	if err := json.Unmarshal([]byte(s), &back); err != nil || back.Reply != text {
		t.Fatalf("decoded %q, %v; want %q", back.Reply, err, text)
	}
}
