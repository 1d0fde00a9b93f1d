package inbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// filePerm is the permission of message files.
const filePerm = 0o600

// writeNew creates sub/<id>.json with m, durably, via tmp/; it never
// overwrites (fs.ErrExist).
func (b *Box) writeNew(sub string, m Message) error {
	return b.write(sub, m, true)
}

// write stores m as sub/<id>.json, durably, via tmp/: exclusively (it never
// overwrites: fs.ErrExist), or replacing what is there.
func (b *Box) write(sub string, m Message, exclusive bool) error {
	if sub == dirNew {
		defer b.note(m.ID + ".json")
	}
	data, err := Encode(m)
	if err != nil {
		return err
	}
	ds, err := b.open(false, dirTmp, sub)
	if err != nil {
		return err
	}
	defer ds.close()
	tmp, d := ds.subs[0], ds.subs[1]
	write := func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
	if exclusive {
		return d.CreateVia(tmp, m.ID+".json", filePerm, write)
	}
	return d.WriteVia(tmp, m.ID+".json", filePerm, write)
}

// Deliver adds m to the box's pending messages (new/) and returns it as
// stored. It fills an empty ID with NewID() and a zero CreatedAt with the
// current time, and stores times in UTC. m must be valid (see
// Message.Validate) and have no Outcome.
//
// The message is written to tmp/, fsynced, hard-linked into new/ and new/ is
// fsynced: when Deliver returns nil the message survives a crash, and
// readers never see a partial file. A message to the human whose body is
// longer than MaxInlineBody keeps its whole body in texts/<id>.body, written
// durably first, and the first PreviewLen bytes in Body (BodyFile and
// BodySize say so; Deliver sets them, the caller must not); any other body
// longer than MaxBodyLen is refused. Deliver never overwrites: a caller-chosen
// ID already in new/, cur/ or done/ gives ErrExists (a generated ID that
// collides is replaced by a fresh one). It is safe for concurrent use by any
// number of goroutines and processes, and may be called by anyone (batty
// send, the daemon). It blocks for the fsyncs.
//
// With b.Limit > 0, Deliver holds an exclusive lock (flock(2)) on the box
// directory while it counts the backlog and writes, blocking while another
// Deliver or a MoveTo into the box holds it, so that racing senders never
// push the backlog past the limit: a box that holds Limit or more messages
// in new/ and cur/ gives a *FullError, and nothing is written.
func (b *Box) Deliver(m Message) (Message, error) {
	if m.Outcome != nil {
		return Message{}, fmt.Errorf("deliver to %s: a pending message cannot have an outcome", b.Dir)
	}
	if m.BodyFile != "" || m.BodySize != 0 {
		return Message{}, fmt.Errorf("deliver to %s: body_file and body_size are set by Deliver, not by its caller", b.Dir)
	}
	whole := m.Body
	spill := m.To == team.Human && len(whole) > MaxInlineBody
	if spill {
		if !utf8.ValidString(whole) {
			return Message{}, fmt.Errorf("deliver to %s: body is not valid UTF-8", b.Dir)
		}
		m.Body, m.BodySize = preview(whole), int64(len(whole))
	}
	if b.Limit > 0 {
		unlock, err := b.lockBacklog(true)
		if err != nil {
			return Message{}, fmt.Errorf("deliver to %s: %w", b.Dir, err)
		}
		defer unlock()
	}
	generated := m.ID == ""
	if m.CreatedAt.IsZero() && !generated {
		m.CreatedAt = time.Now()
	}
	for try := 0; ; try++ {
		if generated {
			id, now := NewID()
			m.ID = id
			if m.CreatedAt.IsZero() {
				m.CreatedAt = now
			}
		}
		normalize(&m)
		if spill {
			m.BodyFile = textFile(m.ID, bodyExt)
		}
		if err := m.Validate(); err != nil {
			return Message{}, fmt.Errorf("deliver %s to %s: %w", trim(m.ID), b.Dir, err)
		}
		// An id in use is refused before anything is written. writeNew
		// finds one in new/, but a text file must not replace the text of
		// a message already there.
		subs := []string{dirCur, dirDone}
		if spill {
			subs = append(subs, dirNew)
		}
		if !generated || spill {
			for _, sub := range subs {
				ok, err := b.exists(sub, m.ID)
				if err != nil {
					return Message{}, fmt.Errorf("deliver %s to %s: %w", m.ID, b.Dir, err)
				}
				if ok {
					return Message{}, fmt.Errorf("deliver %s to %s: %w (in %s/)", m.ID, b.Dir, ErrExists, sub)
				}
			}
		}
		if spill {
			// The whole body first: the message never names a text file
			// that is not there.
			if err := b.writeText(m.ID, bodyExt, whole); err != nil {
				return Message{}, fmt.Errorf("deliver %s to %s: %w", m.ID, b.Dir, err)
			}
		}
		err := b.writeNew(dirNew, m)
		if err == nil {
			return m, nil
		}
		if spill && !errors.Is(err, fs.ErrExist) {
			b.removeText(m.ID, bodyExt)
		}
		if errors.Is(err, fs.ErrExist) {
			if generated && try < 3 {
				continue
			}
			return Message{}, fmt.Errorf("deliver %s to %s: %w (in new/)", m.ID, b.Dir, ErrExists)
		}
		return Message{}, fmt.Errorf("deliver %s to %s: %w", m.ID, b.Dir, err)
	}
}

// Claim moves the pending message id from new/ to cur/, incrementing its
// Attempt, and returns it: the caller then delivers it and records the
// result with Complete (or puts it back with Requeue). The copy in cur/ is
// created exclusively and made durable before the file in new/ is removed,
// so a crash in between leaves the message in both, which Claim and Recover
// resolve in favour of cur/.
//
// Errors: ErrNotPending if the message is already in cur/ or done/ (then also
// ErrAlreadyDone), so claiming twice never delivers twice; ErrNotFound if the
// box has no such message; a *BadFileError if the file does not decode (it is
// moved to bad/). After any other error the message may be in cur/; Recover
// returns it. Only the daemon claims. Safe for concurrent use: of concurrent
// Claims of one message exactly one succeeds. It blocks for the fsyncs.
func (b *Box) Claim(id string) (Message, error) {
	fail := func(err error) (Message, error) {
		return Message{}, fmt.Errorf("claim %s in %s: %w", trim(id), b.Dir, err)
	}
	if !ValidID(id) {
		return fail(fmt.Errorf("invalid id: %w", ErrNotFound))
	}
	m, err := b.read(dirNew, id, true)
	if errors.Is(err, fs.ErrNotExist) {
		if ok, err := b.exists(dirDone, id); err != nil || ok {
			return fail(orErr(err, fmt.Errorf("%w: %w", ErrNotPending, ErrAlreadyDone)))
		}
		if ok, err := b.exists(dirCur, id); err != nil || ok {
			return fail(orErr(err, ErrNotPending))
		}
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	// A copy in done/ (a redelivery raced a Complete, say) means the
	// message is finished: drop the stale pending copy.
	if ok, err := b.exists(dirDone, id); err != nil || ok {
		if err == nil {
			err = b.remove(dirNew, id)
		}
		return fail(orErr(err, fmt.Errorf("%w: %w", ErrNotPending, ErrAlreadyDone)))
	}
	m.Attempt = min(m.Attempt+1, MaxAttempt)
	m.Outcome = nil
	if err := b.writeNew(dirCur, m); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Claimed already (an earlier Claim crashed, or a concurrent
			// one won): finish its job.
			return fail(orErr(b.remove(dirNew, id), ErrNotPending))
		}
		return fail(err)
	}
	if err := b.remove(dirNew, id); err != nil {
		return fail(err)
	}
	return m, nil
}

// orErr returns err if it is not nil, otherwise alt.
func orErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// Complete records the outcome of the in-flight message id: it writes
// done/<id>.json (the message with o as its Outcome) exclusively and
// durably, then removes cur/<id>.json, and returns the message as recorded.
// A zero o.FinishedAt is set to the current time. A Reply longer than
// MaxReplyLen is kept whole in texts/<id>.reply, written durably first, and
// its first PreviewLen bytes stay in the record (ReplyFile and ReplySize say
// so; Complete sets them, the caller must not). An Error longer than
// MaxErrorLen is truncated (at a UTF-8 boundary, ending in "… [truncated]"),
// so that an outcome is never lost to its size. o must otherwise be valid
// (see Outcome.Validate).
//
// The outcome is recorded exactly once: if done/<id>.json exists already,
// Complete leaves it as it is, still removes cur/<id>.json, and returns the
// recorded message with ErrAlreadyDone. Other errors: ErrNotInFlight if the
// message is still in new/, ErrNotFound if the box has no such message, a
// *BadFileError if the file in cur/ does not decode (it is moved to bad/).
// Only the daemon completes. Safe for concurrent use; it blocks for the
// fsyncs.
func (b *Box) Complete(id string, o Outcome) (Message, error) {
	fail := func(err error) (Message, error) {
		return Message{}, fmt.Errorf("complete %s in %s: %w", trim(id), b.Dir, err)
	}
	if !ValidID(id) {
		return fail(fmt.Errorf("invalid id: %w", ErrNotFound))
	}
	if o.FinishedAt.IsZero() {
		o.FinishedAt = time.Now()
	}
	if o.ReplyFile != "" || o.ReplySize != 0 {
		return fail(errors.New("outcome: reply_file and reply_size are set by Complete, not by its caller"))
	}
	whole := o.Reply
	spill := len(whole) > MaxReplyLen
	if spill {
		if !utf8.ValidString(whole) {
			return fail(errors.New("outcome: reply is not valid UTF-8"))
		}
		o.Reply, o.ReplyFile, o.ReplySize = preview(whole), textFile(id, replyExt), int64(len(whole))
	}
	o.Error = textclip.Bytes(o.Error, MaxErrorLen, textclip.Truncated)
	if err := o.Validate(); err != nil {
		return fail(fmt.Errorf("outcome: %w", err))
	}
	alreadyDone := func() (Message, error) {
		if err := b.remove(dirCur, id); err != nil {
			return fail(err)
		}
		done, err := b.read(dirDone, id, false)
		if err != nil {
			return fail(err)
		}
		return done, fmt.Errorf("complete %s in %s: %w", id, b.Dir, ErrAlreadyDone)
	}
	m, err := b.read(dirCur, id, true)
	if errors.Is(err, fs.ErrNotExist) {
		if ok, err := b.exists(dirDone, id); err != nil || ok {
			if err != nil {
				return fail(err)
			}
			return alreadyDone()
		}
		if ok, err := b.exists(dirNew, id); err != nil || ok {
			return fail(orErr(err, ErrNotInFlight))
		}
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	m.Outcome = &o
	if spill {
		// The whole reply first, and never over the text of an outcome
		// already recorded.
		if ok, err := b.exists(dirDone, id); err != nil || ok {
			if err != nil {
				return fail(err)
			}
			return alreadyDone()
		}
		if err := b.writeText(id, replyExt, whole); err != nil {
			return fail(err)
		}
	}
	if err := b.writeNew(dirDone, m); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return alreadyDone()
		}
		return fail(err)
	}
	if err := b.remove(dirCur, id); err != nil {
		return fail(err)
	}
	normalize(&m)
	return m, nil
}

// Requeue puts the in-flight message id back into new/, keeping its
// Attempt, for a delivery that must be retried later (quota pause, daemon
// stop). The copy in new/ is written durably before cur/<id>.json is
// removed.
//
// It is idempotent: requeueing a message that is already pending (and not
// in flight) succeeds. Errors: ErrAlreadyDone if the message has an outcome
// (the copy in cur/, if any, is removed; nothing is requeued), ErrNotFound
// if the box has no such message, a *BadFileError if the file in cur/ does
// not decode (it is moved to bad/). Only the daemon requeues. Safe for
// concurrent use; it blocks for the fsyncs. The requeued message's Retry is
// cleared: its delivery was cut off (see RequeueFor).
func (b *Box) Requeue(id string) error {
	return b.requeue("requeue", id, func(m *Message) { m.cutOff(); m.Retry = "" })
}

// RequeueFor is Requeue that records in the message's Retry why its
// delivery ended without an outcome (e.g. "quota"), so the next delivery
// can say so; "" means it was cut off. why must be a valid Retry (at most
// MaxRetryLen bytes of [a-z_]). A message already pending keeps its Retry.
func (b *Box) RequeueFor(id, why string) error {
	return b.requeue("requeue", id, func(m *Message) { m.cutOff(); m.Retry = why })
}

// cutOff clears what a retry record says of the next delivery: whatever the
// last delivery was, it did not end as the retry note says.
func (m *Message) cutOff() {
	if m.Transient != nil {
		m.Transient.Note, m.Transient.NotBefore = "", time.Time{}
	}
}

// Unclaim puts the in-flight message id back into new/ as it was before
// Claim: its Attempt goes back down by one (not below zero) and its Retry
// stays. It is for a delivery that never started — the worker could not be
// run at all — so the message is neither counted as tried nor marked as a
// redelivery. Otherwise it behaves like Requeue (idempotent, same errors); a
// second Unclaim of a message already pending changes nothing.
func (b *Box) Unclaim(id string) error {
	return b.requeue("unclaim", id, func(m *Message) { m.Attempt = max(m.Attempt-1, 0) })
}

// RetryLater puts the in-flight message id back in the queue, like Requeue,
// with r as its retry record: why it failed, how often, and when it may be
// tried again. The daemon does not deliver it before r.NotBefore, and the
// next delivery's prompt header says r.Note. r is clipped to what Validate
// accepts. Errors and guarantees are those of Requeue.
func (b *Box) RetryLater(id string, r TransientRetry) error {
	r.Note = textclip.Bytes(strings.ToValidUTF8(r.Note, "\uFFFD"), MaxErrorLen, textclip.Truncated)
	r.LastError = textclip.Bytes(strings.ToValidUTF8(r.LastError, "\uFFFD"), MaxErrorLen, textclip.Truncated)
	r.Failures = min(max(r.Failures, 1), MaxAttempt)
	return b.requeue("retry", id, func(m *Message) { m.Transient, m.Retry = &r, "" })
}

// requeue moves the in-flight message id back into new/ after edit
// changed it; what names the operation in errors.
func (b *Box) requeue(what, id string, edit func(*Message)) error {
	fail := func(err error) error {
		return fmt.Errorf("%s %s in %s: %w", what, trim(id), b.Dir, err)
	}
	if !ValidID(id) {
		return fail(fmt.Errorf("invalid id: %w", ErrNotFound))
	}
	if ok, err := b.exists(dirDone, id); err != nil || ok {
		if err == nil {
			err = b.remove(dirCur, id)
		}
		return fail(orErr(err, ErrAlreadyDone))
	}
	m, err := b.read(dirCur, id, true)
	if errors.Is(err, fs.ErrNotExist) {
		ok, err := b.exists(dirNew, id)
		if err != nil {
			return fail(err)
		}
		if ok {
			return nil // already pending
		}
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	// Overwrite a pending copy left by an interrupted Claim or Requeue: the
	// one in cur/ has the current Attempt.
	edit(&m)
	if err := b.write(dirNew, m, false); err != nil {
		return fail(err)
	}
	if err := b.remove(dirCur, id); err != nil {
		return fail(err)
	}
	return nil
}

// sameMessage reports whether a and b are the same message, ignoring its
// delivery state (Attempt, Outcome).
func sameMessage(a, b Message) bool {
	return a.ID == b.ID && a.From == b.From && a.To == b.To && a.Body == b.Body &&
		a.CreatedAt.Equal(b.CreatedAt) && a.InReplyTo == b.InReplyTo
}
