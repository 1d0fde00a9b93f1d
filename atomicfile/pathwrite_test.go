package atomicfile

// The path-based writers the tests of this package use to drive writeAt:
// batty itself writes through a Dir.

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile atomically replaces path with data. It writes data to a new
// temporary file in the directory of path, fsyncs it, renames it over path
// and fsyncs the directory.
//
// The file gets the permission bits of perm exactly (the umask does not
// apply), or DefaultPerm (0600) when perm is 0. The temporary file is named
// "." + base(path) + ".<random>.tmp"; a crash can leave one behind, never a
// partially written path.
//
// On an error the temporary file is removed and path is untouched, with one
// exception: if only the final fsync of the directory fails, path already
// holds the new content but it may not survive a power loss. Errors name
// path.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, "", data, perm, false)
}

// WriteFileVia is WriteFile with the temporary file created in tmpDir
// instead of the directory of path, so that a crash leaves temporary files
// only in tmpDir. tmpDir must be on the same file system as path ("" means
// the directory of path). Concurrency, permissions and errors are those of
// WriteFile.
func WriteFileVia(path, tmpDir string, data []byte, perm os.FileMode) error {
	return write(path, tmpDir, data, perm, false)
}

// WriteNew creates path with data, atomically and durably, and never
// overwrites: if path already exists it returns an error for which
// errors.Is(err, fs.ErrExist) is true and leaves path untouched. Of many
// concurrent WriteNew calls for one path, from any processes, exactly one
// succeeds.
//
// It writes data to a temporary file in tmpDir ("" means the directory of
// path; it must be on the same file system as path), fsyncs it, hard-links it
// to path, removes the temporary file and fsyncs the directory of path. A
// crash can leave the temporary file behind, never a partially written path.
// Permissions and errors are those of WriteFile.
func WriteNew(path, tmpDir string, data []byte, perm os.FileMode) error {
	return write(path, tmpDir, data, perm, true)
}

// WriteJSON atomically replaces path with v encoded as indented JSON (two
// spaces, HTML characters not escaped) followed by a newline, as WriteFile
// does. If v does not encode, nothing is written.
func WriteJSON(path string, v any, perm os.FileMode) error {
	b, err := encodeJSON(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteFile(path, b, perm)
}

func write(path, tmpDir string, data []byte, perm os.FileMode, exclusive bool) error {
	d, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer d.Close()
	td := d
	if tmpDir != "" && filepath.Clean(tmpDir) != d.path {
		if td, err = OpenDir(tmpDir); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		defer td.Close()
	}
	how := replaceFile
	if exclusive {
		how = createNew
	}
	return writeAt(d, filepath.Base(path), td, perm, how, writeBytes(data))
}

// SyncDir fsyncs the directory dir, making the creation, renaming and
// removal of its entries durable. File systems that cannot sync a directory
// (EINVAL) count as success: there is nothing more to do on them. dir itself
// must not be a symbolic link (a *LinkError).
func SyncDir(dir string) error {
	d, err := OpenDir(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
