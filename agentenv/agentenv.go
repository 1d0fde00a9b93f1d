// Package agentenv names the environment variables batty gives an agent's
// Codex, which the batty commands an agent runs (`batty send`, `batty
// merge`, ...) read to find their team and to know who they are. It is the
// one definition of those names, for the daemon and the shim that set them
// and for the commands that read them, and the one lookup of an entry in an
// environment list (Lookup).
package agentenv

import "strings"

const (
	// Dir is the variable the daemon gives every agent of a team: the
	// project's state directory (outside the project), which points batty
	// commands run by the agent (inside Codex, in another working
	// directory) at the project, and holds the agent's outbox. Its presence
	// in a shim's Codex environment is what makes the shim's agent part of
	// a team.
	Dir = "BATTY_DIR"
	// Project is the variable the daemon gives every agent of a team: the
	// project directory (the team file's), as the agent's host sees it.
	Project = "BATTY_PROJECT"
	// TeamFile is the variable the daemon gives every agent of a team
	// here: the absolute path of the team file, which the agent's batty
	// commands load without reading the state directory (Dir), which an
	// agent's permission profile keeps it from reading.
	TeamFile = "BATTY_TEAM_FILE"
	// Agent is the variable the shim sets for Codex: the name of the agent
	// running a batty command.
	Agent = "BATTY_AGENT"
	// AgentMark is the variable the shim sets for the commands of its
	// agent's thread on a shared app-server: a value of that agent alone
	// (the project's mark and the agent's name), by which the shim finds
	// what a turn left running there, where the process tree cannot tell
	// one agent's commands from another's.
	AgentMark = "BATTY_AGENT_MARK"
)

// Lookup returns the value of the last entry of env ("KEY=value" strings)
// for key, "" when there is none. It is a pure function.
func Lookup(env []string, key string) string {
	v := ""
	for _, e := range env {
		if x, ok := strings.CutPrefix(e, key+"="); ok {
			v = x
		}
	}
	return v
}
