package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// ShortID returns the form of a message id that batty shows (in the feed,
// status, inbox listings and transcripts): what follows the time, the
// random part of a generated id ("1f2e3d4c" of
// "20261121T125100.123456789Z-1f2e3d4c", "1f2e3d4c.reply" of its reply)
// or the schedule's run ("schedule.nightly.3"); an id of another form is
// shown whole. Every command that takes an id accepts it (ResolveID). It
// is a pure function.
func ShortID(id string) string {
	if i := strings.Index(id, "-schedule."); i >= 0 {
		return id[i+1:]
	}
	if i := strings.LastIndexByte(id, '-'); i >= 0 && i+1 < len(id) {
		return id[i+1:]
	}
	return id
}

// ErrAmbiguousID is the error of ResolveID for an abbreviation that
// matches several messages.
var ErrAmbiguousID = errors.New("ambiguous message id")

// maxListed bounds the ids an ambiguity error lists.
const maxListed = 5

// ResolveID returns the id among ids that abbrev names, as git resolves a
// short hash: the id itself, else the one id whose ShortID is abbrev, else
// the one id that starts with abbrev or whose ShortID does. It returns an
// error wrapping ErrNotFound when none matches and ErrAmbiguousID (listing
// the first matches in their short form) when several do. It is a pure
// function; ids may repeat.
func ResolveID(ids []string, abbrev string) (string, error) {
	if abbrev == "" {
		return "", fmt.Errorf("an empty message id: %w", ErrNotFound)
	}
	var exactShort, prefix []string
	for _, id := range ids {
		short := ShortID(id)
		switch {
		case id == abbrev:
			return id, nil
		case short == abbrev:
			exactShort = append(exactShort, id)
		case strings.HasPrefix(id, abbrev), strings.HasPrefix(short, abbrev):
			prefix = append(prefix, id)
		}
	}
	matches := exactShort
	if len(matches) == 0 {
		matches = prefix
	}
	slices.Sort(matches)
	matches = slices.Compact(matches)
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("no message matches %q: %w", abbrev, ErrNotFound)
	case 1:
		return matches[0], nil
	}
	listed := make([]string, 0, maxListed)
	for _, id := range matches[:min(len(matches), maxListed)] {
		listed = append(listed, ShortID(id))
	}
	more := ""
	if len(matches) > maxListed {
		more = fmt.Sprintf(" and %d more", len(matches)-maxListed)
	}
	return "", fmt.Errorf("%w %q: matches %d messages: %s%s; give more of it",
		ErrAmbiguousID, abbrev, len(matches), strings.Join(listed, ", "), more)
}

// IDs returns the ids of the messages in the box, waiting, in flight or
// done, sorted, without reading them.
func (b *Box) IDs() ([]string, error) {
	var ids []string
	for _, sub := range []string{dirNew, dirCur, dirDone} {
		names, err := b.names(sub)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("list the ids in %s: %w", b.Dir, err)
		}
		ids = append(ids, names...)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Resolve returns the id of the message of the box that abbrev names
// (ResolveID over IDs), with ResolveID's errors.
func (b *Box) Resolve(abbrev string) (string, error) {
	ids, err := b.IDs()
	if err != nil {
		return "", err
	}
	return ResolveID(ids, abbrev)
}
