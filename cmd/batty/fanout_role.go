package main

import (
	"sort"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/shim"
	"github.com/battyhq/batty/team"
)

// teamAgent is an agent of the team file whose codex settings a fan-out
// job borrows.
type teamAgent struct{ team.Agent }

// apply sets c's codex settings to the agent's, as the daemon gives them to
// its shim: binary, model, effort, sandbox, approval policy, config, extra
// arguments, environment (CODEX_HOME included; sent in the handshake),
// instructions, working directory and context window. Nothing of the
// team's inboxes: a fan-out worker answers in its reply.
func (a teamAgent) apply(c *shim.Config) {
	s := a.Codex
	c.CodexBin, c.Cwd, c.Instructions = s.Bin, a.Cwd, a.Instructions
	c.Exec = codex.ExecOptions{Model: s.Model, ReasoningEffort: s.ReasoningEffort, Sandbox: s.Sandbox,
		ApprovalPolicy: s.ApprovalPolicy, ExtraArgs: s.Args, SkipGitRepoCheck: true, OutputSchema: c.Exec.OutputSchema}
	for _, k := range sortedKeys(s.Config) {
		c.Exec.Config = append(c.Exec.Config, k+"="+s.Config[k])
	}
	c.Env = nil
	for _, k := range sortedKeys(s.Env) {
		c.Env = append(c.Env, k+"="+s.Env[k])
	}
	if s.CodexHome != "" {
		c.Env = append(c.Env, "CODEX_HOME="+s.CodexHome)
	}
	c.ContextWindow = int64(s.Window())
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
