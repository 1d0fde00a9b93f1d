package orchestrator

import (
	"fmt"
	"strings"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// NoAnswer is the reply delivered for a completed turn whose final answer
// was empty: whoever asked learns that the turn ended, not nothing.
const NoAnswer = "(no answer: the turn completed without a final answer)"

// maxAgentReply bounds the reply an agent receives, in bytes: the reply is
// the prompt of the asker's next turn, and a longer one would crowd its
// context window. The whole answer stays in the outcome of the answered
// message (`batty inbox <agent> --full <id>`).
const maxAgentReply = 64 << 10

// answerFor decides the reply owed for message m, whose final outcome o
// (o.Agent answered) has just been decided; ok is false when none is owed.
// The rule:
//   - a reply (m.InReplyTo set) is owed nothing: its own answer goes back
//     to no one, so two agents can never ping-pong;
//   - the human and an agent of the team (isAgent) are owed the answer
//     of a completed turn, and word of a message that ended otherwise
//     (failed, timed out, rejected) and why, so that they do not wait for
//     an answer that never comes;
//   - an agent is owed word that the user cancelled its message
//     (cancelled); the human, who cancelled it, is not;
//   - an empty answer is NoAnswer.
//
// The reply comes from o.Agent, in reply to m.ID, under no id (see
// inbox.Box.DeliverReply). It is a pure function.
func answerFor(m inbox.Message, o inbox.Outcome, isAgent func(string) bool) (reply inbox.Message, ok bool) {
	if m.InReplyTo != "" {
		return inbox.Message{}, false
	}
	human := m.From == team.Human
	if !human && !isAgent(m.From) {
		return inbox.Message{}, false
	}
	var body string
	switch {
	case o.Status == inbox.StatusCompleted && strings.TrimSpace(o.Reply) == "":
		body = NoAnswer
	case o.Status == inbox.StatusCompleted:
		body = o.Reply
	case o.Status == inbox.StatusCancelled && human:
		// The human cancelled it.
		return inbox.Message{}, false
	case o.Status == inbox.StatusCancelled:
		body = cancelNote(m.ID, o.Agent)
	default:
		body = failureNote(m.ID, o)
	}
	if !human {
		body = clipAgentReply(body, m.ID, o.Agent)
	}
	return inbox.Message{From: o.Agent, To: m.From, Body: body, InReplyTo: m.ID}, true
}

// failureNote tells the sender of message id that its turn ended without
// an answer, and why. It is a pure function.
func failureNote(id string, o inbox.Outcome) string {
	what := o.Status
	if o.Failure != "" {
		what += " (" + o.Failure + ")"
	}
	why := strings.TrimSpace(o.Error)
	if why == "" {
		why = "no error given"
	}
	return fmt.Sprintf("[batty] your message %s to %s ended %s without an answer: %s\n"+
		"It will not be tried again; send a new message if it is still needed.",
		id, o.Agent, what, textclip.Bytes(why, 4096, textclip.Truncated))
}

// cancelNote tells the sender of message id, which the user cancelled
// (`batty cancel`), that it will get no answer. It is a pure function.
func cancelNote(id, agent string) string {
	return fmt.Sprintf("[batty] your message %s to %s was cancelled by the user: it will not run and gets no answer.\n"+
		"Do not send it again unless you are asked to.", id, agent)
}

// clipAgentReply cuts a reply for an agent to maxAgentReply bytes (at a
// UTF-8 boundary), saying how much is missing and where the whole answer
// is. It is a pure function.
func clipAgentReply(body, id, agent string) string {
	if len(body) <= maxAgentReply {
		return body
	}
	note := fmt.Sprintf("\n\n[batty: answer cut after %%d of %d bytes; the whole answer: `batty inbox %s --full %s`]", len(body), agent, id)
	head := textclip.Bytes(body, maxAgentReply-len(note)-16, "")
	return head + fmt.Sprintf(note, len(head))
}

// isAgent reports whether name is an agent of the team.
func (d *Daemon) isAgent(name string) bool {
	_, ok := d.byName[name]
	return ok
}

// replyBox is the box a reply to name goes to: the human's, or the agent's
// own (never a role queue: the asker is one agent).
func (d *Daemon) replyBox(name string) (*inbox.Box, error) {
	if name == team.Human {
		return d.humanBox, nil
	}
	if a, ok := d.byName[name]; ok {
		return a.box, nil
	}
	return nil, fmt.Errorf("no box for %q", name)
}

// isReply reports whether m answers a message that its recipient (this
// agent) sent to m's sender: such a reply passes talks_to, whichever way
// talks_to points, since the recipient asked. A message that only claims
// to be a reply does not.
func (a *agent) isReply(m inbox.Message) bool {
	if m.InReplyTo == "" {
		return false
	}
	sender := a.crew.boxOf(m.From)
	if sender == nil {
		return false
	}
	asked, _, err := sender.Get(m.InReplyTo)
	return err == nil && asked.From == a.def.Name
}
