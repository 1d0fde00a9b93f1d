package shim

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// The lines around a handoff in a prompt.
const (
	handoffOpen  = "--- batty handoff: this is a fresh thread; your previous thread was archived because its context window was full. What batty kept of it follows; the message to work on comes after it ---\n"
	handoffClose = "--- end of handoff ---\n\n"
)

// FormatPrompt renders what codex reads on stdin for one message: a
// handoff first when the message opens a fresh thread after a handoff
// (marked as such), then a short header naming the message, its sender,
// the message it replies to if it is a reply, and where the final answer
// of the turn goes, then the body verbatim.
//
// The header's first line is
//
//	--- batty message <id> from <sender>[, reply to <id>][ (<note>)] ---
//
// and the next line says where the turn's final answer goes: to the sender
// (it is the reply), or, for a reply, to no one. A notice (batty's
// reminder of the agent's workspace) follows on a line of its own,
// "[batty] <notice>", one line of at most MaxNotice characters; the retry
// note gives way to it.
func FormatPrompt(m protocol.SendMessage) string {
	var b strings.Builder
	if m.Handoff != "" {
		// The handoff gives way to the body: clipped so that the prompt
		// stays within what codex takes for one turn.
		budget := codex.MaxInputChars - codex.PromptHeaderMax - utf8.RuneCountInString(m.Body) - len(handoffOpen) - len(handoffClose) - 1
		if budget > 0 {
			h := textclip.Bytes(m.Handoff, budget, textclip.Truncated)
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
		from = team.Human
	}
	replyTo := textclip.Runes(oneLine(m.InReplyTo), maxReplyToID, textclip.Ellipsis)
	fmt.Fprintf(&b, "--- batty message %s from %s", m.ID, from)
	if replyTo != "" {
		fmt.Fprintf(&b, ", reply to %s", replyTo)
	}
	notice := ""
	retryNote := maxRetryNote
	if m.Notice != "" {
		notice = noticePrefix + textclip.Runes(oneLine(m.Notice), MaxNotice, textclip.Ellipsis) + "\n"
		// The header stays within codex.PromptHeaderMax.
		retryNote -= utf8.RuneCountInString(notice)
	}
	switch {
	case m.RetryNote != "":
		// The orchestrator knows why the earlier attempt ended: say that,
		// not that it was cut off.
		fmt.Fprintf(&b, " (%s)", textclip.Runes(oneLine(m.RetryNote), retryNote, textclip.Ellipsis))
	case m.Attempt > 1:
		fmt.Fprintf(&b, " (redelivered, attempt %d: an earlier delivery was cut off; check what is already done before repeating work)", m.Attempt)
	}
	b.WriteString(" ---\n")
	switch {
	case replyTo != "":
		fmt.Fprintf(&b, "This is %s's reply to your message. Your final answer of this turn goes to no one; to go on with %s, send a new message with batty send.\n", from, from)
	default:
		fmt.Fprintf(&b, "Your final answer of this turn is your reply: batty delivers it to %s. Do not batty send it.\n", from)
	}
	b.WriteString(notice)
	b.WriteString("\n")
	b.WriteString(m.Body)
	if !strings.HasSuffix(m.Body, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// maxRetryNote and maxReplyToID bound, in characters, the retry note and
// the replied-to id a header shows, so that the header stays within
// codex.PromptHeaderMax (with a notice, the retry note is shorter by the
// notice's line).
const (
	maxRetryNote = 460
	maxReplyToID = 128
)

// MaxNotice bounds, in characters, the notice a prompt shows (a longer one
// is clipped).
const MaxNotice = 300

// noticePrefix opens the line of a notice.
const noticePrefix = "[batty] "

// oneLine folds every run of white space in s, line breaks included, into
// one space: a header stays one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
