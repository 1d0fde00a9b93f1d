package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/battyhq/batty/atomicfile"
)

// index is a box's view, in memory, of the entries of its new/: it lets
// the process that watches the box (the daemon) find the oldest pending
// message by reading that one file, not every file of new/ — and count
// the backlog without listing new/ again after every message.
//
// The directory stays the truth. The index records nothing but what a
// listing of new/, or an lstat(2) of one entry, showed while its lock was
// held; so whatever order the reports of changes come in, the last look at
// a name leaves the index as the directory is, and a look that fails makes
// the next use list new/ again. A name the index holds whose file has gone
// is dropped when Next finds it missing; a name it misses (a change never
// reported) is found by the next listing (Resync).
type index struct {
	mu    sync.Mutex
	fresh bool                // false: new/ is listed again before use
	ids   []string            // the ids of the "<id>.json" entries, sorted
	odd   map[string]struct{} // the other entries (bad names)
}

// load lists new/, open as d, into x. The caller holds x.mu.
func (x *index) load(d *atomicfile.Dir) error {
	names, err := d.Names()
	if err != nil {
		return err
	}
	ids, odd := splitNames(names)
	slices.Sort(ids)
	x.ids, x.odd, x.fresh = ids, odd, true
	return nil
}

// splitNames separates the message ids of a listing of new/ ("<id>.json")
// from the other names.
func splitNames(names []string) (ids []string, odd map[string]struct{}) {
	odd = map[string]struct{}{}
	ids = make([]string, 0, len(names))
	for _, n := range names {
		if id, ok := messageID(n); ok {
			ids = append(ids, id)
		} else {
			odd[n] = struct{}{}
		}
	}
	return ids, odd
}

// set records whether the entry name is in new/. The caller holds x.mu.
func (x *index) set(name string, present bool) {
	id, ok := messageID(name)
	if !ok {
		if present {
			x.odd[name] = struct{}{}
		} else {
			delete(x.odd, name)
		}
		return
	}
	i, found := slices.BinarySearch(x.ids, id)
	switch {
	case present && !found:
		x.ids = slices.Insert(x.ids, i, id)
	case !present && found:
		x.ids = slices.Delete(x.ids, i, i+1)
	}
}

// after returns the first id of x that sorts after id. The caller holds
// x.mu.
func (x *index) after(id string) (string, bool) {
	i, found := slices.BinarySearch(x.ids, id)
	if found {
		i++
	}
	if i >= len(x.ids) {
		return "", false
	}
	return x.ids[i], true
}

// Track makes b keep an index of its new/ in memory, which Next and Count
// use in place of listing the directory. b's own changes to new/ keep it
// current; so must Changed, called for every change a file-system watcher
// reports in new/ (the other processes' sends), and Resync, called when
// reports may have been lost and as a periodic safety net. The first use
// lists new/: call Track once the watcher is in place (and before b is
// shared), and from one process only (the daemon). Without Track, Next and
// Count read the directory.
func (b *Box) Track() {
	b.idx.CompareAndSwap(nil, &index{})
}

// Changed tells a tracking box (see Track) that the entry new/<name> (a
// base name) may have been created, replaced or removed; the box looks at
// it. A no-op without Track. Safe for concurrent use.
func (b *Box) Changed(name string) { b.note(name) }

// Resync makes a tracking box list new/ again before its next use. A
// no-op without Track. Safe for concurrent use.
func (b *Box) Resync() {
	if x := b.idx.Load(); x != nil {
		x.mu.Lock()
		x.fresh = false
		x.mu.Unlock()
	}
}

// note looks whether new/<name> exists and records it in the index, if b
// tracks new/. A look that fails makes the next use list new/ again.
func (b *Box) note(name string) {
	x := b.idx.Load()
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.fresh {
		return // the next listing, after this change, sees it
	}
	d, err := b.openSub(dirNew)
	if err != nil {
		x.fresh = false
		return
	}
	defer d.Close()
	present, err := exists(d, name)
	if err != nil {
		x.fresh = false
		return
	}
	x.set(name, present)
}

// countNewOnDisk is countNew with new/ listed from the directory, tracked
// or not.
func (b *Box) countNewOnDisk(claimed func() ([]string, error)) (int, []string, error) {
	n, err := b.names(dirNew)
	if err != nil {
		return 0, nil, err
	}
	c, err := claimed()
	if err != nil {
		return 0, nil, err
	}
	in := make(map[string]bool, len(c))
	for _, id := range c {
		in[id] = true
	}
	pending := 0
	for _, id := range n {
		if !in[id] {
			pending++
		}
	}
	return pending, c, nil
}

// countNew returns how many message ids new/ holds that are not among
// the ids then listed by claimed (called once new/ has been read), and
// those ids. new/ is read from the index if b tracks it (without copying
// it: claimed runs under its lock), else listed.
func (b *Box) countNew(claimed func() ([]string, error)) (int, []string, error) {
	x := b.idx.Load()
	if x == nil {
		return b.countNewOnDisk(claimed)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.fresh {
		d, err := b.openSub(dirNew)
		if err != nil {
			return 0, nil, err
		}
		defer d.Close()
		if err := x.load(d); err != nil {
			return 0, nil, err
		}
	}
	c, err := claimed()
	if err != nil {
		return 0, nil, err
	}
	pending := len(x.ids)
	for _, id := range slices.Compact(slices.Sorted(slices.Values(c))) {
		if _, found := slices.BinarySearch(x.ids, id); found {
			pending--
		}
	}
	return pending, c, nil
}

// cursor walks the ids of new/ in order: from the index if b tracks new/,
// else from one listing.
type cursor struct {
	d   *atomicfile.Dir // new/
	x   *index
	ids []string // the listing, sorted, without an index
}

// newCursor starts a walk of new/ (open as d) and returns with it the
// names of new/ that are not message file names, sorted.
func (b *Box) newCursor(d *atomicfile.Dir) (cursor, []string, error) {
	c := cursor{d: d, x: b.idx.Load()}
	var odd map[string]struct{}
	if c.x == nil {
		names, err := d.Names()
		if err != nil {
			return cursor{}, nil, err
		}
		c.ids, odd = splitNames(names)
		slices.Sort(c.ids)
	} else {
		c.x.mu.Lock()
		defer c.x.mu.Unlock()
		if !c.x.fresh {
			if err := c.x.load(d); err != nil {
				return cursor{}, nil, err
			}
		}
		odd = c.x.odd
	}
	oddNames := make([]string, 0, len(odd))
	for n := range odd {
		oddNames = append(oddNames, n)
	}
	slices.Sort(oddNames)
	return c, oddNames, nil
}

// next returns the first id of new/ that sorts after id.
func (c *cursor) next(id string) (string, bool, error) {
	if c.x == nil {
		i, found := slices.BinarySearch(c.ids, id)
		if found {
			i++
		}
		if i >= len(c.ids) {
			return "", false, nil
		}
		return c.ids[i], true, nil
	}
	c.x.mu.Lock()
	defer c.x.mu.Unlock()
	if !c.x.fresh {
		if err := c.x.load(c.d); err != nil {
			return "", false, err
		}
	}
	next, ok := c.x.after(id)
	return next, ok, nil
}

// Next returns the oldest valid pending message whose id sorts after
// after, or false when there is none: Next("") is the message Pending
// would list first (ids sort by creation time for generated ids), Next(m.ID)
// the one after m. It reads only the files it passes on its way: one that
// is not a valid message is handled as Pending handles it — moved to bad/
// and reported as a *BadFileError once the store's grace has passed since
// it last changed, until then left in place and reported as a
// *NotReadyError — and passed over, as is a message that disappears
// meanwhile; so is, by Next(""), every entry of new/ whose name is not a
// message file name. Errors reading the directory are reported in the
// slice too. On a box that tracks new/ (see Track) the files are found
// from the index, so the cost does not grow with the backlog; otherwise
// new/ is listed (names only). Anyone may call it (it moves only bad
// files); safe for concurrent use.
func (b *Box) Next(after string) (Message, bool, []error) {
	fail := func(err error) (Message, bool, []error) {
		return Message{}, false, []error{fmt.Errorf("list %s/ in %s: %w", dirNew, b.Dir, err)}
	}
	d, err := b.openSub(dirNew)
	if err != nil {
		return fail(err)
	}
	defer d.Close()
	c, odd, err := b.newCursor(d)
	if err != nil {
		return fail(err)
	}
	var errs []error
	if after == "" {
		for _, name := range odd {
			errs = append(errs, b.reject(d, dirNew, name, errors.New(`not a message file name ("<id>.json")`)))
		}
	}
	for id := after; ; {
		next, ok, err := c.next(id)
		if err != nil {
			_, _, ferr := fail(err)
			return Message{}, false, append(errs, ferr...)
		}
		if !ok {
			return Message{}, false, errs
		}
		id = next
		m, err := b.readIn(d, dirNew, id, true)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b.note(id + ".json") // moved meanwhile
		case err != nil:
			errs = append(errs, fmt.Errorf("list %s/ in %s: %w", dirNew, b.Dir, err))
		default:
			return m, true, errs
		}
	}
}
