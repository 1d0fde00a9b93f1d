package shim

import (
	"fmt"
	"strings"

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
	if m.Attempt > 1 {
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
