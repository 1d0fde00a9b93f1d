package inbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
)

// Every file operation of the package goes through a directory file
// descriptor opened without following symbolic links, component by
// component from the store's root: nothing under the root is ever opened,
// created, renamed, removed or chmodded through a link, even when a link
// appears between a check and a use. Agents may write the inboxes (they
// run `batty send`), so a link there could otherwise point a write of
// batty's anywhere the user may write. A link found gives an
// *atomicfile.LinkError (errors.Is(err, atomicfile.ErrSymlink)) naming it.

// dir is an open directory, reached without following any link.
type dir struct {
	f    *os.File
	fd   int
	path string
}

func (d *dir) close() {
	if d != nil {
		d.f.Close()
	}
}

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openRootDir opens the directory path; its last component must not be a
// link (the ones above it may). With create, a missing last component is
// created (0700) and its parent synced.
func openRootDir(path string, create bool) (*dir, error) {
	parent, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	pd := &dir{f: parent, fd: int(parent.Fd()), path: filepath.Dir(path)}
	return pd.sub(filepath.Base(path), create)
}

// sub opens the subdirectory name of d without following a link; with
// create, a missing one is created with permission 0700 exactly and d is
// synced. A link or other non-directory gives an *atomicfile.LinkError.
func (d *dir) sub(name string, create bool) (*dir, error) {
	path := filepath.Join(d.path, name)
	for try := 0; ; try++ {
		fd, err := unix.Openat(d.fd, name, dirFlags, 0)
		if err == nil {
			return &dir{f: os.NewFile(uintptr(fd), path), fd: fd, path: path}, nil
		}
		if err != unix.ENOENT || !create || try > 0 {
			return nil, d.classify(name, err)
		}
		if err := unix.Mkdirat(d.fd, name, 0o700); err != nil && err != unix.EEXIST {
			return nil, fmt.Errorf("mkdir %s: %w", path, err)
		} else if err == nil {
			nd, err := d.sub(name, false)
			if err != nil {
				return nil, err
			}
			// Mkdirat is filtered by the umask; the mode must be exact.
			if err := unix.Fchmod(nd.fd, 0o700); err != nil {
				nd.close()
				return nil, fmt.Errorf("chmod %s: %w", path, err)
			}
			if err := d.sync(); err != nil {
				nd.close()
				return nil, err
			}
			return nd, nil
		}
	}
}

// classify turns the error of opening d/name as a directory into an
// *atomicfile.LinkError when name is a link or not a directory.
func (d *dir) classify(name string, err error) error {
	path := filepath.Join(d.path, name)
	if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EMLINK {
		if mode, serr := d.lstat(name); serr == nil {
			what := "a symbolic link"
			switch {
			case mode&fs.ModeSymlink != 0:
			case mode.IsRegular():
				what = "a regular file, not a directory"
			default:
				what = fmt.Sprintf("not a directory (%v)", mode.Type())
			}
			return &atomicfile.LinkError{Path: path, What: what}
		}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// lstat returns the mode of d/name without following a link.
func (d *dir) lstat(name string) (fs.FileMode, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, &fs.PathError{Op: "lstat", Path: filepath.Join(d.path, name), Err: err}
	}
	return modeOf(st.Mode), nil
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

// exists reports whether d/name exists (a link counts; it is not followed).
func (d *dir) exists(name string) (bool, error) {
	_, err := d.lstat(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, err
	}
}

// names returns the entry names of d, unsorted.
func (d *dir) names() ([]string, error) {
	// A fresh descriptor: reading a directory moves its offset.
	fd, err := unix.Openat(d.fd, ".", dirFlags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read dir %s: %w", d.path, err)
	}
	return names, nil
}

// openFile opens d/name for reading, never following a link and never
// blocking on a FIFO.
func (d *dir) openFile(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
}

// remove removes the entry d/name (a link is removed, not followed); a
// missing entry is not an error. It does not sync d.
func (d *dir) remove(name string) error {
	err := unix.Unlinkat(d.fd, name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	}
	if err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// sync fsyncs d, making the changes of its entries durable. File systems
// that cannot sync a directory (EINVAL) count as success.
func (d *dir) sync() error {
	if err := unix.Fsync(d.fd); err != nil && err != unix.EINVAL {
		return fmt.Errorf("sync dir %s: %w", d.path, err)
	}
	return nil
}

// writeTemp creates a new file in d (exclusively, never through a link)
// with permission perm exactly, fills it with write, fsyncs and closes it,
// and returns its name.
func (d *dir) writeTemp(base string, perm uint32, write func(*os.File) error) (name string, err error) {
	for try := 0; ; try++ {
		var r [6]byte
		rand.Read(r[:])
		name = "." + base + "." + hex.EncodeToString(r[:]) + ".tmp"
		fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if err == unix.EEXIST && try < 10 {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "create", Path: filepath.Join(d.path, name), Err: err}
		}
		f := os.NewFile(uintptr(fd), filepath.Join(d.path, name))
		// The umask does not apply.
		err = unix.Fchmod(fd, perm)
		if err == nil {
			err = write(f)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			d.remove(name)
			return "", fmt.Errorf("write %s: %w", filepath.Join(d.path, name), err)
		}
		return name, nil
	}
}

// createFile writes data durably as d/name via a temporary file in tmp:
// exclusively (a link, fs.ErrExist if name exists) or replacing what is
// there (a rename). Readers never see a partial file. tmp and d must be on
// one file system.
func createFile(tmp, d *dir, name string, data []byte, exclusive bool) error {
	tname, err := tmp.writeTemp(name, filePerm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	path := filepath.Join(d.path, name)
	if exclusive {
		err = unix.Linkat(tmp.fd, tname, d.fd, name, 0)
		// The temporary name is not needed any more, whatever happened.
		tmp.remove(tname)
		if err == unix.EEXIST {
			return &fs.PathError{Op: "link", Path: path, Err: fs.ErrExist}
		}
	} else {
		err = unix.Renameat(tmp.fd, tname, d.fd, name)
		if err != nil {
			tmp.remove(tname)
		}
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return d.sync()
}

// moveFile moves src/name to dst/newName atomically without ever replacing
// an existing dst/newName (fs.ErrExist); at no instant do both names exist
// where the file system can rename that way (Linux' RENAME_NOREPLACE). A
// missing source gives fs.ErrNotExist. It syncs dst, then src.
func moveFile(src *dir, name string, dst *dir, newName string) error {
	if err := renameNoReplace(src.fd, name, dst.fd, newName); err != nil {
		path := filepath.Join(dst.path, newName)
		switch err {
		case unix.EEXIST:
			return &fs.PathError{Op: "rename", Path: path, Err: fs.ErrExist}
		case unix.ENOENT:
			return &fs.PathError{Op: "rename", Path: filepath.Join(src.path, name), Err: fs.ErrNotExist}
		}
		return &fs.PathError{Op: "rename", Path: path, Err: err}
	}
	if err := dst.sync(); err != nil {
		return err
	}
	return src.sync()
}

// renameNoReplace renames without replacing: renameat2(RENAME_NOREPLACE)
// where supported, else a link and an unlink (a crash in between leaves
// two names; Reconcile resolves that).
func renameNoReplace(oldfd int, old string, newfd int, new string) error {
	err := renameat2NoReplace(oldfd, old, newfd, new)
	if err != unix.EINVAL && err != unix.ENOSYS && err != unix.ENOTSUP {
		return err
	}
	if err := unix.Linkat(oldfd, old, newfd, new, 0); err != nil {
		return err
	}
	return unix.Unlinkat(oldfd, old, 0)
}

// ctime returns the status change time of st.
func ctime(st *unix.Stat_t) time.Time {
	sec, nsec := st.Ctim.Unix()
	return time.Unix(sec, nsec)
}
