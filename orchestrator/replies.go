package orchestrator

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/replyfile"
)

// prepareReplies makes the agent's reply directory ready for a new shim:
// .batty/replies/<agent>, created if missing, none of it a symbolic link,
// emptied of what an earlier shim left (the messages those replies belong
// to were not recorded, so they run again). When it cannot, the shim runs
// without one: a reply too long for a frame then arrives cut, with a
// warning, and the agent keeps working.
func (a *agent) prepareReplies() {
	a.replyDir = ""
	d, err := replyfile.OpenUnder(a.d.layout.Dir, true, filepath.Base(a.d.layout.RepliesDir()), a.def.Name)
	if err != nil {
		a.warn("reply directory", err)
		return
	}
	defer d.Close()
	if n, err := d.Clear(); err != nil {
		a.warn("reply directory", err)
	} else if n > 0 {
		a.log.Info("Removed replies of unrecorded turns", "count", n, "dir", d.Path())
	}
	a.replyDir = d.Path()
}

// wholeReply returns the whole reply a TurnFinished stands for, taking its
// file (replyfile.Dir.Take: read, then removed). A reply that arrived cut — the
// shim could not store it, or its file cannot be read — is its preview
// followed by a note saying how much is missing and why; the reason also
// goes to the event log.
func (a *agent) wholeReply(e protocol.TurnFinished) string {
	if e.ReplySize <= int64(len(e.Reply)) {
		return e.Reply
	}
	cut := func(why string) string {
		a.warn("reply to "+e.MessageID, fmt.Errorf("%s: only the first %d of %d bytes are kept", why, len(e.Reply), e.ReplySize))
		return e.Reply + fmt.Sprintf("\n\n[batty: reply cut after %d of %d bytes: %s]", len(e.Reply), e.ReplySize, why)
	}
	if e.ReplyFile == "" {
		// A shim on a host sent its pieces, which remoteWorker assembled
		// into Reply when they were whole.
		return cut("the shim could not store the whole reply (see its warning)")
	}
	if a.replyDir == "" {
		return cut(fmt.Sprintf("the reply file %q is not %s", e.ReplyFile, filepath.Join(a.d.layout.ReplyDir(a.def.Name), replyfile.Name(e.MessageID))))
	}
	d, err := replyfile.OpenUnder(a.d.layout.Dir, false, filepath.Base(a.d.layout.RepliesDir()), a.def.Name)
	if err != nil {
		return cut(err.Error())
	}
	defer d.Close()
	whole, err := d.Take(e.ReplyFile, e.MessageID, e.ReplySize)
	switch {
	case errors.Is(err, replyfile.ErrNotRemoved):
		a.warn("remove reply file", err)
	case err != nil:
		return cut(err.Error())
	}
	return whole
}

// removeReply removes the reply file name once its turn's outcome is
// recorded (or its message is back in the queue).
func (a *agent) removeReply(name string) {
	if name == "" {
		return
	}
	d, err := replyfile.OpenUnder(a.d.layout.Dir, false, filepath.Base(a.d.layout.RepliesDir()), a.def.Name)
	if err == nil {
		err = d.Remove(name)
		d.Close()
	}
	if err != nil {
		a.warn("remove reply file", err)
	}
}
