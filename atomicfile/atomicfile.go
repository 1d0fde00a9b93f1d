// Package atomicfile writes files atomically and durably: a reader, or a
// machine restarted after a crash or a power loss, sees either the old
// content of a file or the new one, never a mix, and a write that returned
// nil is on disk.
//
// Every function is safe for concurrent use by any number of goroutines and
// processes: temporary files get unique names (created with O_EXCL), and the
// final step is a single rename(2) or link(2). Every function blocks until
// the data and the directory entries involved have been flushed with fsync.
//
// Nothing is opened, created, renamed or chmodded through a symbolic link:
// the directory a function works in is opened with O_NOFOLLOW (so it must
// not be a link), every file in it is named relative to that descriptor
// (openat, renameat, linkat) and opened with O_NOFOLLOW, and a target that
// is a link is refused (Dir.WriteVia alone replaces a link at its target
// name, which rename(2) does without following it). A refusal is a
// *LinkError, matched by
// errors.Is(err, ErrSymlink), naming the link and saying to remove it.
// OpenDir trusts the ancestors of the directory it opens; OpenDirBeneath
// also refuses links between a trusted root and the directory, which is
// what a state directory that untrusted programs can write needs.
package atomicfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// DefaultPerm is the permission of the files written when perm is 0.
const DefaultPerm os.FileMode = 0o600

// DirPerm is the permission of the directories MkdirAll creates.
const DirPerm os.FileMode = 0o700

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// writeBytes returns a write func for writeAt that writes data.
func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// writeHow says what writeAt does with an existing entry at the name.
type writeHow int

const (
	// replaceFile renames over the name, but refuses a symbolic link there
	// (a *LinkError), which makes a planted link visible instead of
	// silently dropping it.
	replaceFile writeHow = iota
	// replaceAny renames over whatever the name is: rename(2) replaces a
	// link itself, never its target.
	replaceAny
	// createNew never replaces: linkat(2), fs.ErrExist if the name exists.
	createNew
)

// writeAt is write relative to open directories: name in d, the temporary
// file in td (on the same file system), its content written by write.
func writeAt(d *Dir, name string, td *Dir, perm os.FileMode, how writeHow, write func(io.Writer) error) (err error) {
	path := d.join(name)
	if err := d.checkName(name); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	perm = perm.Perm()
	if perm == 0 {
		perm = DefaultPerm
	}
	if how == replaceFile {
		var st unix.Stat_t
		if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return fmt.Errorf("write %s: %w", path, &LinkError{Path: path, What: "a symbolic link"})
		}
	}
	f, tmp, err := createTemp(td, "."+name+".", ".tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	closed := false
	defer func() {
		if !closed {
			f.Close()
		}
		if err != nil {
			unix.Unlinkat(td.fd(), tmp, 0)
		}
	}()
	// Set the mode on the descriptor: exact (no umask), and no link can
	// redirect it.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if how == createNew {
		// linkat without AT_SYMLINK_FOLLOW: an existing name, link or not,
		// is EEXIST.
		err := unix.Linkat(td.fd(), tmp, d.fd(), name, 0)
		// The temporary name is not needed any more, whatever happened; if
		// removing it fails, it is only an orphan in tmpDir.
		unix.Unlinkat(td.fd(), tmp, 0)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, &os.LinkError{Op: "link", Old: td.join(tmp), New: path, Err: err})
		}
	} else if err := unix.Renameat(td.fd(), tmp, d.fd(), name); err != nil {
		return fmt.Errorf("write %s: %w", path, &os.LinkError{Op: "rename", Old: td.join(tmp), New: path, Err: err})
	}
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// createTemp creates a new file prefix+<random>+suffix in d with mode 0600,
// O_EXCL and O_NOFOLLOW, and returns it with its name.
func createTemp(d *Dir, prefix, suffix string) (*os.File, string, error) {
	for range 10000 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10) + suffix
		fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", &os.PathError{Op: "create", Path: d.join(name), Err: err}
		}
		return os.NewFile(uintptr(fd), d.join(name)), name, nil
	}
	return nil, "", fmt.Errorf("create temporary file in %s: too many names taken", d.path)
}

// MkdirAll creates dir and any missing parents with permission DirPerm
// (0700, exactly: the umask does not apply) and fsyncs the parent of each
// directory it creates, so that the new directories survive a crash.
// Directories that already exist are left as they are. It returns nil if dir
// already is a directory, and an error if dir or a parent exists but is not
// a directory. It is idempotent and safe to call concurrently with itself
// for overlapping paths.
//
// dir must not be a symbolic link (a *LinkError, matching ErrSymlink). The
// existing ancestors of the directories it creates are trusted and may be
// links; below the deepest existing one it creates and walks every
// directory with O_NOFOLLOW (see OpenDirBeneath), so nothing it creates can
// be redirected by a link.
func MkdirAll(dir string) error {
	dir = filepath.Clean(dir)
	// Find the deepest existing ancestor.
	base := dir
	for {
		fi, err := os.Lstat(base)
		if err == nil {
			if fi.Mode()&fs.ModeSymlink != 0 && base == dir {
				return fmt.Errorf("mkdir %s: %w", dir, &LinkError{Path: dir, What: "a symbolic link"})
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
		parent := filepath.Dir(base)
		if parent == base {
			break
		}
		base = parent
	}
	if base == dir {
		d, err := OpenDir(dir)
		if err != nil {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
		return d.Close()
	}
	rel, err := filepath.Rel(base, dir)
	if err != nil {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	d, err := OpenDirBeneath(base, rel, true)
	if err != nil {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	return d.Close()
}
