package shim

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/protocol"
)

// HumanSender is the sender name of messages typed by a person.
const HumanSender = "human"

// FormatPrompt renders what codex reads on stdin for one message: a short
// header naming the sender and how to answer, then the body verbatim.
func FormatPrompt(m protocol.SendMessage) string {
	var b strings.Builder
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
