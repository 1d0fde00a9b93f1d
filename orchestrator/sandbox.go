package orchestrator

import (
	"os"
	"path/filepath"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
)

// sandbox is how the team's command ("verify" or "setup") runs inside
// Codex's sandbox, nil when the team file says workspace.sandbox: off.
// The fresh CODEX_HOME of each run is made under the user's cache
// directory (batty/sandbox), out of the agents' reach, else under the
// project's state directory. The command may not read batty's
// directories (deniedDirs) but the worktree it runs in; with the network
// on, nor reach the user's sockets (sandboxPolicy).
func (d *Daemon) sandbox(command string) *sandbox.Policy {
	return sandboxPolicy(d.cfg.Workspace.Sandbox, d.cfg.Codex.Bin, sandbox.HomesIn(filepath.Join(d.layout.StateDir(), "sandbox")), command,
		d.deniedDirs(), os.Environ())
}

// sandboxPolicy is how command ("verify" or "setup") runs under the team's
// workspace.sandbox ws: with the team's codex binary bin, each run's
// CODEX_HOME under homes, the directories deny denied; nil with sandbox:
// off. With the network on, the user's sockets env names are denied and
// their variables hidden as for an agent with the network on and no
// allow_sockets (codex.Permissions.HideUserSockets). It is pure.
func sandboxPolicy(ws team.WorkspaceSandbox, bin, homes, command string, deny, env []string) *sandbox.Policy {
	if ws.Off {
		return nil
	}
	network := ws.VerifyNetwork
	if command == "setup" {
		network = ws.SetupNetwork
	}
	perm := codex.Permissions{Network: network}
	for _, d := range deny {
		if filepath.IsAbs(d) {
			perm.Deny = append(perm.Deny, filepath.Clean(d))
		}
	}
	if network {
		perm.HideUserSockets(env, nil)
	}
	return &sandbox.Policy{Bin: bin, Homes: homes, Writable: ws.Writable, Network: network, Deny: perm.Deny, HideEnv: perm.HideEnv}
}
