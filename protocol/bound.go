package protocol

import (
	"strings"

	"github.com/battyhq/batty/textclip"
)

// Limits of the text an event carries. Whatever a worker prints, an event
// bounded by Bound encodes far below DefaultMaxFrameSize, so a shim can
// always send it.
const (
	// MaxText is the largest free-text field of an event (errors,
	// warnings, details, ids).
	MaxText = 64 << 10
	// MaxReplyChunk is the largest ReplyChunk.Data.
	MaxReplyChunk = 1 << 20
	// MaxReply bounds a whole reply, the sum of its ReplyChunk pieces
	// (64 MiB, the longest line the shim reads from codex): a shim cuts a
	// longer reply there, and the parent's client refuses pieces past it.
	MaxReply = 64 << 20
	// MaxCommands is the most commands a TurnFinished carries (the last
	// ones), MaxCommandLine the longest command line of one and
	// MaxCommandOutput the tail of its output kept.
	MaxCommands      = 200
	MaxCommandLine   = 4 << 10
	MaxCommandOutput = 8 << 10
	// maxRecallNotes is the most notes a RecallAnswer keeps.
	maxRecallNotes = 16
	// maxRateLimitWindows is the most windows a RateLimits event keeps.
	maxRateLimitWindows = 8
)

// Bound returns m with every text field whose size depends on what a worker
// printed clipped to its limit (see the Max constants): error and warning
// messages, details and thread ids. Fields within their limits are
// unchanged, and so are messages without such fields. TurnFinished.Reply,
// which travels in ReplyChunk pieces and is empty on the wire, is cleared.
// It is a pure function.
func Bound(m Message) Message {
	c := func(s string) string { return textclip.Bytes(s, MaxText, textclip.Truncated) }
	switch e := m.(type) {
	case Hello:
		e.ThreadID = c(e.ThreadID)
		return e
	case Rejected:
		e.Detail = c(e.Detail)
		return e
	case TurnStarted:
		e.ThreadID = c(e.ThreadID)
		return e
	case ThreadChanged:
		e.ThreadID, e.Previous, e.Detail = c(e.ThreadID), c(e.Previous), c(e.Detail)
		return e
	case StateChanged:
		e.Reason = c(e.Reason)
		return e
	case RecallAnswer:
		// The daemon's own words, bounded as the answer file is.
		e.ID, e.Output, e.Error = c(e.ID), c(e.Output), c(e.Error)
		e.Notes = e.Notes[:min(len(e.Notes), maxRecallNotes)]
		for i := range e.Notes {
			e.Notes[i] = c(e.Notes[i])
		}
		return e
	case TurnFinished:
		e.ThreadID, e.Error, e.Reply = c(e.ThreadID), c(e.Error), ""
		e.Commands = BoundCommands(e.Commands)
		return e
	case ReplyChunk:
		e.MessageID = c(e.MessageID)
		if len(e.Data) > MaxReplyChunk {
			e.Data = textclip.Bytes(e.Data, MaxReplyChunk, "")
		}
		return e
	case QuotaBlocked:
		e.Message = c(e.Message)
		return e
	case AuthRequired:
		e.Message = c(e.Message)
		return e
	case ContextExhausted:
		e.ThreadID, e.Message = c(e.ThreadID), c(e.Message)
		return e
	case ContextPressure:
		e.ThreadID = c(e.ThreadID)
		return e
	case Warning:
		e.Message = c(e.Message)
		return e
	case Error:
		e.Message = c(e.Message)
		return e
	case NetworkWait:
		e.Message = c(e.Message)
		return e
	case RateLimits:
		if len(e.Windows) > maxRateLimitWindows {
			e.Windows = e.Windows[:maxRateLimitWindows]
		}
		for i := range e.Windows {
			e.Windows[i].Name = c(e.Windows[i].Name)
		}
		return e
	}
	return m
}

// BoundCommands is cmds within a TurnFinished's limits: the last
// MaxCommands of them, each command line clipped to MaxCommandLine and its
// output to its last MaxCommandOutput bytes, all valid UTF-8. cmds is not
// changed. It is a pure function.
func BoundCommands(cmds []Command) []Command {
	if len(cmds) == 0 {
		return nil
	}
	cmds = cmds[max(len(cmds)-MaxCommands, 0):]
	out := make([]Command, len(cmds))
	for i, c := range cmds {
		out[i] = Command{
			Command:  textclip.Bytes(strings.ToValidUTF8(c.Command, "\uFFFD"), MaxCommandLine, textclip.Truncated),
			Output:   textclip.Tail(strings.ToValidUTF8(c.Output, "\uFFFD"), MaxCommandOutput, "… "),
			ExitCode: c.ExitCode,
		}
	}
	return out
}
