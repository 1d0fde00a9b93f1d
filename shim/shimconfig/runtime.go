package shimconfig

import (
	"fmt"
	"strings"

	"github.com/battyhq/batty/codex"
)

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

// SharedServerArgs are the app-server's arguments that belong to the
// process, not to a thread: the Config overrides and the config overrides
// among ExtraArgs, as -c pairs. A shared app-server (codex.app_server:
// per-account) runs with them; agents whose arguments differ need
// processes of their own. Pure.
func SharedServerArgs(o codex.ExecOptions) []string {
	var a []string
	for _, kv := range o.Config {
		a = append(a, "-c", kv)
	}
	for _, kv := range configOverrides(o.ExtraArgs) {
		a = append(a, "-c", kv)
	}
	return a
}

// configOverrides returns the key=value of every config override in args,
// in order: `-c kv`, `--config kv`, `-c=kv` and `--config=kv`. Pure.
func configOverrides(args []string) []string {
	var kvs []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "-c" || a == "--config") && i+1 < len(args):
			kvs = append(kvs, args[i+1])
			i++
		case strings.HasPrefix(a, "-c="):
			kvs = append(kvs, strings.TrimPrefix(a, "-c="))
		case strings.HasPrefix(a, "--config="):
			kvs = append(kvs, strings.TrimPrefix(a, "--config="))
		}
	}
	return kvs
}
