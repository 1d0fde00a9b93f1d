package codex

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/battyhq/batty/agentenv"
)

// The user's sockets a command with the network on is kept from, by the
// names a team's allow_sockets gives one back with (team.UserSockets).
const (
	// SocketSSHAgent is the ssh-agent: the directory of $SSH_AUTH_SOCK,
	// and the variable.
	SocketSSHAgent = "ssh-agent"
	// SocketGPGAgent is gpg-agent: ~/.gnupg and $XDG_RUNTIME_DIR/gnupg,
	// and GPG_AGENT_INFO.
	SocketGPGAgent = "gpg-agent"
	// SocketSessionBus is the D-Bus session bus: $XDG_RUNTIME_DIR/bus,
	// and DBUS_SESSION_BUS_ADDRESS.
	SocketSessionBus = "session-bus"
	// SocketDocker is the Docker daemon: /var/run/docker.sock and
	// /run/docker.sock.
	SocketDocker = "docker"
	// SocketRuntimeDir is the whole of $XDG_RUNTIME_DIR.
	SocketRuntimeDir = "runtime-dir"
)

// userSocketVars are the variables that point a command at one of the
// user's agents, in the order they are hidden, with the socket each names.
var userSocketVars = []struct{ name, socket string }{
	{"DBUS_SESSION_BUS_ADDRESS", SocketSessionBus},
	{"GPG_AGENT_INFO", SocketGPGAgent},
	{"SSH_AUTH_SOCK", SocketSSHAgent},
}

// HideUserSockets adds to p, the profile of a command with the network
// on, the denial of the user's sockets that env (the environment the
// command's Codex starts with: $XDG_RUNTIME_DIR, $SSH_AUTH_SOCK and $HOME
// are read from it) points to — the directories of $XDG_RUNTIME_DIR and
// $SSH_AUTH_SOCK, ~/.gnupg, the Docker sockets — and the hiding of the
// variables that name them (SSH_AUTH_SOCK, GPG_AGENT_INFO,
// DBUS_SESSION_BUS_ADDRESS), but those allow (Socket* names) gives back.
// A rule p holds already is not added again. Pure but for changing p.
func (p *Permissions) HideUserSockets(env, allow []string) {
	allowed := func(s string) bool { return slices.Contains(allow, s) }
	runtime := agentenv.Lookup(env, "XDG_RUNTIME_DIR")
	home := agentenv.Lookup(env, "HOME")
	add := func(list *[]string, d string) {
		if filepath.IsAbs(d) && !slices.Contains(*list, filepath.Clean(d)) {
			*list = append(*list, filepath.Clean(d))
		}
	}
	deny := func(d string) { add(&p.Deny, d) }
	sshDir := ""
	if sock := agentenv.Lookup(env, "SSH_AUTH_SOCK"); sock != "" {
		sshDir = filepath.Dir(sock)
	}
	// A path denied inside another cannot be read again (Codex's rule
	// for a denied directory hides all below it but a writable path), so
	// the runtime directory is denied whole only when nothing given back
	// lies inside it; else its sockets are denied one by one.
	var kept []string
	if allowed(SocketSSHAgent) && sshDir != "" {
		kept = append(kept, sshDir)
	}
	if runtime != "" && !allowed(SocketRuntimeDir) {
		inside := func(d string) bool {
			return d != "" && strings.HasPrefix(filepath.Clean(d)+"/", filepath.Clean(runtime)+"/")
		}
		if !slices.ContainsFunc(kept, inside) && !allowed(SocketGPGAgent) && !allowed(SocketSessionBus) {
			deny(runtime)
		} else {
			for _, s := range []struct{ name, socket string }{{"bus", SocketSessionBus}, {"docker.sock", SocketDocker}, {"gnupg", SocketGPGAgent}} {
				if !allowed(s.socket) {
					deny(filepath.Join(runtime, s.name))
				}
			}
		}
	}
	switch {
	case sshDir == "":
	case allowed(SocketSSHAgent):
		add(&p.Read, sshDir)
	default:
		deny(sshDir)
	}
	if home != "" && !allowed(SocketGPGAgent) {
		deny(filepath.Join(home, ".gnupg"))
	}
	if !allowed(SocketDocker) {
		deny("/var/run/docker.sock")
		deny("/run/docker.sock")
	}
	for _, v := range userSocketVars {
		if !allowed(v.socket) && !slices.Contains(p.HideEnv, v.name) {
			p.HideEnv = append(p.HideEnv, v.name)
		}
	}
}
