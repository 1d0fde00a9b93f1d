package inbox

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/battyhq/batty/atomicfile"
)

// BadFileError reports a file in new/, cur/ or done/ that is not a valid
// message: its name is not "<id>.json", it is not a regular file, it does
// not decode, its id does not match its name, or (in done/) it has no
// outcome. The listings and the transitions move such files to <box>/bad/.
type BadFileError struct {
	// Path is the file as found.
	Path string
	// MovedTo is where the file was moved, or "" if it was not moved.
	MovedTo string
	// Err says what is wrong with the file.
	Err error
	// MoveErr is why the file could not be moved to bad/, if it was not.
	MoveErr error
}

// Error says which file is bad, why, and where it went.
func (e *BadFileError) Error() string {
	s := fmt.Sprintf("bad message file %s: %v", e.Path, e.Err)
	if e.MovedTo != "" {
		s += "; moved to " + e.MovedTo
	}
	if e.MoveErr != nil {
		s += "; not moved: " + e.MoveErr.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *BadFileError) Unwrap() error { return e.Err }

// NotReadyError reports a regular file in new/ that is not a valid message
// (yet) but changed less than the store's grace ago: its sender may still be
// writing it. It is left where it is; a listing after Retry looks again and
// moves it to bad/ if it still does not decode.
type NotReadyError struct {
	// Path is the file.
	Path string
	// Err says what is wrong with it so far.
	Err error
	// Retry is how long until its grace ends.
	Retry time.Duration
}

// Error says which file waits and why.
func (e *NotReadyError) Error() string {
	return fmt.Sprintf("message file %s is not valid yet (%v); looking again in %s before moving it to bad/",
		e.Path, e.Err, e.Retry.Round(time.Millisecond))
}

// Unwrap returns Err.
func (e *NotReadyError) Unwrap() error { return e.Err }

// contentError marks a problem with what a file holds, as opposed to an
// error reading it: only the former makes a file bad.
type contentError struct{ err error }

func (e contentError) Error() string { return e.err.Error() }
func (e contentError) Unwrap() error { return e.err }

// readFile reads and decodes the message file d/name without following a
// symbolic link or blocking on a FIFO.
func readFile(d *atomicfile.Dir, name string) (Message, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Message{}, err
		}
		// A symbolic link, a FIFO, a directory or a socket is refused.
		if fi, lerr := d.Lstat(name); lerr == nil && !fi.Mode().IsRegular() {
			return Message{}, contentError{fmt.Errorf("not a regular file (%v)", fi.Mode().Type())}
		}
		return Message{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Message{}, err
	}
	if !fi.Mode().IsRegular() {
		return Message{}, contentError{fmt.Errorf("not a regular file (%v)", fi.Mode().Type())}
	}
	if fi.Size() > MaxFileLen {
		return Message{}, contentError{fmt.Errorf("%d bytes, more than %d", fi.Size(), MaxFileLen)}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileLen+1))
	if err != nil {
		return Message{}, err
	}
	m, err := Decode(data)
	if err != nil {
		return Message{}, contentError{err}
	}
	return m, nil
}

// read reads the message sub/<id>.json. A missing file gives an error
// matching fs.ErrNotExist; a bad file gives a *BadFileError, and is moved to
// bad/ if quarantine is set (a young one in new/ gives a *NotReadyError and
// stays).
func (b *Box) read(sub, id string, quarantine bool) (Message, error) {
	d, err := b.openSub(sub)
	if err != nil {
		return Message{}, err
	}
	defer d.Close()
	return b.readIn(d, sub, id, quarantine)
}

// readIn is read with sub/ open as d.
func (b *Box) readIn(d *atomicfile.Dir, sub, id string, quarantine bool) (Message, error) {
	name := id + ".json"
	m, err := readFile(d, name)
	if err == nil {
		switch {
		case m.ID != id:
			err = contentError{fmt.Errorf("id %q does not match the file name", m.ID)}
		case sub == dirDone && m.Outcome == nil:
			err = contentError{errors.New("no outcome in done/")}
		}
	}
	var ce contentError
	if errors.As(err, &ce) {
		if quarantine {
			return Message{}, b.reject(d, sub, name, ce.err)
		}
		return Message{}, &BadFileError{Path: filepath.Join(d.Path(), name), Err: ce.err}
	}
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

// reject handles the bad entry sub/name, open as d: a regular file in new/
// that changed less than the grace ago gives a *NotReadyError and stays;
// anything else is moved to bad/ (see quarantine).
func (b *Box) reject(d *atomicfile.Dir, sub, name string, cause error) error {
	if sub == dirNew {
		if fi, err := d.Lstat(name); err == nil && fi.Mode().IsRegular() {
			if left := b.store.grace() - b.store.now().Sub(fi.ChangeTime()); left > 0 {
				return &NotReadyError{Path: filepath.Join(d.Path(), name), Err: cause, Retry: left}
			}
		}
	}
	return b.quarantine(d, sub, name, cause)
}

// quarantine moves sub/name (sub/ open as d) to bad/, never through a link
// and never over another file, and returns the error reporting it.
func (b *Box) quarantine(d *atomicfile.Dir, sub, name string, cause error) *BadFileError {
	if sub == dirNew {
		defer b.note(name)
	}
	bad := &BadFileError{Path: filepath.Join(d.Path(), name), Err: cause}
	ds, err := b.open(false, dirBad)
	if err != nil {
		bad.MoveErr = err
		return bad
	}
	defer ds.close()
	badDir := ds.subs[0]
	dst := sub + "-" + name
	for try := 0; ; try++ {
		err = d.RenameNoReplace(name, badDir, dst)
		if !errors.Is(err, fs.ErrExist) || try > 3 {
			break
		}
		id, _ := NewID()
		dst = sub + "-" + name + "." + id
	}
	if err != nil {
		bad.MoveErr = err
		return bad
	}
	bad.MovedTo = filepath.Join(badDir.Path(), dst)
	return bad
}

// messageID returns the id a file name stands for, if it is "<id>.json".
func messageID(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ".json")
	return id, ok && ValidID(id)
}

// list returns the messages in sub/, sorted by id. Every entry that is not a
// valid message is moved to bad/ and reported (in new/, after its grace: a
// *NotReadyError until then); messages that disappear while listing (moved
// concurrently) are left out.
func (b *Box) list(sub string) ([]Message, []error) {
	d, err := b.openSub(sub)
	if err != nil {
		return nil, []error{fmt.Errorf("list %s/ in %s: %w", sub, b.Dir, err)}
	}
	defer d.Close()
	names, err := d.Names()
	if err != nil {
		return nil, []error{fmt.Errorf("list %s/ in %s: %w", sub, b.Dir, err)}
	}
	var msgs []Message
	var errs []error
	for _, name := range names {
		id, ok := messageID(name)
		if !ok {
			errs = append(errs, b.reject(d, sub, name, errors.New(`not a message file name ("<id>.json")`)))
			continue
		}
		m, err := b.readIn(d, sub, id, true)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, fmt.Errorf("list %s/ in %s: %w", sub, b.Dir, err))
		default:
			msgs = append(msgs, m)
		}
	}
	slices.SortFunc(msgs, func(x, y Message) int { return strings.Compare(x.ID, y.ID) })
	return msgs, errs
}

// Pending returns the messages in new/, sorted by id (creation time for
// generated ids). A file that is not a valid message is moved to bad/ and
// reported in the error slice as a *BadFileError naming it — once the
// store's grace has passed since it last changed; until then it stays and
// is reported as a *NotReadyError. It never hides or blocks the other
// messages. Errors reading the directory also land in
// the slice. Anyone may call it (it moves only bad files); safe for
// concurrent use.
func (b *Box) Pending() ([]Message, []error) { return b.list(dirNew) }

// InFlight returns the messages in cur/, sorted by id, with the error
// handling of Pending. Safe for concurrent use.
func (b *Box) InFlight() ([]Message, []error) { return b.list(dirCur) }

// Done returns the messages in done/, most recently finished first (by
// Outcome.FinishedAt, then by id, descending), at most limit of them (0 or
// less: all). Bad files are moved to bad/; Done then returns the valid
// messages along with an error naming every bad file. It reads every file of
// done/. Safe for concurrent use.
func (b *Box) Done(limit int) ([]Message, error) {
	msgs, errs := b.list(dirDone)
	slices.SortFunc(msgs, func(x, y Message) int {
		if c := y.Outcome.FinishedAt.Compare(x.Outcome.FinishedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.ID, x.ID)
	})
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[:limit:limit]
	}
	return msgs, errors.Join(errs...)
}

// Get finds the message id in new/, cur/ or done/ and returns it with the
// name of its state: StateNew ("new"), StateCur ("cur") or StateDone
// ("done"). A message that moves while Get looks is still found. Errors:
// ErrNotFound, or a *BadFileError (Get never moves files). It only reads;
// safe for concurrent use.
func (b *Box) Get(id string) (Message, string, error) {
	if !ValidID(id) {
		return Message{}, "", fmt.Errorf("get %s in %s: invalid id: %w", trim(id), b.Dir, ErrNotFound)
	}
	// The states are visited in the order messages move through them, and a
	// move writes its destination before removing its source, so one pass
	// finds a message that only moves forward; the second pass catches a
	// Requeue (cur → new) racing the first.
	ds, err := b.open(false, dirNew, dirCur, dirDone)
	if err != nil {
		return Message{}, "", fmt.Errorf("get %s in %s: %w", id, b.Dir, err)
	}
	defer ds.close()
	for range 2 {
		for i, sub := range []string{dirNew, dirCur, dirDone} {
			m, err := b.readIn(ds.subs[i], sub, id, false)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return Message{}, "", fmt.Errorf("get %s in %s: %w", id, b.Dir, err)
			default:
				return m, sub, nil
			}
		}
	}
	return Message{}, "", fmt.Errorf("get %s in %s: %w", id, b.Dir, ErrNotFound)
}

// names returns the message ids whose files are in sub/, unsorted.
func (b *Box) names(sub string) ([]string, error) {
	d, err := b.openSub(sub)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return messageIDs(d)
}

// messageIDs returns the message ids whose files are in d, unsorted.
func messageIDs(d *atomicfile.Dir) ([]string, error) {
	names, err := d.Names()
	if err != nil {
		return nil, err
	}
	ids := names[:0]
	for _, n := range names {
		if id, ok := messageID(n); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Count returns the number of messages waiting (new/) and in flight
// (cur/), without reading them (a bad file counts until a listing moves
// it). Each message counts once, also in the instant a Claim or Complete
// has written its next copy and not yet removed the previous one: an id in
// both new/ and cur/ is in flight, an id in cur/ with an outcome in done/
// is neither. A box that tracks new/ (see Track) counts new/ from its
// index. It only reads; safe for concurrent use.
func (b *Box) Count() (pending, inflight int, err error) {
	return b.count(b.countNew)
}

// CountOnDisk is Count read from the directories even when the box is
// tracked: what a reader outside the daemon's goroutines (status) sees,
// including a message written a moment ago that the index has not heard
// of yet. It only reads; safe for concurrent use.
func (b *Box) CountOnDisk() (pending, inflight int, err error) {
	return b.count(b.countNewOnDisk)
}

func (b *Box) count(countNew func(claimed func() ([]string, error)) (int, []string, error)) (pending, inflight int, err error) {
	// new/ is read before cur/: a Claim in between is seen in both.
	pending, c, err := countNew(func() ([]string, error) { return b.names(dirCur) })
	if err != nil {
		return 0, 0, fmt.Errorf("count %s: %w", b.Dir, err)
	}
	for _, id := range c {
		done, err := b.exists(dirDone, id)
		if err != nil {
			return 0, 0, fmt.Errorf("count %s: %w", b.Dir, err)
		}
		if !done {
			inflight++
		}
	}
	return pending, inflight, nil
}

// Recover repairs the box after a crash and returns the messages to
// redeliver. The daemon calls it for every box at start, before claiming
// anything; it is idempotent, and Deliver may run concurrently.
//
// It removes the files in tmp/ older than StaleTempAge (writes abandoned by
// a crash; younger ones may belong to a live writer); removes each cur/
// entry whose message is in done/ (Complete crashed after recording the
// outcome: it is not redelivered); removes each new/ entry whose message is
// in cur/ (Claim crashed after its copy) or done/; and moves bad files of
// cur/ to bad/. It returns the remaining messages of cur/, sorted by id:
// their delivery started but their outcome was not recorded. Deliver them
// as they are (they stay in cur/; finish with Complete), or Requeue them to
// go through Claim again, which counts the new attempt.
//
// Every problem is reported in the error slice; when Recover cannot tell
// whether a message in cur/ was completed it returns it (at-least-once
// delivery; Complete still records one outcome).
func (b *Box) Recover() (redeliver []Message, errs []error) {
	errs = append(errs, b.cleanTmp()...)
	inflight, lerrs := b.list(dirCur)
	errs = append(errs, lerrs...)
	fail := func(id string, err error) {
		errs = append(errs, fmt.Errorf("recover %s in %s: %w", id, b.Dir, err))
	}
	for _, m := range inflight {
		done, err := b.exists(dirDone, m.ID)
		if err != nil {
			fail(m.ID, err)
		} else if done {
			if err := b.remove(dirCur, m.ID); err != nil {
				fail(m.ID, err)
			}
			continue
		}
		if pending, err := b.exists(dirNew, m.ID); err != nil {
			fail(m.ID, err)
		} else if pending {
			if err := b.remove(dirNew, m.ID); err != nil {
				fail(m.ID, err)
			}
		}
		redeliver = append(redeliver, m)
	}
	pending, err := b.names(dirNew)
	if err != nil {
		errs = append(errs, fmt.Errorf("recover %s: %w", b.Dir, err))
	}
	for _, id := range pending {
		if done, err := b.exists(dirDone, id); err != nil {
			fail(id, err)
		} else if done {
			if err := b.remove(dirNew, id); err != nil {
				fail(id, err)
			}
		}
	}
	return redeliver, errs
}

// cleanTmp removes the entries of tmp/ older than StaleTempAge.
func (b *Box) cleanTmp() []error {
	d, err := b.openSub(dirTmp)
	if err != nil {
		return []error{fmt.Errorf("recover %s: %w", b.Dir, err)}
	}
	defer d.Close()
	names, err := d.Names()
	if err != nil {
		return []error{fmt.Errorf("recover %s: %w", b.Dir, err)}
	}
	var errs []error
	removed := false
	cutoff := time.Now().Add(-StaleTempAge)
	for _, name := range names {
		fi, err := d.Lstat(name)
		if err != nil {
			continue // gone
		}
		if !fi.ModTime().Before(cutoff) {
			continue // maybe in use
		}
		if err := removeEntry(d, name); err != nil {
			errs = append(errs, fmt.Errorf("recover %s: %w", b.Dir, err))
			continue
		}
		removed = true
	}
	if removed {
		if err := d.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("recover %s: %w", b.Dir, err))
		}
	}
	return errs
}

// Listed is a message as Recent lists it: with the name of its state,
// StateNew, StateCur or StateDone.
type Listed struct {
	Message
	State string
}

// Recent returns at most limit (at least 1) of the box's messages,
// newest first (by CreatedAt, then id): pending, in flight and the latest
// done. The files that cannot be read are in the errors; the rest are
// listed all the same. It moves only bad files; safe for concurrent use.
func (b *Box) Recent(limit int) ([]Listed, []error) {
	limit = max(limit, 1)
	var out []Listed
	var errs []error
	add := func(state string, ms []Message, es []error) {
		errs = append(errs, es...)
		for _, m := range ms {
			out = append(out, Listed{Message: m, State: state})
		}
	}
	pending, es := b.Pending()
	add(StateNew, pending, es)
	inflight, es := b.InFlight()
	add(StateCur, inflight, es)
	// Done returns the readable messages along with an error naming the
	// files it could not read.
	done, err := b.Done(limit)
	if err != nil {
		es = []error{err}
	} else {
		es = nil
	}
	add(StateDone, done, es)
	slices.SortStableFunc(out, func(x, y Listed) int {
		return cmp.Or(y.CreatedAt.Compare(x.CreatedAt), cmp.Compare(y.ID, x.ID))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, errs
}
