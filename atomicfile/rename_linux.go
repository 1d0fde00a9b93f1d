package atomicfile

import "golang.org/x/sys/unix"

// renameat2NoReplace renames atomically unless new exists (EEXIST).
func renameat2NoReplace(oldfd int, old string, newfd int, new string) error {
	return unix.Renameat2(oldfd, old, newfd, new, unix.RENAME_NOREPLACE)
}
