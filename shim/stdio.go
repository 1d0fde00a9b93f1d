package shim

import (
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// takeStdio removes shimconfig.StdioFlag from args (a copy) and reports whether it
// was there. Every other flag is rendered "--name=value", so the flag
// cannot be the value of another.
func takeStdio(args []string) ([]string, bool) {
	if !slices.Contains(args, shimconfig.StdioFlag) {
		return args, false
	}
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == shimconfig.StdioFlag }), true
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

// homeVars are the variables of shimconfig.Config.Env whose value is a path that a
// remote shim expands (see WithHome).
var homeVars = []string{"CODEX_HOME", agentenv.Dir, agentenv.Project, agentenv.TeamFile}

// WithHome returns c with a leading "~" or "~/" of its paths replaced by
// home, the home directory of the shim's user: Cwd, CodexBin, Transcript,
// Exec.AddDirs, Exec.OutputSchema, and the values of CODEX_HOME,
// agentenv.Dir, agentenv.Project and agentenv.TeamFile in Env (the
// permission profile's paths: OnHost). A shim on another host gets its paths as the daemon
// writes them, "~/" meaning the home directory there, which no shell
// expands on the way (see Main). It is a pure function; home "" returns
// c unchanged.
func WithHome(c shimconfig.Config, home string) shimconfig.Config {
	if home == "" {
		return c
	}
	exp := func(p string) string { return hosts.ExpandHome(p, home) }
	c.Cwd, c.CodexBin, c.Transcript, c.Exec.OutputSchema = exp(c.Cwd), exp(c.CodexBin), exp(c.Transcript), exp(c.Exec.OutputSchema)
	if c.Exec.AddDirs != nil {
		dirs := make([]string, len(c.Exec.AddDirs))
		for i, d := range c.Exec.AddDirs {
			dirs[i] = exp(d)
		}
		c.Exec.AddDirs = dirs
	}
	if c.Env != nil {
		env := make([]string, len(c.Env))
		for i, e := range c.Env {
			k, v, _ := strings.Cut(e, "=")
			if slices.Contains(homeVars, k) {
				e = k + "=" + exp(v)
			}
			env[i] = e
		}
		c.Env = env
	}
	return c
}

// OnHost is c, the configuration of a shim on another host as the daemon
// wrote it (ParseArgsThere and the Welcome), made this host's: its paths'
// "~" expanded to home (WithHome) and its permission profile completed
// here (hosts.PermissionsHere: the user's sockets here denied, with the
// network on the variables naming them hidden, but c.AllowSockets), env
// being the shim's environment and uid its user. It errs for a profile
// Codex would not take once completed. Pure.
func OnHost(c shimconfig.Config, home string, env []string, uid int) (shimconfig.Config, error) {
	c = WithHome(c, home)
	p, err := hosts.PermissionsHere(c.Exec.Permissions, c.AllowSockets, home, append(slices.Clip(env), c.Env...), uid)
	if err != nil {
		return c, err
	}
	c.Exec.Permissions = p
	return c, nil
}
