package inbox

import (
	"errors"
	"fmt"
	"io/fs"
)

// Outcomes calls f with the id and the outcome of every message in done/,
// one file at a time (in no particular order), so memory stays bounded
// however long the history. It only reads: a file that does not decode is
// skipped and reported in the returned error (a listing moves it to bad/).
// Safe for concurrent use.
func (b *Box) Outcomes(f func(id string, o Outcome)) error {
	ids, err := b.names(dirDone)
	if err != nil {
		return fmt.Errorf("outcomes in %s: %w", b.Dir, err)
	}
	var errs []error
	for _, id := range ids {
		m, err := b.read(dirDone, id, false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, fmt.Errorf("outcomes in %s: %w", b.Dir, err))
		default:
			f(m.ID, *m.Outcome)
		}
	}
	return errors.Join(errs...)
}
