package shim

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
)

// A handoff opens the prompt, marked as one, before the message's header;
// the header keeps the retry note the orchestrator gave.
func TestFormatPromptHandoff(t *testing.T) {
	for _, c := range []struct {
		name      string
		m         protocol.SendMessage
		want, not []string
	}{
		{"no handoff", protocol.SendMessage{ID: "m1", From: "human", Body: "hi", Attempt: 1},
			[]string{"--- batty message m1 from human ---\n"}, []string{"handoff"}},
		{"context retry on a fresh thread", protocol.SendMessage{ID: "m1", From: "lead", Body: "hi", Attempt: 3,
			RetryNote: "retried on a fresh thread, attempt 3: the earlier attempt ran out of context window", Handoff: "You are eng."},
			[]string{"--- batty handoff: this is a fresh thread", "You are eng.\n--- end of handoff ---\n\n--- batty message m1 from lead (retried on a fresh thread, attempt 3: the earlier attempt ran out of context window) ---"},
			[]string{"cut off"}},
		{"pressure handoff", protocol.SendMessage{ID: "m2", From: "human", Body: "next", Attempt: 1, Handoff: "You are eng."},
			[]string{"--- batty handoff: this is a fresh thread", "--- batty message m2 from human ---"}, []string{"retried", "redelivered"}},
	} {
		got := FormatPrompt(c.m)
		if c.m.Handoff != "" && !strings.HasPrefix(got, "--- batty handoff") {
			t.Errorf("%s: prompt does not open with the handoff:\n%s", c.name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: prompt lacks %q:\n%s", c.name, w, got)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: prompt says %q:\n%s", c.name, n, got)
			}
		}
	}
}

// A handoff gives way to a long body: the prompt stays within codex's limit.
func TestHandoffNeverPushesPromptOverLimit(t *testing.T) {
	m := protocol.SendMessage{ID: "m", From: "human", Body: strings.Repeat("b", codex.MaxBodyChars), Attempt: 3,
		RetryNote: strings.Repeat("n", 2000), Handoff: strings.Repeat("h", 50000)}
	if n := utf8.RuneCountInString(FormatPrompt(m)); n > codex.MaxInputChars {
		t.Fatalf("prompt of %d characters, codex takes %d", n, codex.MaxInputChars)
	}
	m.Body = strings.Repeat("b", codex.MaxBodyChars-60000)
	if !strings.Contains(FormatPrompt(m), strings.Repeat("h", 50000)) {
		t.Fatal("a handoff that fits was clipped")
	}
}
