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

// A notice is a line of its own after the header, before the body: one
// line, clipped; without one the prompt is as it was.
func TestFormatPromptNotice(t *testing.T) {
	m := protocol.SendMessage{ID: "m1", From: "human", Body: "go on", Attempt: 2,
		Notice: "your worktree is still merging main:\nconflict markers are left in shared.txt"}
	want := "--- batty message m1 from human (redelivered, attempt 2: an earlier delivery was cut off; check what is already done before repeating work) ---\n" +
		"Your final answer of this turn is your reply: batty delivers it to human. Do not batty send it.\n" +
		"[batty] your worktree is still merging main: conflict markers are left in shared.txt\n\ngo on\n"
	if got := FormatPrompt(m); got != want {
		t.Fatalf("prompt:\n%s\nwant:\n%s", got, want)
	}
	m.Notice = strings.Repeat("é", 10*MaxNotice)
	line := strings.Split(FormatPrompt(m), "\n")[2]
	if !strings.HasPrefix(line, "[batty] ") || utf8.RuneCountInString(line) != len("[batty] ")+MaxNotice {
		t.Fatalf("a long notice's line has %d characters", utf8.RuneCountInString(line))
	}
	m.Notice = ""
	if got := FormatPrompt(m); strings.Contains(got, "[batty]") {
		t.Fatalf("a prompt without a notice:\n%s", got)
	}
}
