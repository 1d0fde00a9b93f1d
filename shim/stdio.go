package shim

import (
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/battyhq/batty/protocol"
)

// StdioFlag makes `batty shim` speak its protocol on its stdin and
// stdout instead of fd 3: the shim at the other end of a host's transport
// (ssh, kubectl exec; see package hosts and SpawnOptions.Remote). The end
// of its stdin — the stream cut, the parent gone — stops it like a closed
// socket does: the turn in flight is stopped and everything the shim
// started is killed before it exits.
const StdioFlag = "--stdio"

// takeStdio removes StdioFlag from args (a copy) and reports whether it
// was there. Every other flag is rendered "--name=value", so the flag
// cannot be the value of another.
func takeStdio(args []string) ([]string, bool) {
	if !slices.Contains(args, StdioFlag) {
		return args, false
	}
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == StdioFlag }), true
}

// stdioChannel takes stdin and stdout over as the control channel
// (protocol.StdioConn). A cut stream must not kill the shim with SIGPIPE
// on a write to stderr (its log) before it has cleaned up: the signal is
// caught, and dropped; it is not ignored, which its children would
// inherit.
func stdioChannel() (*protocol.Conn, error) {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return protocol.StdioConn(protocol.Options{})
}
