package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// FileInfo describes an entry of a Dir as Lstat found it: a symbolic link
// is described, not followed. It implements fs.FileInfo; Sys returns the
// *unix.Stat_t.
type FileInfo struct {
	name string
	st   unix.Stat_t
}

// Name is the entry's name in its directory.
func (fi *FileInfo) Name() string { return fi.name }

// Size is the entry's length in bytes.
func (fi *FileInfo) Size() int64 { return fi.st.Size }

// Mode is the entry's type and permission bits.
func (fi *FileInfo) Mode() fs.FileMode { return modeOf(fi.st.Mode) }

// ModTime is the time the entry's content was last modified.
func (fi *FileInfo) ModTime() time.Time { return timeOf(fi.st.Mtim) }

// ChangeTime is the time the entry's inode last changed (ctime): content,
// mode, links or name. Unlike ModTime, no unprivileged process can set it
// back.
func (fi *FileInfo) ChangeTime() time.Time { return timeOf(fi.st.Ctim) }

// IsDir reports whether the entry is a directory.
func (fi *FileInfo) IsDir() bool { return fi.Mode().IsDir() }

// Sys returns the *unix.Stat_t the description was made from.
func (fi *FileInfo) Sys() any { return &fi.st }

func timeOf(ts unix.Timespec) time.Time {
	sec, nsec := ts.Unix()
	return time.Unix(sec, nsec)
}

// modeOf converts a stat mode into an fs.FileMode.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	return mode
}

// Lstat describes the entry name of d without following it (fstatat with
// AT_SYMLINK_NOFOLLOW): a symbolic link is reported as one. A missing entry
// is an error matching fs.ErrNotExist. It only reads.
func (d *Dir) Lstat(name string) (*FileInfo, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	fi := &FileInfo{name: name}
	if err := unix.Fstatat(d.fd(), name, &fi.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: d.join(name), Err: err}
	}
	return fi, nil
}

// Names returns the names of the entries of d, unsorted, without "." and
// "..". It reads through a descriptor of its own, so concurrent calls do
// not disturb each other. It only reads.
func (d *Dir) Names() ([]string, error) {
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read dir %s: %w", d.path, err)
	}
	return names, nil
}

// ErrLocked is returned by Lock without wait when another open directory
// holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock takes an exclusive advisory lock (flock(2)) on d, held until d is
// closed. With wait it blocks until the lock is free; without, a lock held
// through another open directory (of this process or another) gives
// ErrLocked at once. Locking d again while it holds the lock is a no-op.
func (d *Dir) Lock(wait bool) error {
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err := unix.Flock(d.fd(), how)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return ErrLocked
		default:
			return fmt.Errorf("lock %s: %w", d.path, err)
		}
	}
}

// ReadText returns the content of the regular file name in d as a string
// held once in memory, refusing a symbolic link or another non-regular
// file as OpenFile does. With size >= 0 the file must hold exactly size
// bytes, when opened and when read (a file that changes meanwhile is an
// error); size < 0 accepts any size. The content must be valid UTF-8. It
// only reads.
func (d *Dir) ReadText(name string, size int64) (string, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if size >= 0 && fi.Size() != size {
		return "", fmt.Errorf("read %s: %d bytes, want %d", f.Name(), fi.Size(), size)
	}
	want := fi.Size()
	var b strings.Builder
	b.Grow(int(want))
	n, err := io.Copy(&b, io.LimitReader(f, want+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if n != want {
		return "", fmt.Errorf("read %s: changed while read (%d bytes, want %d)", f.Name(), n, want)
	}
	s := b.String()
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("read %s: not valid UTF-8", f.Name())
	}
	return s, nil
}
