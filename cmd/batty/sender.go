package main

import (
	"fmt"

	"github.com/battyhq/batty/orchestrator"
	"github.com/battyhq/batty/team"
)

// senderOf decides who a `batty send` is from, given its --from flag and
// the value of $BATTY_AGENT (both "" when absent). Inside an agent's Codex
// (BATTY_AGENT set) the sender is that agent and --from may only repeat it:
// an agent may not pose as the human or as another agent. Outside, the
// sender is --from, else the human. It is a pure function.
func senderOf(flagFrom, envAgent string) (string, error) {
	switch {
	case envAgent == "" && flagFrom == "":
		return team.Human, nil
	case envAgent == "":
		return flagFrom, nil
	case flagFrom == "" || flagFrom == envAgent:
		return envAgent, nil
	default:
		return "", fmt.Errorf("--from %q does not match $%s=%q: inside an agent, messages are sent as that agent (drop --from, or run batty send outside the team's agents to send as someone else)",
			flagFrom, orchestrator.EnvAgent, envAgent)
	}
}
