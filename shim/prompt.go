package shim

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
)

// HumanSender is the sender name of messages typed by a person.
const HumanSender = "human"

// The lines around a handoff in a prompt.
const (
	handoffOpen  = "--- batty handoff: this is a fresh thread; your previous thread was archived because its context window was full. What batty kept of it follows; the message to work on comes after it ---\n"
	handoffClose = "--- end of handoff ---\n\n"
)

// FormatPrompt renders what codex reads on stdin for one message: a
// handoff first when the message opens a fresh thread after a handoff
// (marked as such), then a short header naming the sender and how to
// answer, then the body verbatim.
func FormatPrompt(m protocol.SendMessage) string {
	var b strings.Builder
	if m.Handoff != "" {
		// The handoff gives way to the body: clipped so that the prompt
		// stays within what codex takes for one turn.
		budget := codex.MaxInputChars - promptHeaderMax - utf8.RuneCountInString(m.Body) - len(handoffOpen) - len(handoffClose) - 1
		if budget > 0 {
			h := protocol.Clip(m.Handoff, budget)
			b.WriteString(handoffOpen)
			b.WriteString(h)
			if !strings.HasSuffix(h, "\n") {
				b.WriteString("\n")
			}
			b.WriteString(handoffClose)
		}
	}
	from := m.From
	if from == "" {
		from = HumanSender
	}
	fmt.Fprintf(&b, "--- batty message %s from %s", m.ID, from)
	switch {
	case m.RetryNote != "":
		// The orchestrator knows why the earlier attempt ended: say that,
		// not that it was cut off.
		fmt.Fprintf(&b, " (%s)", clipRunes(oneLine(m.RetryNote), maxRetryNote))
	case m.Attempt > 1:
		fmt.Fprintf(&b, " (redelivered, attempt %d: an earlier delivery was cut off; check what is already done before repeating work)", m.Attempt)
	}
	b.WriteString(" ---\n")
	if from == HumanSender {
		b.WriteString("Your final answer of this turn is delivered to human.\n")
	} else {
		fmt.Fprintf(&b, "To answer %s, run: batty send %s \"<your reply>\"\n", from, from)
	}
	b.WriteString("\n")
	b.WriteString(m.Body)
	if !strings.HasSuffix(m.Body, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// maxRetryNote bounds, in characters, the retry note a header shows, so
// that the header stays within promptHeaderMax.
const maxRetryNote = 480

// clipRunes returns s cut to at most n characters, ending in "…" when cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// oneLine folds every run of white space in s, line breaks included, into
// one space: a header stays one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
