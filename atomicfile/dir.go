package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink is matched (errors.Is) by every error returned because a path
// that must not be a symbolic link was one. The error itself is a
// *LinkError naming the link.
var ErrSymlink = errors.New("symbolic link refused")

// LinkError reports a symbolic link (or another non-directory, non-regular
// entry such as a FIFO) found where nothing may be followed through it. Its
// message names the path and says to remove it.
type LinkError struct {
	Path string // the offending entry
	What string // "a symbolic link", "a FIFO", ...
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is %s: refusing to open, create, rename or chmod anything through it; remove it (rm %s) and try again", e.Path, e.What, e.Path)
}

// Is makes errors.Is(err, ErrSymlink) true.
func (e *LinkError) Is(target error) bool { return target == ErrSymlink }

// Dir is an open directory whose entries are opened, created, renamed,
// removed and chmodded relative to its file descriptor (openat, renameat,
// unlinkat ...), never through a symbolic link:
//
//   - the directory itself was opened with O_NOFOLLOW|O_DIRECTORY, so it is
//     not a link, and a link swapped in for it later does not redirect
//     anything done through the Dir;
//   - every entry name is a single path component, opened with O_NOFOLLOW:
//     an entry that is a symbolic link is refused with a *LinkError (as is a
//     FIFO, a socket or a device where a regular file is expected).
//
// A Dir is safe for concurrent use. Its owner (whoever opened it) must Close
// it.
type Dir struct {
	f    *os.File
	path string
}

// OpenDir opens the directory path. The final component of path must not be
// a symbolic link (a *LinkError otherwise); the components before it are
// resolved as usual (they are trusted). Use OpenDirBeneath to refuse links in
// several components.
func OpenDir(path string) (*Dir, error) {
	path = filepath.Clean(path)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, dirOpenError(path, err)
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

// OpenDirBeneath opens the directory root/rel, refusing a symbolic link in
// every component of rel: root is trusted (it and its ancestors may be
// links), rel is walked one component at a time with O_NOFOLLOW. rel must be
// relative and must not contain ".."; "" or "." opens root itself.
//
// With create, missing directories of rel are created with DirPerm (0700,
// exactly) and the parent of each is fsynced, as MkdirAll does; root must
// exist. Existing directories keep their mode.
func OpenDirBeneath(root, rel string, create bool) (*Dir, error) {
	d, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	if rel == "" || rel == "." {
		return d, nil
	}
	sub, err := d.Sub(rel, create)
	d.Close()
	return sub, err
}

func openRoot(root string) (*Dir, error) {
	root = filepath.Clean(root)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open directory %s: %w", root, &os.PathError{Op: "open", Path: root, Err: err})
	}
	return &Dir{f: os.NewFile(uintptr(fd), root), path: root}, nil
}

// Sub opens the directory rel beneath d, refusing a symbolic link in every
// component of rel, as OpenDirBeneath does (with create, missing directories
// are made 0700). The returned Dir is independent of d; close both.
func (d *Dir) Sub(rel string, create bool) (*Dir, error) {
	if filepath.IsAbs(rel) {
		return nil, fmt.Errorf("open directory %s beneath %s: not a relative path", rel, d.path)
	}
	rel = filepath.Clean(rel)
	cur := d
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if name == "." {
			continue
		}
		if name == ".." {
			if cur != d {
				cur.Close()
			}
			return nil, fmt.Errorf("open directory %s beneath %s: \"..\" is not allowed", rel, d.path)
		}
		next, err := cur.openSub(name, create)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	if cur == d {
		fd, err := unix.Dup(d.fd())
		if err != nil {
			return nil, fmt.Errorf("open directory %s: %w", d.path, err)
		}
		unix.CloseOnExec(fd)
		return &Dir{f: os.NewFile(uintptr(fd), d.path), path: d.path}, nil
	}
	return cur, nil
}

// openSub opens (creating if asked) the single directory entry name of d.
func (d *Dir) openSub(name string, create bool) (*Dir, error) {
	path := d.join(name)
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(d.fd(), name, flags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(d.fd(), name, uint32(DirPerm)); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("mkdir %s: %w", path, err)
		} else if err == nil {
			if err := d.Sync(); err != nil {
				return nil, fmt.Errorf("mkdir %s: %w", path, err)
			}
		}
		fd, err = unix.Openat(d.fd(), name, flags, 0)
		if err == nil {
			// Mkdirat applied the umask; the mode must be exactly DirPerm.
			// Done on the opened fd, so a link cannot redirect it.
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err == nil && os.FileMode(st.Mode).Perm() != DirPerm && st.Uid == uint32(os.Getuid()) {
				if err := unix.Fchmod(fd, uint32(DirPerm)); err != nil {
					unix.Close(fd)
					return nil, fmt.Errorf("chmod %s: %w", path, err)
				}
			}
		}
	}
	if err != nil {
		return nil, dirOpenError(path, err)
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

// dirOpenError turns the ELOOP/ENOTDIR of an O_NOFOLLOW|O_DIRECTORY open of
// a link into a *LinkError.
func dirOpenError(path string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return &LinkError{Path: path, What: "a symbolic link"}
		}
	}
	return fmt.Errorf("open directory %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
}

// Path returns the path the directory was opened by (for messages).
func (d *Dir) Path() string { return d.path }

// Close closes the directory. It is idempotent.
func (d *Dir) Close() error {
	if err := d.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close directory %s: %w", d.path, err)
	}
	return nil
}

// Sync fsyncs the directory, making the creation, renaming and removal of
// its entries durable; EINVAL (a file system that cannot) counts as success.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("sync dir %s: %w", d.path, err)
	}
	return nil
}

func (d *Dir) fd() int { return int(d.f.Fd()) }

func (d *Dir) join(name string) string { return filepath.Join(d.path, name) }

// checkName rejects names that are not a single component.
func (d *Dir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%s: %q is not a file name", d.path, name)
	}
	return nil
}

// OpenFile opens the regular file name in d with flag (os.O_* values) and,
// when it creates the file, perm. O_NOFOLLOW and O_CLOEXEC are always added:
// if name is a symbolic link it is refused with a *LinkError (wrapped), as
// is any entry that is not a regular file (a FIFO planted there cannot block
// the caller: the open does not wait). With O_CREATE the file's permission
// bits are set to perm exactly (the umask does not apply), also when it
// already existed with other bits. It never blocks on anything but the disk.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	path := d.join(name)
	fd, err := unix.Openat(d.fd(), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, &LinkError{Path: path, What: "a symbolic link"}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &LinkError{Path: path, What: fileKind(st.Mode)}
	}
	if flag&os.O_CREATE != 0 && os.FileMode(st.Mode).Perm() != perm.Perm() {
		if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	default:
		return "not a regular file"
	}
}

// ReadFile reads the regular file name in d, refusing a symbolic link or
// another non-regular file as OpenFile does.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return b, nil
}

// Rename renames the entry oldname of d to newname in d (renameat). Rename
// never follows a link in either name: a link named oldname is moved as a
// link, and a link at newname is replaced, not written through. It does not
// fsync d.
func (d *Dir) Rename(oldname, newname string) error {
	if err := d.checkName(oldname); err != nil {
		return err
	}
	if err := d.checkName(newname); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), oldname, d.fd(), newname); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(oldname), New: d.join(newname), Err: err}
	}
	return nil
}

// Remove removes the entry name of d: a file, a symbolic link (the link,
// not its target) or an empty directory, as os.Remove does. A missing entry
// is an error matching fs.ErrNotExist. It does not fsync d.
func (d *Dir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd(), name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if rerr := unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR); rerr == nil || !errors.Is(rerr, unix.ENOTDIR) {
			err = rerr
		}
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// Chmod sets the permission bits of the entry name of d, which may be of any
// type but a symbolic link (refused with a *LinkError). The entry is pinned
// with an O_PATH|O_NOFOLLOW descriptor first, so a link swapped in cannot
// redirect the change.
func (d *Dir) Chmod(name string, perm os.FileMode) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	path := d.join(name)
	fd, err := unix.Openat(d.fd(), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &LinkError{Path: path, What: "a symbolic link"}
	}
	// An O_PATH descriptor cannot be fchmodded; its /proc name reaches the
	// very inode it pins.
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(perm.Perm())); err != nil {
		return &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return nil
}

// ProcPath returns a path that names the entry name of d through d's file
// descriptor (/proc/self/fd/N/name), for system calls that take only a path
// (bind(2) of a unix socket): the directory cannot be redirected by a link.
// It is valid while d is open.
func (d *Dir) ProcPath(name string) string {
	return "/proc/self/fd/" + strconv.Itoa(d.fd()) + "/" + name
}

// WriteFile atomically replaces the entry name of d with data, as the
// package-level WriteFile does, with every step relative to d: the temporary
// file is created with O_EXCL|O_NOFOLLOW, renamed over name with renameat,
// and d is fsynced. If name exists as a symbolic link it is refused with a
// *LinkError and nothing is written.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) error {
	return writeAt(d, name, d, perm, replaceFile, writeBytes(data))
}

// WriteJSON atomically replaces the entry name of d with v encoded as
// WriteJSON encodes it, as Dir.WriteFile does.
func (d *Dir) WriteJSON(name string, v any, perm os.FileMode) error {
	b, err := encodeJSON(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", d.join(name), err)
	}
	return d.WriteFile(name, b, perm)
}

// OpenFile opens the regular file path as Dir.OpenFile does (O_NOFOLLOW,
// regular files only, perm exact with O_CREATE), within the directory of
// path opened with OpenDir: neither the file nor its directory may be a
// symbolic link (a *LinkError); the directory's ancestors are trusted.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	d, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.OpenFile(filepath.Base(path), flag, perm)
}
