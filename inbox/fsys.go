package inbox

import (
	"errors"
	"io/fs"

	"github.com/battyhq/batty/atomicfile"
)

// Every file operation of the package goes through an atomicfile.Dir
// opened without following symbolic links, component by component from
// the store's root: nothing under the root is ever opened, created,
// renamed, removed or chmodded through a link, even when a link appears
// between a check and a use. Agents may write the inboxes (they run `batty
// send`), so a link there could otherwise point a write of batty's
// anywhere the user may write. A link found gives an *atomicfile.LinkError
// (errors.Is(err, atomicfile.ErrSymlink)) naming it.

// exists reports whether d/name exists (a link counts; it is not followed).
func exists(d *atomicfile.Dir, name string) (bool, error) {
	_, err := d.Lstat(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// removeEntry removes the entry d/name (a link is removed, not followed);
// a missing entry is not an error. It does not sync d.
func removeEntry(d *atomicfile.Dir, name string) error {
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
