// Package inbox is batty's durable, Maildir-style message store: one box per
// agent, for "human", and per role queue ("@<role>"), under one root
// directory (normally .batty/inboxes).
//
// Layout, every directory 0700 and every file 0600:
//
//	<root>/<box>/tmp/   writes in progress (temporary files)
//	<root>/<box>/new/   pending messages, written by Deliver (batty send)
//	<root>/<box>/cur/   messages in flight, claimed for delivery
//	<root>/<box>/done/  messages with their recorded outcome
//	<root>/<box>/bad/   files that did not decode, moved aside
//	<root>/<box>/texts/ whole texts too long for their message file (see text.go)
//
// Each message is one file, "<id>.json", that moves new → cur → done. Every
// move writes the destination durably (temporary file in tmp/, fsync, link
// or rename, fsync of the directory) before it removes the source, so a
// crash at any point leaves every message in at least one of new/, cur/ and
// done/, and a message in done/ wins over a copy elsewhere. That gives the
// delivery guarantee: a message leaves the pending state (new/ or cur/) only
// once its outcome is recorded durably in done/; a message found in cur/ at
// start (Recover) was being delivered when the daemon died and is
// redelivered; its outcome is recorded exactly once (Complete).
//
// Between boxes a message moves only by routing (MoveTo, role queue →
// agent), which is one rename that never replaces a file: at every instant
// the message is in exactly one box. Copies of one id in several boxes (a
// crash of an older build, a file copied by hand) are resolved by
// Reconcile, which the daemon runs at start: one live copy is kept, none
// once an outcome exists anywhere.
//
// Nothing under the root is opened, created, renamed, removed or chmodded
// through a symbolic link: every operation walks from the root with
// directory descriptors opened O_NOFOLLOW, and a link where a directory
// belongs is refused with an *atomicfile.LinkError (a link where a message
// file belongs is a bad file, moved to bad/ as a link). Agents can write the
// inboxes, so a link there must not steer batty's writes elsewhere.
//
// A box may bound its backlog (Box.Limit): Deliver and MoveTo refuse a
// message beyond it with a *FullError, under a lock on the box directory.
//
// A file in new/ that is not a valid message is moved to bad/ only once
// the store's grace has passed since it last changed: a sender that writes
// into new/ directly, in several writes, is not cut off mid-write.
//
// Roles: any process may Deliver (batty send, from several processes at
// once, also inside a sandbox); only the daemon, one per root, calls Claim,
// Complete, Requeue, MoveTo, Drop, Reconcile and Recover. Queries (Pending, Next, InFlight, Done,
// Get, Count, Boxes, Find) are safe from any process at any time. The file system
// is the only shared state (the daemon's index of new/, see Track, only
// spares it listings): every method is safe for concurrent use, and the
// transitions stay correct even when raced (each destination is created with
// an exclusive link, so of two concurrent Claims or Completes of one message
// exactly one wins).
//
// Temporary files in tmp/ are ignored by every listing; Recover removes the
// ones older than StaleTempAge, left by writers that crashed.
package inbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/battyhq/batty/atomicfile"
)

// Errors returned, wrapped, by the Box methods; test them with errors.Is.
var (
	// ErrNotPending: the message is not in new/ (it is in cur/ or done/).
	ErrNotPending = errors.New("message is not pending")
	// ErrNotInFlight: the message is not in cur/ (it is still in new/).
	ErrNotInFlight = errors.New("message is not in flight")
	// ErrAlreadyDone: the message already has a recorded outcome.
	ErrAlreadyDone = errors.New("message already has an outcome")
	// ErrNotFound: no message with that id in the box (or the id is invalid).
	ErrNotFound = errors.New("message not found")
	// ErrExists: a different message with that id already exists.
	ErrExists = errors.New("message id already exists")
)

// StaleTempAge is how old a file in tmp/ must be for Recover to remove it:
// a live writer keeps its temporary file for milliseconds.
const StaleTempAge = time.Minute

// DefaultGrace is the default Store.Grace.
const DefaultGrace = 2 * time.Second

// States of a message, as returned by Box.Get: the name of the box
// subdirectory that holds it.
const (
	StateNew  = "new"  // pending
	StateCur  = "cur"  // in flight
	StateDone = "done" // outcome recorded
)

// Subdirectories of a box.
const (
	dirTmp  = "tmp"
	dirNew  = StateNew
	dirCur  = StateCur
	dirDone = StateDone
	dirBad  = "bad"
)

// Store is the root of the inboxes. The zero value is not usable: use Open.
// A Store holds no state beyond its fields; it is safe for concurrent use
// once its fields are set.
type Store struct {
	// Root is the root directory, e.g. ".batty/inboxes".
	Root string
	// Grace is how long a file in new/ that is not (yet) a valid message is
	// left alone before it is moved to bad/: a sender that writes into
	// new/ directly, in several writes, is not cut off mid-write. During
	// the grace listings report it as a *NotReadyError. 0 means
	// DefaultGrace; negative, no grace.
	Grace time.Duration
	// Now is the clock the grace is measured with (nil: time.Now).
	Now func() time.Time
}

// Open returns the store rooted at root, creating root (and its parents)
// with permission 0700 if missing. root itself must be a real directory,
// not a symbolic link (its parents may be links): a link gives an
// *atomicfile.LinkError. It is idempotent and safe to call from several
// processes at once.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("open inbox store: empty root")
	}
	root = filepath.Clean(root)
	if err := atomicfile.MkdirAll(root); err != nil {
		return nil, fmt.Errorf("open inbox store: %w", err)
	}
	return &Store{Root: root}, nil
}

// now returns the store's current time.
func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// grace returns the effective grace.
func (s *Store) grace() time.Duration {
	switch {
	case s.Grace == 0:
		return DefaultGrace
	case s.Grace < 0:
		return 0
	}
	return s.Grace
}

// root opens the root directory.
func (s *Store) root() (*atomicfile.Dir, error) { return atomicfile.OpenDir(s.Root) }

// Box returns the box called name, creating its directories (0700) if
// missing. name must satisfy ValidBoxName, so nothing outside Root is ever
// touched; a box directory, or one of its subdirectories, that exists but
// is not a real directory (a symbolic link, say) is refused with an
// *atomicfile.LinkError. It is idempotent and safe to call from several
// processes at once; it does not block beyond the file system.
func (s *Store) Box(name string) (*Box, error) {
	if !ValidBoxName(name) {
		return nil, fmt.Errorf("open box %q in %s: invalid box name", trim(name), s.Root)
	}
	b := &Box{Name: name, Dir: filepath.Join(s.Root, name), store: s}
	ds, err := b.open(true, dirTmp, dirNew, dirCur, dirDone)
	if err != nil {
		return nil, fmt.Errorf("open box %s: %w", name, err)
	}
	ds.close()
	return b, nil
}

// Boxes returns the names of the boxes that exist under Root, sorted.
// Entries that are not directories (links included) or whose names are not
// valid box names are ignored. It only reads; it is safe for concurrent use.
func (s *Store) Boxes() ([]string, error) {
	root, err := s.root()
	if err != nil {
		return nil, fmt.Errorf("list boxes in %s: %w", s.Root, err)
	}
	defer root.Close()
	all, err := root.Names()
	if err != nil {
		return nil, fmt.Errorf("list boxes in %s: %w", s.Root, err)
	}
	var names []string
	for _, n := range all {
		if !ValidBoxName(n) {
			continue
		}
		if fi, err := root.Lstat(n); err == nil && fi.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Box is one inbox. Get one with Store.Box, which creates its directories.
// A Box holds no state beyond its fields and, if it tracks new/ (see
// Track), an index of new/ that the files overrule: every method works on
// the files and is safe for concurrent use by goroutines and processes.
type Box struct {
	// Name is the box name (see ValidBoxName).
	Name string
	// Dir is the box directory, Root/Name.
	Dir string
	// Limit bounds the backlog: the messages in new/ and cur/ together.
	// Deliver and MoveTo refuse a message with a *FullError when the box
	// holds Limit or more. 0 means no limit. Set it before use.
	Limit int

	store *Store
	idx   atomic.Pointer[index] // nil unless Track was called
}

// boxDirs are open directories of a box: the box itself and the
// subdirectories asked for, in order.
type boxDirs struct {
	box  *atomicfile.Dir
	subs []*atomicfile.Dir
}

func (ds boxDirs) close() {
	for _, d := range ds.subs {
		d.Close()
	}
	ds.box.Close()
}

// open opens the box directory and its subdirectories subs, from the
// store's root, never following a link; with create, missing ones are
// created.
func (b *Box) open(create bool, subs ...string) (boxDirs, error) {
	root, err := b.store.root()
	if err != nil {
		return boxDirs{}, err
	}
	defer root.Close()
	bd, err := root.Sub(b.Name, create)
	if err != nil {
		return boxDirs{}, err
	}
	ds := boxDirs{box: bd}
	for _, s := range subs {
		d, err := bd.Sub(s, create || s == dirBad || s == dirTexts)
		if err != nil {
			ds.close()
			return boxDirs{}, err
		}
		ds.subs = append(ds.subs, d)
	}
	return ds, nil
}

// openSub opens one subdirectory of the box.
func (b *Box) openSub(sub string) (*atomicfile.Dir, error) {
	ds, err := b.open(false, sub)
	if err != nil {
		return nil, err
	}
	ds.box.Close()
	return ds.subs[0], nil
}

// exists reports whether the message file sub/<id>.json exists.
func (b *Box) exists(sub, id string) (bool, error) {
	d, err := b.openSub(sub)
	if err != nil {
		return false, err
	}
	defer d.Close()
	return exists(d, id+".json")
}

// remove removes sub/<id>.json, if it exists, and syncs sub/.
func (b *Box) remove(sub, id string) error {
	if sub == dirNew {
		defer b.note(id + ".json")
	}
	d, err := b.openSub(sub)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := removeEntry(d, id+".json"); err != nil {
		return err
	}
	return d.Sync()
}
