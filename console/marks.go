package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
)

// Limits of the marks.
const (
	// maxRead bounds the messages remembered as read; the oldest ids go
	// first (message ids sort by time).
	maxRead = 5000
	// maxMarksFile bounds the marks' file.
	maxMarksFile = 1 << 20
)

// Marks are what the human has read: the messages of their inbox marked
// read, and the time up to which they have seen the alerts. The state
// directory keeps them (ReadMarks, WriteMarks); a file an agent wrote there can
// only mark things read or unread.
type Marks struct {
	// Read are the ids of the human's messages marked read, sorted.
	Read []string `json:"read"`
	// AlertsSeen is when the human last marked the alerts seen.
	AlertsSeen time.Time `json:"alerts_seen,omitzero"`
}

// DecodeMarks reads the marks' file strictly: one JSON object of the
// known fields, valid ids, at most maxMarksFile bytes. It keeps the newest
// maxRead ids, sorted and without duplicates. It never panics.
func DecodeMarks(data []byte) (Marks, error) {
	if len(data) > maxMarksFile {
		return Marks{}, fmt.Errorf("%d bytes, more than %d", len(data), maxMarksFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Marks
	if err := dec.Decode(&m); err != nil {
		return Marks{}, fmt.Errorf("not the console's marks: %w", err)
	}
	if dec.More() {
		return Marks{}, fmt.Errorf("not the console's marks: more than one JSON value")
	}
	for _, id := range m.Read {
		if !inbox.ValidID(id) {
			return Marks{}, fmt.Errorf("not a message id: %.80q", id)
		}
	}
	m.Read = tidyRead(m.Read)
	return m, nil
}

// tidyRead sorts ids, drops duplicates and keeps the newest maxRead. It
// is a pure function; ids is not changed.
func tidyRead(ids []string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > maxRead {
		ids = ids[len(ids)-maxRead:]
	}
	return ids
}

// IsRead reports whether message id is marked read.
func (m Marks) IsRead(id string) bool {
	_, ok := slices.BinarySearch(m.Read, id)
	return ok
}

// WithRead returns m with ids marked read, forgetting the ids that are
// not among exist, sorted (the ids of the messages in the inbox). It is a
// pure function.
func (m Marks) WithRead(exist []string, ids ...string) Marks {
	keep := make([]string, 0, len(m.Read)+len(ids))
	for _, id := range append(slices.Clone(m.Read), ids...) {
		if _, ok := slices.BinarySearch(exist, id); ok {
			keep = append(keep, id)
		}
	}
	m.Read = tidyRead(keep)
	return m
}

// Unread returns how many of ids are not marked read. It is a pure
// function.
func (m Marks) Unread(ids []string) int {
	n := 0
	for _, id := range ids {
		if !m.IsRead(id) {
			n++
		}
	}
	return n
}

// marksSub and marksName are where the marks are kept: the state
// directory's console.json.
const (
	marksSub  = "state"
	marksName = "console.json"
)

// ReadMarks reads the marks kept in the state directory of l: no file is
// no marks.
func ReadMarks(l project.Layout) (Marks, error) {
	d, err := l.OpenDir(marksSub, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Marks{}, nil
	}
	if err != nil {
		return Marks{}, fmt.Errorf("read the console's marks: %w", err)
	}
	defer d.Close()
	f, err := d.OpenFile(marksName, 0, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Marks{}, nil
	}
	if err != nil {
		return Marks{}, fmt.Errorf("read the console's marks: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMarksFile+1))
	if err != nil {
		return Marks{}, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	m, err := DecodeMarks(data)
	if err != nil {
		return Marks{}, fmt.Errorf("%s: %w (remove it: the marks start afresh)", f.Name(), err)
	}
	return m, nil
}

// WriteMarks keeps m in the state directory of l: an atomic write, mode
// 0600.
func WriteMarks(l project.Layout, m Marks) error {
	d, err := l.OpenDir(marksSub, true)
	if err != nil {
		return fmt.Errorf("write the console's marks: %w", err)
	}
	defer d.Close()
	if err := d.WriteJSON(marksName, m, 0o600); err != nil {
		return fmt.Errorf("write the console's marks: %w", err)
	}
	return nil
}
