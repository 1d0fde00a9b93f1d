// Package atomicfile writes files atomically and durably: a reader, or a
// machine restarted after a crash or a power loss, sees either the old
// content of a file or the new one, never a mix, and a write that returned
// nil is on disk.
//
// Every function is safe for concurrent use by any number of goroutines and
// processes: temporary files get unique names (os.CreateTemp), and the final
// step is a single rename(2) or link(2). Every function blocks until the data
// and the directory entries involved have been flushed with fsync.
package atomicfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultPerm is the permission of the files written when perm is 0.
const DefaultPerm os.FileMode = 0o600

// DirPerm is the permission of the directories MkdirAll creates.
const DirPerm os.FileMode = 0o700

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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write %s: encode JSON: %w", path, err)
	}
	return WriteFile(path, buf.Bytes(), perm)
}

func write(path, tmpDir string, data []byte, perm os.FileMode, exclusive bool) (err error) {
	dir := filepath.Dir(path)
	if tmpDir == "" {
		tmpDir = dir
	}
	perm = perm.Perm()
	if perm == 0 {
		perm = DefaultPerm
	}
	f, err := os.CreateTemp(tmpDir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if !closed {
			f.Close()
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600; Chmod is not filtered by the umask.
	if perm != 0o600 {
		if err := f.Chmod(perm); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if exclusive {
		err := os.Link(tmp, path)
		// The temporary name is not needed any more, whatever happened; if
		// removing it fails, it is only an orphan in tmpDir.
		os.Remove(tmp)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	} else if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, making the creation, renaming and
// removal of its entries durable. File systems that cannot sync a directory
// (EINVAL) count as success: there is nothing more to do on them.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	cerr := d.Close()
	if err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	if cerr != nil {
		return fmt.Errorf("sync dir %s: %w", dir, cerr)
	}
	return nil
}

// MkdirAll creates dir and any missing parents with permission DirPerm
// (0700, exactly: the umask does not apply) and fsyncs the parent of each
// directory it creates, so that the new directories survive a crash.
// Directories that already exist are left as they are. It returns nil if dir
// already is a directory, and an error if dir or a parent exists but is not
// a directory. It is idempotent and safe to call concurrently with itself
// for overlapping paths.
func MkdirAll(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("mkdir %s: %w", dir, syscall.ENOTDIR)
		}
		return nil
	}
	// Collect the missing directories, deepest first.
	var missing []string
	for d := dir; ; {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("mkdir %s: %s: %w", dir, d, syscall.ENOTDIR)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, DirPerm); err != nil {
			if errors.Is(err, fs.ErrExist) {
				if fi, serr := os.Stat(d); serr == nil && fi.IsDir() {
					continue // created concurrently by someone else
				}
			}
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
		if err := os.Chmod(d, DirPerm); err != nil {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
		if err := SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("mkdir %s: %w", dir, err)
		}
	}
	return nil
}
