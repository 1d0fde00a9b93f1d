//go:build unix && !linux

package atomicfile

import "golang.org/x/sys/unix"

// renameat2NoReplace is not available here: renameNoReplace falls back to
// a link and an unlink.
func renameat2NoReplace(oldfd int, old string, newfd int, new string) error {
	return unix.ENOSYS
}
