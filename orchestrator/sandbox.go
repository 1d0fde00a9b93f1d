package orchestrator

import (
	"path/filepath"

	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
)

// sandbox is how the team's command ("verify" or "setup") runs inside
// Codex's sandbox, nil when the team file says workspace.sandbox: off.
// The fresh CODEX_HOME of each run is made under the user's cache
// directory (batty/sandbox), out of the agents' reach, else under the
// project's state directory.
func (d *Daemon) sandbox(command string) *sandbox.Policy {
	return sandboxPolicy(d.cfg.Workspace.Sandbox, d.cfg.Codex.Bin, sandbox.HomesIn(filepath.Join(d.layout.StateDir(), "sandbox")), command)
}

// sandboxPolicy is how command ("verify" or "setup") runs under the team's
// workspace.sandbox ws: with the team's codex binary bin, each run's
// CODEX_HOME under homes; nil with sandbox: off. It is pure.
func sandboxPolicy(ws team.WorkspaceSandbox, bin, homes, command string) *sandbox.Policy {
	if ws.Off {
		return nil
	}
	network := ws.VerifyNetwork
	if command == "setup" {
		network = ws.SetupNetwork
	}
	return &sandbox.Policy{Bin: bin, Homes: homes, Writable: ws.Writable, Network: network}
}
