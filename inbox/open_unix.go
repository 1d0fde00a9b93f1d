//go:build unix

package inbox

import "syscall"

// openFlags are added when opening a message file: never follow a symbolic
// link, never block on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
