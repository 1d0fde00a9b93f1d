package dispatch

import (
	"slices"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/team"
)

// AccountKey names the account an agent's usage counts against, by scope:
// the agent's effective CODEX_HOME (account), the agent itself (agent), or
// one key for the whole team (team). It is a pure function.
func AccountKey(scope, agent, codexHome string) string {
	switch scope {
	case team.QuotaScopeAgent:
		return "agent:" + agent
	case team.QuotaScopeTeam:
		return "team"
	}
	return codexHome
}

// EffectiveCodexHome returns the CODEX_HOME an agent's codex runs with, as
// a cleaned absolute path, following the order in which the shim builds
// codex's environment: the team's codex_home wins, then CODEX_HOME in
// codex.env, then the shims' environment (env); see codex.Home for the
// rest. A relative value is taken from the agent's working directory.
func EffectiveCodexHome(setting string, codexEnv map[string]string, env []string, cwd string) string {
	env = slices.Clip(env)
	if h := codexEnv["CODEX_HOME"]; h != "" {
		env = append(env, "CODEX_HOME="+h)
	}
	if setting != "" {
		env = append(env, "CODEX_HOME="+setting)
	}
	return codex.Home(env, cwd)
}

// AgentHome is the account key of agent a (env is the shims' environment):
// its effective CODEX_HOME (EffectiveCodexHome), prefixed with its host's
// name and ":" for an agent on another host, whose CODEX_HOME is a
// directory there: the same path on two hosts is two accounts, whose
// usage limits and network holds are their own. It is a pure function but
// for EffectiveCodexHome's last fallback.
func AgentHome(a team.Agent, env []string) string {
	home := EffectiveCodexHome(a.Codex.CodexHome, a.Codex.Env, env, a.Cwd)
	if a.Host != "" {
		return a.Host + ":" + home
	}
	return home
}
