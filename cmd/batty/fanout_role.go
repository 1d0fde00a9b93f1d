package main

import (
	"github.com/battyhq/batty/orchestrator"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// applyRole sets c's codex settings to those agent def runs codex with in
// the team (orchestrator.CodexConfig): binary, model, effort, sandbox,
// approval policy, config, extra arguments, environment (CODEX_HOME
// included; sent in the handshake), instructions, working directory and
// context window. c keeps its name and output schema, and nothing of the
// team's inboxes: a fan-out worker answers in its reply.
func applyRole(c *shimconfig.Config, def team.Agent) {
	r := orchestrator.CodexConfig(def)
	r.Exec.OutputSchema = c.Exec.OutputSchema
	c.CodexBin, c.Cwd, c.Instructions, c.Exec, c.Env, c.ContextWindow = r.CodexBin, r.Cwd, r.Instructions, r.Exec, r.Env, r.ContextWindow
}
