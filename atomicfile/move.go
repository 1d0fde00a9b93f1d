package atomicfile

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// WriteVia atomically replaces the entry name of d with what write writes,
// durably: write is called once with a new temporary file created in tmp
// (nil: d; it must be on d's file system) with O_EXCL|O_NOFOLLOW and mode
// perm exactly (0: DefaultPerm); the file is then fsynced, renamed over
// name (renameat) and d is fsynced. Whatever entry name is, a symbolic link
// included, is replaced, never written through (Dir.WriteFile refuses a
// link instead). If write or any step fails, the temporary file is removed
// and name is untouched. write must not keep the writer. Safe for
// concurrent use; the last rename wins.
func (d *Dir) WriteVia(tmp *Dir, name string, perm os.FileMode, write func(io.Writer) error) error {
	if tmp == nil {
		tmp = d
	}
	return writeAt(d, name, tmp, perm, replaceAny, write)
}

// CreateVia creates the entry name of d with what write writes, as WriteVia
// does, but never replaces anything: the temporary file is hard-linked to
// name (linkat, not following links), so an existing entry, a symbolic link
// included, gives an error matching fs.ErrExist and is left untouched. Of
// concurrent CreateVia calls for one name, from any processes, exactly one
// succeeds. Readers never see a partial file.
func (d *Dir) CreateVia(tmp *Dir, name string, perm os.FileMode, write func(io.Writer) error) error {
	if tmp == nil {
		tmp = d
	}
	return writeAt(d, name, tmp, perm, createNew, write)
}

// RenameNoReplace moves the entry name of d to newName in dst (which may be
// d; both on one file system) without ever replacing an entry: an existing
// dst/newName, a symbolic link included, gives an error matching
// fs.ErrExist, a missing name one matching fs.ErrNotExist. Neither name is
// followed: a link named name is moved as the link. Where the system has
// renameat2(RENAME_NOREPLACE) the move is one atomic step and at no instant
// do both names exist; elsewhere it is a link(2) then an unlink(2), and a
// crash in between leaves both (the caller reconciles). When it returns nil
// the move is durable: dst, then d, has been fsynced.
func (d *Dir) RenameNoReplace(name string, dst *Dir, newName string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	if err := dst.checkName(newName); err != nil {
		return err
	}
	if err := renameNoReplace(d.fd(), name, dst.fd(), newName); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(name), New: dst.join(newName), Err: err}
	}
	if err := dst.Sync(); err != nil {
		return err
	}
	if dst == d {
		return nil
	}
	return d.Sync()
}

// renameNoReplace renames without replacing: renameat2(RENAME_NOREPLACE)
// where supported, else a link and an unlink.
func renameNoReplace(oldfd int, old string, newfd int, new string) error {
	err := renameat2NoReplace(oldfd, old, newfd, new)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.ENOTSUP) {
		return err
	}
	return linkThenUnlink(oldfd, old, newfd, new)
}

// linkThenUnlink renames without replacing in two steps, link(2) (EEXIST
// if new exists) then unlink(2): a crash in between leaves both names.
func linkThenUnlink(oldfd int, old string, newfd int, new string) error {
	if err := unix.Linkat(oldfd, old, newfd, new, 0); err != nil {
		return err
	}
	return unix.Unlinkat(oldfd, old, 0)
}
