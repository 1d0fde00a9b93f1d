//go:build !unix

package inbox

// openFlags are added when opening a message file.
const openFlags = 0
