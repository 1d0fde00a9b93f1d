package inbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// replySuffix ends the id of a reply: ReplyID(id) = id + replySuffix when
// that fits MaxIDLen.
const replySuffix = ".reply"

// ReplyID is the id of the reply to message id: the same whoever computes
// it and however often, so that delivering a reply again (after a crash, a
// failed write, a message run twice) finds the first copy instead of
// adding a second. It is id + ".reply", which sorts right after id; an id
// too long to take the suffix keeps its first bytes and a digest of the
// whole. It is a pure
// function; for a valid id it returns a valid id.
func ReplyID(id string) string {
	if len(id)+len(replySuffix) <= MaxIDLen {
		return id + replySuffix
	}
	sum := sha256.Sum256([]byte(id))
	digest := "-" + hex.EncodeToString(sum[:8])
	return id[:MaxIDLen-len(digest)-len(replySuffix)] + digest + replySuffix
}

// DeliverReply delivers reply r (r.InReplyTo set, r.ID empty) at most once
// per answered message: under ReplyID(r.InReplyTo). A copy already in the
// box from the same sender for the same message counts as delivered: it
// returns that copy with delivered false. An id taken by anything else (a
// file an agent planted under that name) does not swallow the reply: it is
// delivered under a fresh id. The box's backlog limit does not apply: a
// reply is owed to whoever asked, who is waiting for it. It blocks for the
// fsyncs; safe for concurrent use.
func (b *Box) DeliverReply(r Message) (Message, bool, error) {
	if r.InReplyTo == "" || r.ID != "" {
		return Message{}, false, fmt.Errorf("deliver reply to %s: a reply needs in_reply_to and no id", b.Dir)
	}
	// The same box (its index too, when tracked), without the limit.
	unlimited := &Box{Name: b.Name, Dir: b.Dir, store: b.store}
	unlimited.idx.Store(b.idx.Load())
	r.ID = ReplyID(r.InReplyTo)
	m, err := unlimited.Deliver(r)
	if err == nil {
		return m, true, nil
	}
	if !errors.Is(err, ErrExists) {
		return Message{}, false, err
	}
	got, _, gerr := b.Get(r.ID)
	if gerr == nil && got.InReplyTo == r.InReplyTo && got.From == r.From {
		return got, false, nil
	}
	r.ID = ""
	m, err = unlimited.Deliver(r)
	return m, err == nil, err
}
