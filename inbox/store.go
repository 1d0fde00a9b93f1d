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
// Roles: any process may Deliver (batty send, from several processes at
// once, also inside a sandbox); only the daemon, one per root, calls Claim,
// Complete, Requeue, MoveTo and Recover. Queries (Pending, InFlight, Done,
// Get, Count, Boxes) are safe from any process at any time. The file system
// is the only shared state: every method is safe for concurrent use, and the
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
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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
// A Store holds no state beyond Root; it is safe for concurrent use.
type Store struct {
	// Root is the root directory, e.g. ".batty/inboxes".
	Root string
}

// Open returns the store rooted at root, creating root (and its parents)
// with permission 0700 if missing. It is idempotent and safe to call from
// several processes at once.
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

// Box returns the box called name, creating its directories (0700) if
// missing. name must satisfy ValidBoxName, so nothing outside Root is ever
// touched; a box directory that exists but is not a real directory (a
// symbolic link, say) is an error. It is idempotent and safe to call from
// several processes at once; it does not block beyond the file system.
func (s *Store) Box(name string) (*Box, error) {
	if !ValidBoxName(name) {
		return nil, fmt.Errorf("open box %q in %s: invalid box name", trim(name), s.Root)
	}
	b := &Box{Name: name, Dir: filepath.Join(s.Root, name)}
	for _, sub := range []string{dirTmp, dirNew, dirCur, dirDone} {
		if err := atomicfile.MkdirAll(b.path(sub)); err != nil {
			return nil, fmt.Errorf("open box %s: %w", name, err)
		}
	}
	for _, d := range []string{b.Dir, b.path(dirTmp), b.path(dirNew), b.path(dirCur), b.path(dirDone)} {
		fi, err := os.Lstat(d)
		if err != nil {
			return nil, fmt.Errorf("open box %s: %w", name, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("open box %s: %s is not a directory (%v)", name, d, fi.Mode().Type())
		}
	}
	return b, nil
}

// Boxes returns the names of the boxes that exist under Root, sorted.
// Entries that are not directories or whose names are not valid box names
// are ignored. It only reads; it is safe for concurrent use.
func (s *Store) Boxes() ([]string, error) {
	des, err := os.ReadDir(s.Root)
	if err != nil {
		return nil, fmt.Errorf("list boxes in %s: %w", s.Root, err)
	}
	var names []string
	for _, de := range des {
		if de.IsDir() && ValidBoxName(de.Name()) {
			names = append(names, de.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Box is one inbox. Get one with Store.Box, which creates its directories.
// A Box holds no state beyond its fields: every method works on the files
// and is safe for concurrent use by goroutines and processes.
type Box struct {
	// Name is the box name (see ValidBoxName).
	Name string
	// Dir is the box directory, Root/Name.
	Dir string
}

func (b *Box) path(sub string) string { return filepath.Join(b.Dir, sub) }

func (b *Box) file(sub, id string) string { return filepath.Join(b.Dir, sub, id+".json") }

// exists reports whether the message file sub/<id>.json exists.
func (b *Box) exists(sub, id string) (bool, error) {
	_, err := os.Lstat(b.file(sub, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// remove removes sub/<id>.json, if it exists, and syncs sub/.
func (b *Box) remove(sub, id string) error {
	if err := os.Remove(b.file(sub, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(b.path(sub))
}
