package protocol

import (
	"strings"

	"github.com/battyhq/batty/textclip"
)

// Limits of the text an event carries. Whatever a worker prints, an event
// bounded by Bound encodes far below DefaultMaxFrameSize, so a shim can
// always send it.
const (
	// MaxReplyPreview is the largest TurnFinished.Reply; a longer reply
	// travels in a file (TurnFinished.ReplyFile).
	MaxReplyPreview = 64 << 10
	// MaxText is the largest free-text field of an event (errors,
	// warnings, details, ids).
	MaxText = 64 << 10
	// MaxReplyChunk is the largest ReplyChunk.Data.
	MaxReplyChunk = 1 << 20
	// maxRateLimitWindows is the most windows a RateLimits event keeps.
	maxRateLimitWindows = 8
)

// Bound returns m with every text field whose size depends on what a worker
// printed clipped to its limit (see the Max constants): reply previews, error
// and warning messages, details and thread ids. Fields
// within their limits are unchanged, and so are messages without such fields.
// TurnFinished.Reply is clipped to MaxReplyPreview without a mark (it stays a
// prefix of the reply); a sender that must keep the whole reply stores it in
// a file first and sets ReplyFile and ReplySize. It is a pure function.
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
	case TurnFinished:
		e.ThreadID, e.Error, e.ReplyFile = c(e.ThreadID), c(e.Error), c(e.ReplyFile)
		if len(e.Reply) > MaxReplyPreview {
			if e.ReplySize < int64(len(e.Reply)) {
				e.ReplySize = int64(len(e.Reply))
			}
			e.Reply = textclip.Bytes(e.Reply, MaxReplyPreview, "")
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

// MaxPiecedReply bounds a reply gathered from ReplyChunk events (64 MiB):
// pieces past it are dropped, and the reply is then not whole.
const MaxPiecedReply = 64 << 20

// ReplyPieces gathers the ReplyChunk events of a reply on the receiving
// side (the daemon's agent, a fan-out worker). It holds the pieces of one
// message at a time: a piece of another message starts over. Not safe for
// concurrent use: the reader of one shim's events owns it.
type ReplyPieces struct {
	id  string
	buf strings.Builder
}

// Add keeps piece e (dropped when the reply would pass MaxPiecedReply).
func (p *ReplyPieces) Add(e ReplyChunk) {
	if e.MessageID != p.id {
		p.Reset()
		p.id = e.MessageID
	}
	if p.buf.Len()+len(e.Data) > MaxPiecedReply {
		return
	}
	p.buf.WriteString(e.Data)
}

// Len is how many bytes of message id's reply arrived (0 for another
// message).
func (p *ReplyPieces) Len(id string) int {
	if p.id != id {
		return 0
	}
	return p.buf.Len()
}

// Take returns the reply to message id when its pieces make size bytes
// (ok false otherwise), and forgets the pieces either way.
func (p *ReplyPieces) Take(id string, size int64) (string, bool) {
	defer p.Reset()
	if p.id != id || int64(p.buf.Len()) != size {
		return "", false
	}
	return p.buf.String(), true
}

// Reset forgets the pieces (those of an earlier shim are void).
func (p *ReplyPieces) Reset() {
	p.id = ""
	p.buf.Reset()
}
