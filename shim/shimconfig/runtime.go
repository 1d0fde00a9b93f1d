package shimconfig

import "fmt"

// Runtime names: how the shim runs a turn of Codex (Config.Runtime).
const (
	// RuntimeExec runs one `codex exec --json [resume THREAD] -` process
	// per turn (the default).
	RuntimeExec = "exec"
	// RuntimeAppServer runs turns on one warm `codex app-server` process
	// per shim, which keeps the agent's thread loaded between turns.
	RuntimeAppServer = "app-server"
)

// CheckRuntime reports whether name is a runtime the shim knows ("" is
// RuntimeExec). Pure.
func CheckRuntime(name string) error {
	switch name {
	case "", RuntimeExec, RuntimeAppServer:
		return nil
	}
	return fmt.Errorf("shim: --runtime %q is not a runtime (want %q or %q)", name, RuntimeExec, RuntimeAppServer)
}
