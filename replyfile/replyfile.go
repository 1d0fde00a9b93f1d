// Package replyfile carries a reply too large for a protocol frame: the
// shim writes it whole into a directory its parent gives it (the daemon:
// .batty/replies/<agent>; batty chat: a private temporary directory), and
// the parent reads it and removes it once the outcome is recorded.
//
// Nothing is opened, created, renamed or removed through a symbolic link:
// a Dir is opened with O_NOFOLLOW|O_DIRECTORY (OpenUnder walks every
// element below a trusted root that way), and every file is reached
// relative to that descriptor with O_NOFOLLOW, so a link planted later in
// the directory or above it redirects nothing. Files are 0600, directories
// 0700, and a file appears whole or not at all (temporary file, fsync,
// rename, fsync of the directory).
package replyfile

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// ErrLink is returned (wrapped) when a directory or file is a symbolic link.
var ErrLink = errors.New("is a symbolic link (refused)")

// Dir is an open reply directory. Its methods are safe for concurrent use
// on distinct names; the owner closes it.
type Dir struct {
	f    *os.File
	path string
}

// Open opens the existing directory path without following a symbolic link
// at its last element.
func Open(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open reply directory %s: %w", path, dirErr(err, unix.AT_FDCWD, path))
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

// OpenUnder opens root/elems... : root is trusted and opened normally, then
// every element is opened relative to its parent with O_NOFOLLOW, so none
// of them may be a symbolic link. With create, missing elements are created
// (0700, the parent fsynced).
func OpenUnder(root string, create bool, elems ...string) (*Dir, error) {
	d, err := Open(root)
	if err != nil {
		// root itself may be a link the user made (a .batty on another
		// disk): it is trusted, so follow it.
		fd, err2 := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err2 != nil {
			return nil, err
		}
		d = &Dir{f: os.NewFile(uintptr(fd), root), path: root}
	}
	for _, e := range elems {
		if !validName(e) {
			d.Close()
			return nil, fmt.Errorf("open reply directory %s: invalid element %q", filepath.Join(d.path, e), e)
		}
		next, err := d.sub(e, create)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

func (d *Dir) sub(name string, create bool) (*Dir, error) {
	path := filepath.Join(d.path, name)
	for try := 0; ; try++ {
		fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			return &Dir{f: os.NewFile(uintptr(fd), path), path: path}, nil
		}
		if !create || err != unix.ENOENT || try > 0 {
			return nil, fmt.Errorf("open reply directory %s: %w", path, dirErr(err, d.fd(), name))
		}
		if err := unix.Mkdirat(d.fd(), name, 0o700); err != nil && err != unix.EEXIST {
			return nil, fmt.Errorf("create reply directory %s: %w", path, err)
		}
		if err := d.f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
			return nil, fmt.Errorf("create reply directory %s: sync: %w", path, err)
		}
	}
}

// Path is the directory's path, as given.
func (d *Dir) Path() string { return d.path }

// File is the path of the file name in the directory (for messages; the
// directory's methods never use it).
func (d *Dir) File(name string) string { return filepath.Join(d.path, name) }

// Close closes the directory. Idempotent.
func (d *Dir) Close() error {
	if d == nil || d.f == nil {
		return nil
	}
	err := d.f.Close()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

func (d *Dir) fd() int { return int(d.f.Fd()) }

// Name is the file name of the reply to message id: "<id>.reply" when id
// is a plain name ([A-Za-z0-9][A-Za-z0-9._-]*, at most 128 bytes), else a
// digest of id. It is a pure function.
func Name(id string) string {
	if validID(id) {
		return id + ".reply"
	}
	sum := sha256.Sum256([]byte(id))
	return "id-" + hex.EncodeToString(sum[:16]) + ".reply"
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// validName reports whether s is a single, non-hidden path element.
func validName(s string) bool {
	return s != "" && s[0] != '.' && !strings.ContainsAny(s, "/\x00") && len(s) <= 255
}

// Write stores text as the file name, atomically and durably, replacing a
// file of that name: a temporary file (0600, created exclusively without
// following links), fsync, rename, fsync of the directory. text is written
// from its own memory (no copy).
func (d *Dir) Write(name, text string) (err error) {
	path := d.File(name)
	if !validName(name) {
		return fmt.Errorf("write reply %s: invalid name", path)
	}
	var r [8]byte
	rand.Read(r[:])
	tmp := "." + name + "." + hex.EncodeToString(r[:]) + ".tmp"
	fd, err := unix.Openat(d.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("write reply %s: %w", path, linkErr(err))
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.path, tmp))
	defer func() {
		if err != nil {
			f.Close()
			unix.Unlinkat(d.fd(), tmp, 0)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("write reply %s: %w", path, err)
	}
	if _, err := f.WriteString(text); err != nil {
		return fmt.Errorf("write reply %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write reply %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write reply %s: %w", path, err)
	}
	if err := unix.Renameat(d.fd(), tmp, d.fd(), name); err != nil {
		return fmt.Errorf("write reply %s: %w", path, err)
	}
	if err := d.f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("write reply %s: sync directory: %w", path, err)
	}
	return nil
}

// Read returns the content of the file name, which must be a regular file
// of exactly size bytes (size < 0: any size) holding valid UTF-8. It holds
// the text once in memory.
func (d *Dir) Read(name string, size int64) (string, error) {
	path := d.File(name)
	if !validName(name) {
		return "", fmt.Errorf("read reply %s: invalid name", path)
	}
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("read reply %s: %w", path, linkErr(err))
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read reply %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("read reply %s: not a regular file (%v)", path, fi.Mode().Type())
	}
	if size >= 0 && fi.Size() != size {
		return "", fmt.Errorf("read reply %s: %d bytes, want %d", path, fi.Size(), size)
	}
	want := fi.Size()
	var b strings.Builder
	b.Grow(int(want))
	n, err := io.Copy(&b, io.LimitReader(f, want+1))
	if err != nil {
		return "", fmt.Errorf("read reply %s: %w", path, err)
	}
	if n != want {
		return "", fmt.Errorf("read reply %s: changed while read (%d bytes, want %d)", path, n, want)
	}
	s := b.String()
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("read reply %s: not valid UTF-8", path)
	}
	return s, nil
}

// Remove removes the file name (not following a link); a missing file is
// not an error.
func (d *Dir) Remove(name string) error {
	if !validName(name) {
		return fmt.Errorf("remove reply %s: invalid name", d.File(name))
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("remove reply %s: %w", d.File(name), err)
	}
	return nil
}

// Clear removes every file of the directory (stale replies and temporary
// files a crash left) and returns how many it removed. Subdirectories are
// left alone.
func (d *Dir) Clear() (int, error) {
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("clear reply directory %s: %w", d.path, err)
	}
	lf := os.NewFile(uintptr(fd), d.path)
	names, err := lf.Readdirnames(-1)
	lf.Close()
	if err != nil {
		return 0, fmt.Errorf("clear reply directory %s: %w", d.path, err)
	}
	n := 0
	var errs []error
	for _, name := range names {
		err := unix.Unlinkat(d.fd(), name, 0)
		switch err {
		case nil:
			n++
		case unix.ENOENT, unix.EISDIR, unix.EPERM:
		default:
			errs = append(errs, fmt.Errorf("clear reply directory %s: %s: %w", d.path, name, err))
		}
	}
	return n, errors.Join(errs...)
}

// dirErr names the refusal when opening a directory with O_NOFOLLOW met a
// symbolic link (Linux says ENOTDIR when O_DIRECTORY is given too).
func dirErr(err error, dirfd int, name string) error {
	var st unix.Stat_t
	if err == unix.ENOTDIR && unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("%w: %w", ErrLink, err)
	}
	return linkErr(err)
}

// linkErr names the refusal when O_NOFOLLOW met a symbolic link.
func linkErr(err error) error {
	if err == unix.ELOOP {
		return fmt.Errorf("%w: %w", ErrLink, err)
	}
	return err
}
