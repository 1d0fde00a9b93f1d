package main

import (
	"fmt"
	"os"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/agentproc"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/team"
)

// senderFacts is what decides who a `batty send` is from.
type senderFacts struct {
	// Flag is --from ("" when absent).
	Flag string
	// EnvAgent is $BATTY_AGENT ("" when absent).
	EnvAgent string
	// Shim is the agent whose batty shim is an ancestor of this process
	// ("" when none is): the command runs inside that agent's Codex.
	Shim string
	// ShimErr says why the ancestors could not be looked at (nil when they
	// could).
	ShimErr error
	// Marked reports that $BATTY_PROJECT_MARK is set: batty started this
	// process or one of its ancestors.
	Marked bool
}

// senderOf decides who a `batty send` is from. It is a pure function.
//
// Inside an agent's Codex — its shim among the process's ancestors — the
// sender is that agent, whatever $BATTY_AGENT says; --from may only repeat
// it. Otherwise $BATTY_AGENT names the sender (set by the shim for codex;
// "human" is refused: it names an agent, and the human is none), and
// --from may only repeat it; without either the sender is --from, else the
// human. When the ancestors cannot be looked at (/proc unreadable) and the
// process carries the project mark with no $BATTY_AGENT, it may be an
// agent's command that cleared its environment: it is refused rather than
// taken for the human.
func senderOf(f senderFacts) (string, error) {
	switch {
	case f.Shim != "":
		if f.Flag != "" && f.Flag != f.Shim {
			return "", fmt.Errorf("--from %q: this command runs inside agent %q (its batty shim is an ancestor of this process), so messages are sent as %s (drop --from, or run batty send outside the team's agents to send as someone else)",
				f.Flag, f.Shim, f.Shim)
		}
		return f.Shim, nil
	case f.EnvAgent == team.Human:
		return "", fmt.Errorf("$%s=%q: %s names the agent a command runs for, and the human is no agent; unset it (without it, batty send is from the human)",
			agentenv.Agent, f.EnvAgent, agentenv.Agent)
	case f.EnvAgent == "" && f.ShimErr != nil && f.Marked:
		return "", fmt.Errorf("cannot tell who sends this message: the process carries $%s (batty started it) but no $%s, and its parent processes cannot be looked at (%v)",
			reap.MarkEnv, agentenv.Agent, f.ShimErr)
	case f.EnvAgent == "" && f.Flag == "":
		return team.Human, nil
	case f.EnvAgent == "":
		return f.Flag, nil
	case f.Flag == "" || f.Flag == f.EnvAgent:
		return f.EnvAgent, nil
	default:
		return "", fmt.Errorf("--from %q does not match $%s=%q: inside an agent, messages are sent as that agent (drop --from, or run batty send outside the team's agents to send as someone else)",
			f.Flag, agentenv.Agent, f.EnvAgent)
	}
}

// currentSender decides who a `batty send` run by this process is from,
// given its --from flag: it looks for an agent's shim among the process's
// ancestors (in /proc) and reads $BATTY_AGENT and the project mark.
func currentSender(flagFrom string) (string, error) {
	name, _, err := currentSenderIn(flagFrom)
	return name, err
}

// currentSenderIn is currentSender, and whether this process runs inside
// that agent (its shim among the ancestors, or $BATTY_AGENT set): then
// what it asks of the team goes through the agent's outbox (package
// outbox), the one directory of batty's that the agent's sandbox lets it
// write, and the daemon stamps the sender from where it found it.
func currentSenderIn(flagFrom string) (string, bool, error) {
	f := senderFacts{Flag: flagFrom, EnvAgent: os.Getenv(agentenv.Agent)}
	_, f.Marked = os.LookupEnv(reap.MarkEnv)
	self, err := os.Executable()
	if err != nil {
		f.ShimErr = fmt.Errorf("find this program: %w", err)
	} else {
		f.Shim, f.ShimErr = agentproc.ShimAgent("/proc", os.Getpid(), self)
	}
	name, err := senderOf(f)
	return name, err == nil && name != team.Human && (f.Shim != "" || f.EnvAgent != ""), err
}
