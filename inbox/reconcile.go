package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Copy is one file of a message: the box and the state that hold it.
type Copy struct {
	Box *Box
	// State is StateNew, StateCur or StateDone.
	State string
	// Msg is the message as stored there.
	Msg Message
}

// String names the copy's place, e.g. "eng-1/cur".
func (c Copy) String() string { return c.Box.Name + "/" + c.State }

// Resolution is what Reconcile did with one message id found in more than
// one place.
type Resolution struct {
	ID string
	// Kept are the copies that stay: every copy in done/ (an outcome is
	// never removed), else the one live copy.
	Kept []Copy
	// Removed are the copies of the same message that were removed.
	Removed []Copy
	// Quarantined are copies with the same id but other content (not the
	// same message), moved to bad/.
	Quarantined []Copy
}

// keep decides which of the copies of one message id stay, so that a
// message has at most one live copy (new/ or cur/) and is never delivered
// again once it has an outcome:
//
//   - if any copy is in done/, every done/ copy stays and no live one;
//   - else if any copy is in cur/ (its delivery began), the one with the
//     highest Attempt stays (the first of them on a tie);
//   - else one copy in new/ stays: the first one in an agent's box (the
//     routing of a role message got that far), else the first one.
//
// It is a pure function.
func keep(copies []Copy) []bool {
	kept := make([]bool, len(copies))
	done := false
	for i, c := range copies {
		if c.State == StateDone {
			kept[i], done = true, true
		}
	}
	if done {
		return kept
	}
	best := -1
	for i, c := range copies {
		if c.State == StateCur && (best < 0 || c.Msg.Attempt > copies[best].Msg.Attempt) {
			best = i
		}
	}
	if best < 0 {
		for i, c := range copies {
			if !isQueue(c.Box.Name) {
				best = i
				break
			}
		}
	}
	if best < 0 && len(copies) > 0 {
		best = 0
	}
	if best >= 0 {
		kept[best] = true
	}
	return kept
}

// isQueue reports whether a box name is a role queue ("@role").
func isQueue(name string) bool { return strings.HasPrefix(name, "@") }

// Reconcile makes every message id found in more than one place among
// boxes (their new/, cur/ and done/) have at most one live copy, keeping
// the copies keep chooses: the others are removed when they hold the same
// message as a kept copy, and moved to bad/ (with the reason) when they
// hold another message under the same id. Files that do not decode are
// moved to bad/ as the listings do. It returns what it did for each such
// id, in the order of the boxes.
//
// The daemon calls it at start, with every box it serves (agents and role
// queues), before it recovers, routes or delivers anything: a crash in the
// middle of routing, or a copy made by hand, can leave an id in two boxes,
// and only one of them may run. It reads the names of every message file
// and only the files of ids found twice. Only the daemon reconciles, with
// nothing else of its running; it blocks for the fsyncs.
func Reconcile(boxes []*Box) ([]Resolution, []error) {
	type place struct {
		box   *Box
		state string
	}
	var errs []error
	where := map[string][]place{}
	var order []string
	for _, b := range boxes {
		for _, state := range []string{StateNew, StateCur, StateDone} {
			ids, err := b.names(state)
			if err != nil {
				errs = append(errs, fmt.Errorf("reconcile %s: %w", b.Dir, err))
				continue
			}
			for _, id := range ids {
				if _, seen := where[id]; !seen {
					order = append(order, id)
				}
				where[id] = append(where[id], place{b, state})
			}
		}
	}
	var out []Resolution
	for _, id := range order {
		places := where[id]
		if len(places) < 2 {
			continue
		}
		var copies []Copy
		for _, p := range places {
			m, err := p.box.read(p.state, id, true)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("reconcile %s: %w", id, err))
				continue
			}
			copies = append(copies, Copy{Box: p.box, State: p.state, Msg: m})
		}
		if len(copies) < 2 {
			continue
		}
		r, rerrs := apply(id, copies)
		out = append(out, r)
		errs = append(errs, rerrs...)
	}
	return out, errs
}

// apply keeps the copies keep chooses and removes or quarantines the rest.
func apply(id string, copies []Copy) (Resolution, []error) {
	r := Resolution{ID: id}
	var errs []error
	kept := keep(copies)
	var ref Copy
	for i, c := range copies {
		if kept[i] {
			r.Kept = append(r.Kept, c)
		}
	}
	if len(r.Kept) > 0 {
		ref = r.Kept[0]
	}
	for i, c := range copies {
		if kept[i] {
			continue
		}
		if err := c.Drop(ref); err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", id, err))
			continue
		}
		if sameMessage(c.Msg, ref.Msg) {
			r.Removed = append(r.Removed, c)
		} else {
			r.Quarantined = append(r.Quarantined, c)
		}
	}
	return r, errs
}

// Find returns the copies of message id in boxes, in new/, cur/ or done/,
// in the order of the boxes. A file that does not decode is left where it
// is and reported. It only reads; safe for concurrent use.
func Find(id string, boxes []*Box) ([]Copy, error) {
	var out []Copy
	for _, b := range boxes {
		ds, err := b.open(false, dirNew, dirCur, dirDone)
		if err != nil {
			return out, fmt.Errorf("find %s in %s: %w", trim(id), b.Dir, err)
		}
		for i, state := range []string{StateNew, StateCur, StateDone} {
			ok, err := exists(ds.subs[i], id+".json")
			if err == nil && ok {
				var m Message
				m, err = b.readIn(ds.subs[i], state, id, false)
				if err == nil {
					out = append(out, Copy{Box: b, State: state, Msg: m})
				} else if errors.Is(err, fs.ErrNotExist) {
					err = nil
				}
			}
			if err != nil {
				ds.close()
				return out, fmt.Errorf("find %s in %s: %w", trim(id), b.Dir, err)
			}
		}
		ds.close()
	}
	return out, nil
}

// Drop disposes of c, a live copy (new/ or cur/) of a message that is a
// duplicate of kept, a copy elsewhere: it is removed when it holds the same
// message, and moved to bad/ (the reason naming kept) when it holds another
// message under the same id. Dropping a copy in done/ is refused. Only the
// daemon drops; safe for concurrent use.
func (c Copy) Drop(kept Copy) error {
	b := c.Box
	if c.State == StateDone {
		return fmt.Errorf("drop %s of %s: an outcome is never dropped", c, trim(c.Msg.ID))
	}
	if sameMessage(c.Msg, kept.Msg) {
		return b.remove(c.State, c.Msg.ID)
	}
	d, err := b.openSub(c.State)
	if err != nil {
		return err
	}
	defer d.Close()
	bad := b.quarantine(d, c.State, c.Msg.ID+".json",
		fmt.Errorf("message id %s is also in %s, with different content", c.Msg.ID, kept))
	if bad.MoveErr != nil {
		return bad
	}
	return nil
}
