package inbox

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/battyhq/batty/atomicfile"
)

// ErrFull is matched (errors.Is) by a *FullError.
var ErrFull = errors.New("backlog limit reached")

// ErrBusy: MoveTo could not take the destination's backlog lock at once
// (a sender is writing into it); try again a moment later.
var ErrBusy = errors.New("inbox busy")

// FullError reports a box whose backlog (new/ and cur/) reached its Limit.
type FullError struct {
	// Box is the box name.
	Box string
	// Backlog is how many messages it holds; Limit is its Box.Limit.
	Backlog, Limit int
}

// Error names the box, its backlog and the limit.
func (e *FullError) Error() string {
	return fmt.Sprintf("%s holds %d messages, its backlog limit is %d", e.Box, e.Backlog, e.Limit)
}

// Is makes errors.Is(err, ErrFull) true.
func (e *FullError) Is(target error) bool { return target == ErrFull }

// lockBacklog takes the box's backlog lock (an exclusive flock on the box
// directory) and checks the backlog against Limit: a *FullError when it is
// at the limit. Without wait, a lock held elsewhere gives ErrBusy. The
// returned func releases the lock.
func (b *Box) lockBacklog(wait bool) (unlock func(), err error) {
	ds, err := b.open(false, dirNew, dirCur)
	if err != nil {
		return nil, err
	}
	if err := ds.box.Lock(wait); err != nil {
		ds.close()
		if errors.Is(err, atomicfile.ErrLocked) {
			return nil, ErrBusy
		}
		return nil, err
	}
	n := 0
	for _, d := range ds.subs {
		ids, err := messageIDs(d)
		if err != nil {
			ds.close()
			return nil, err
		}
		n += len(ids)
	}
	if n >= b.Limit {
		ds.close()
		return nil, &FullError{Box: b.Name, Backlog: n, Limit: b.Limit}
	}
	// Closing the descriptor releases the lock.
	return ds.close, nil
}

// MoveTo moves the pending message id from this box's new/ to dst's new/,
// keeping its id and content: it routes a message of a role queue to one of
// the role's agents. The move is one rename(2) that never replaces a file
// (RENAME_NOREPLACE): at every instant the message is in exactly one of the
// two boxes, so a crash cannot leave a copy in both. (Where the file system
// cannot rename that way it links, then unlinks; Reconcile resolves the
// pair a crash in between leaves.)
//
// If dst already holds the same message (same id, sender, recipient, body,
// creation time and reply-to) in new/, cur/ or done/, the copy here is a
// duplicate: MoveTo removes it and returns dst's copy. If dst holds a
// different message with that id, it returns ErrExists and changes nothing.
// With dst.Limit > 0 a dst at its limit gives a *FullError, and a dst whose
// backlog lock is held elsewhere gives ErrBusy (MoveTo never waits for it);
// nothing moves. Other errors: ErrNotPending if the message is in cur/ or
// done/ here, ErrNotFound if it is nowhere here, a *BadFileError if its
// file does not decode (it is moved to bad/). Only the daemon moves. Safe
// for concurrent use; it blocks for the fsyncs.
func (b *Box) MoveTo(id string, dst *Box) (Message, error) {
	fail := func(err error) (Message, error) {
		return Message{}, fmt.Errorf("move %s from %s to %s: %w", trim(id), b.Dir, dst.Dir, err)
	}
	if !ValidID(id) {
		return fail(fmt.Errorf("invalid id: %w", ErrNotFound))
	}
	if dst.Dir == b.Dir {
		return fail(errors.New("source and destination are the same box"))
	}
	m, err := b.read(dirNew, id, true)
	if errors.Is(err, fs.ErrNotExist) {
		for _, sub := range []string{dirCur, dirDone} {
			if ok, err := b.exists(sub, id); err != nil || ok {
				return fail(orErr(err, ErrNotPending))
			}
		}
		return fail(ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	// finish drops the copy here when dst has the message already.
	finish := func() (Message, error) {
		got, _, err := dst.Get(id)
		if err != nil {
			return fail(err)
		}
		if !sameMessage(got, m) {
			return fail(fmt.Errorf("%w in %s with different content", ErrExists, dst.Dir))
		}
		if err := b.remove(dirNew, id); err != nil {
			return fail(err)
		}
		return got, nil
	}
	if _, _, err := dst.Get(id); err == nil {
		return finish()
	} else if !errors.Is(err, ErrNotFound) {
		return fail(err)
	}
	if dst.Limit > 0 {
		unlock, err := dst.lockBacklog(false)
		if err != nil {
			return fail(err)
		}
		defer unlock()
	}
	src, err := b.openSub(dirNew)
	if err != nil {
		return fail(err)
	}
	defer src.Close()
	to, err := dst.openSub(dirNew)
	if err != nil {
		return fail(err)
	}
	defer to.Close()
	err = src.RenameNoReplace(id+".json", to, id+".json")
	b.note(id + ".json")
	dst.note(id + ".json")
	switch {
	case errors.Is(err, fs.ErrExist):
		return finish()
	case errors.Is(err, fs.ErrNotExist):
		return fail(ErrNotFound) // moved by someone else meanwhile
	case err != nil:
		return fail(err)
	}
	return m, nil
}
