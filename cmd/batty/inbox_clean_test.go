package main

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
)

// TestInboxCleansOutsideText: `batty inbox` prints bodies, replies and
// errors written by agents and models, and the fields of message files an
// agent may have written by hand: none of it reaches the terminal with an
// escape sequence, a CR, a control or an invisible format character (zero
// width space, byte order mark, tag characters, bidirectional controls).
// Bodies keep their lines; the rest is one line each.
func TestInboxCleansOutsideText(t *testing.T) {
	const sneaky = "a\u200bb\ufeffc\U000e0041\u202ed"
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	printHumanMessage(&b, listedMessage{Box: "human", State: msgStateNew, Message: inbox.Message{
		ID: "id" + hostile, From: "eng" + hostile, InReplyTo: "re" + hostile, CreatedAt: at,
		Body: "hello " + hostile + "\nsecond line " + sneaky}})
	human := b.String()
	checkTerminalSafe(t, "the human's inbox", human, false)
	if want := "  second line " + `a\u200bb\ufeffc\U000e0041\u202ed` + "\n"; !strings.Contains(human, want) {
		t.Errorf("the body's lines are not kept, or the invisible characters not shown; want %q in\n%s", want, human)
	}
	if strings.Count(human, "\n") != 6 { // header, four body lines (a CR breaks a line), blank
		t.Errorf("outside text broke the header into lines:\n%s", human)
	}

	b.Reset()
	printAgentMessage(&b, listedMessage{Box: "eng", State: msgStateDone, Message: inbox.Message{
		ID: "id" + hostile, From: "m" + hostile, To: "x" + hostile, InReplyTo: "re" + hostile, CreatedAt: at,
		Body: hostile + sneaky,
		Outcome: &inbox.Outcome{Status: "failed" + hostile, Failure: "f" + hostile, Agent: "ag" + hostile,
			Error: "error " + hostile + sneaky, Reply: "reply " + sneaky + "\nmore", FinishedAt: at}}})
	agent := b.String()
	checkTerminalSafe(t, "an agent's inbox", agent, false)
	for _, want := range []string{"  message: boom …", `  reply:   reply a\u200bb\ufeffc\U000e0041\u202ed …`} {
		if !strings.Contains(agent, want) {
			t.Errorf("want %q in\n%s", want, agent)
		}
	}
	if lines := strings.Count(agent, "\n"); lines != 8 {
		t.Errorf("%d lines, want 8 (header, message, re, agent, error, reply, tokens, blank):\n%s", lines, agent)
	}
}
