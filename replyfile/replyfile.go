// Package replyfile carries a reply too large for a protocol frame: the
// shim writes it whole into a directory its parent gives it (the daemon:
// .batty/replies/<agent>; batty chat: a private temporary directory), and
// the parent takes it (Dir.Take: reads it, then removes the file).
//
// A Dir is an atomicfile.Dir, so nothing is opened, created, renamed or
// removed through a symbolic link (a link met gives an
// *atomicfile.LinkError, which errors.Is matches to ErrLink). Files are
// 0600, directories 0700, and a file appears whole or not at all
// (temporary file, fsync, rename, fsync of the directory).
package replyfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/inbox"
)

// ErrLink is matched (errors.Is) by the errors returned because a
// directory or file was a symbolic link; it is atomicfile.ErrSymlink.
var ErrLink = atomicfile.ErrSymlink

// filePerm is the permission of reply files.
const filePerm = 0o600

// Dir is an open reply directory. Its methods are safe for concurrent use
// on distinct names; the owner closes it.
type Dir struct {
	d *atomicfile.Dir
}

// Open opens the existing directory path without following a symbolic link
// at its last element.
func Open(path string) (*Dir, error) {
	d, err := atomicfile.OpenDir(path)
	if err != nil {
		return nil, fmt.Errorf("open reply directory %s: %w", path, err)
	}
	return &Dir{d: d}, nil
}

// OpenUnder opens root/elems... : root is trusted (it may be a link the
// user made, a .batty on another disk), then every element is opened
// relative to its parent with O_NOFOLLOW, so none of them may be a
// symbolic link. Elements are single, non-hidden names. With create,
// missing elements are created (0700, the parent fsynced).
func OpenUnder(root string, create bool, elems ...string) (*Dir, error) {
	for _, e := range elems {
		if !validName(e) {
			return nil, fmt.Errorf("open reply directory %s: invalid element %q", filepath.Join(root, filepath.Join(elems...)), e)
		}
	}
	d, err := atomicfile.OpenDirBeneath(root, filepath.Join(elems...), create)
	if err != nil {
		return nil, fmt.Errorf("open reply directory %s: %w", filepath.Join(root, filepath.Join(elems...)), err)
	}
	return &Dir{d: d}, nil
}

// Path is the directory's path, as given.
func (d *Dir) Path() string { return d.d.Path() }

// File is the path of the file name in the directory (for messages; the
// directory's methods never use it).
func (d *Dir) File(name string) string { return filepath.Join(d.Path(), name) }

// Close closes the directory. Idempotent.
func (d *Dir) Close() error {
	if d == nil || d.d == nil {
		return nil
	}
	return d.d.Close()
}

// Name is the file name of the reply to message id: "<id>.reply" when id
// is a valid message id (inbox.ValidID), else a digest of id. It is a pure
// function.
func Name(id string) string {
	if inbox.ValidID(id) {
		return id + ".reply"
	}
	sum := sha256.Sum256([]byte(id))
	return "id-" + hex.EncodeToString(sum[:16]) + ".reply"
}

// validName reports whether s is a single, non-hidden path element.
func validName(s string) bool {
	return s != "" && s[0] != '.' && !strings.ContainsAny(s, "/\x00") && len(s) <= 255
}

// Write stores text as the file name, atomically and durably, replacing a
// file of that name (a symbolic link there is replaced, never written
// through); see atomicfile.Dir.WriteVia. text is written from its own
// memory (no copy).
func (d *Dir) Write(name, text string) error {
	if !validName(name) {
		return fmt.Errorf("write reply %s: invalid name", d.File(name))
	}
	err := d.d.WriteVia(nil, name, filePerm, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
	if err != nil {
		return fmt.Errorf("write reply: %w", err)
	}
	return nil
}

// Read returns the content of the file name, which must be a regular file
// of exactly size bytes (size < 0: any size) holding valid UTF-8. It holds
// the text once in memory.
func (d *Dir) Read(name string, size int64) (string, error) {
	if !validName(name) {
		return "", fmt.Errorf("read reply %s: invalid name", d.File(name))
	}
	s, err := d.d.ReadText(name, size)
	if err != nil {
		return "", fmt.Errorf("read reply: %w", err)
	}
	return s, nil
}

// Remove removes the file name (not following a link); a missing file is
// not an error. It does not fsync the directory: a removal lost in a crash
// leaves a reply that Clear removes.
func (d *Dir) Remove(name string) error {
	if !validName(name) {
		return fmt.Errorf("remove reply %s: invalid name", d.File(name))
	}
	if err := d.d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove reply: %w", err)
	}
	return nil
}

// ErrNotRemoved is matched (errors.Is) by the error Take returns with the
// text when it read the reply but could not remove its file.
var ErrNotRemoved = errors.New("reply file not removed")

// Take returns the reply to message id that a shim announced in the file
// path, and removes the file: the one way a parent collects a reply. path
// must be d.File(Name(id)), and the file a regular file of exactly size
// bytes (size < 0: any size) of valid UTF-8. When path is another file or
// the file cannot be read, Take returns "" and an error, and the file stays
// (Clear removes it). When the file was read but not removed, Take returns
// the text and an error wrapping ErrNotRemoved.
func (d *Dir) Take(path, id string, size int64) (string, error) {
	name := Name(id)
	if path != d.File(name) {
		return "", fmt.Errorf("reply file %s is not %s", path, d.File(name))
	}
	text, err := d.Read(name, size)
	if err != nil {
		return "", err
	}
	if err := d.Remove(name); err != nil {
		return text, fmt.Errorf("%w: %w", ErrNotRemoved, err)
	}
	return text, nil
}

// Clear removes every entry of the directory but subdirectories (stale
// replies and temporary files a crash left; links are removed, not
// followed) and returns how many it removed.
func (d *Dir) Clear() (int, error) {
	names, err := d.d.Names()
	if err != nil {
		return 0, fmt.Errorf("clear reply directory: %w", err)
	}
	n := 0
	var errs []error
	for _, name := range names {
		fi, err := d.d.Lstat(name)
		if err == nil && fi.IsDir() {
			continue
		}
		if err == nil {
			err = d.d.Remove(name)
		}
		switch {
		case err == nil:
			n++
		case errors.Is(err, fs.ErrNotExist):
		default:
			errs = append(errs, fmt.Errorf("clear reply directory: %w", err))
		}
	}
	return n, errors.Join(errs...)
}
