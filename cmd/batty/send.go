package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// newSendCmd returns `batty send`: queue a message in a recipient's inbox.
func newSendCmd(f *Factory) *cobra.Command {
	var from, teamFile string
	cmd := &cobra.Command{
		Use:   "send [--from NAME] [-f TEAMFILE] <agent|role|human> <message...>",
		Short: "Queue a message for an agent, a role or the human",
		Long: `send writes a message into the recipient's inbox (in the team's state
directory; inside an agent, into the agent's outbox, which its shim relays) and
prints its id. It does not need the daemon: the daemon picks the message up
when it runs.

The message is the remaining arguments joined by spaces, or stdin when the
only message argument is "-". Flags must come before the recipient; everything
after it is message text.

The recipient is "human", an agent, or a role. A role with one instance is
its agent; a message to a role with several instances waits in the role's
queue ("@<role>") and the daemon gives it to an idle instance, else to the one
with the shortest backlog (its messages waiting plus the one in flight, the
BACKLOG of batty status).

Inside an agent's Codex the sender is that agent: batty finds the agent's
shim among the command's parent processes, whatever the environment says.
Elsewhere the sender is $BATTY_AGENT (set for every agent's Codex process;
"human" is refused), else --from, else "human". --from must name that same
agent where there is one: an agent cannot send as the human or as another
agent. An agent may message "human" and the roles listed in its role's
talks_to; the human may message anyone.

An agent's final answer to a message is delivered to the sender as its
reply: agents use batty send to start a conversation, not to answer one.

With the daemon stopped the message is queued all the same and waits until
batty start (a note on stderr says so). A message that starts with "--" gets
a warning on stderr: it is probably a flag given after the recipient.

Exit status: 0 queued, 1 error, 2 usage.`,
		Example: `  batty send manager "the build is green"
  batty send engineer "please fix the flaky test"
  git diff | batty send --from architect manager -`,
		Args: func(_ *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return errors.New("name a recipient and a message")
			case 1:
				return errors.New(`missing message: give it as arguments, or "-" to read it from stdin`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sender, inAgent, err := currentSenderIn(from)
			if err != nil {
				return usageError(cmd, "%v", err)
			}
			body := strings.Join(args[1:], " ")
			if len(args) == 2 && args[1] == "-" {
				b, err := readBody(cmd.InOrStdin())
				if err != nil {
					return err
				}
				body = b
			}
			if strings.HasPrefix(args[1], "--") {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty send: warning: the message starts with %q and is sent as text; flags go before the recipient: batty send [flags] %s <message>\n",
					args[1], args[0])
			}
			m, err := deliverMessage(f, teamFile, sender, args[0], body, inAgent)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "queued %s for %s\n", m.ID, m.box)
			// An agent runs in a running team, even where the inboxes
			// are not the team's (on another host, whose shim relays
			// them).
			if running, _ := project.Running(m.layout); !running && os.Getenv(agentenv.Agent) == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: the team is not running; the message waits until `batty start`\n")
			}
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&from, "from", "", `sender: an agent name or "human" (default: the agent this runs inside, else $`+agentenv.Agent+`, else "human"; must equal the agent when there is one)`)
	addTeamFlags(cmd, &teamFile, true)
	cmd.ValidArgsFunction = f.completeRecipients(&teamFile, &from)
	_ = cmd.RegisterFlagCompletionFunc("from", f.completeNames(&teamFile, namesAgents|namesHuman))
	return withUsageExit(cmd)
}

// readBody reads a message body from r, without its trailing line breaks.
func readBody(r io.Reader) (string, error) {
	// Room for the longest body plus some trailing line breaks; reading all
	// of it means there was more.
	const limit = inbox.MaxBodyLen + 4096
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return "", fmt.Errorf("read message from stdin: %w", err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if len(b) == limit || len(s) > inbox.MaxBodyLen {
		return "", fmt.Errorf("message on stdin: more than %d bytes: Input exceeds the maximum length of %d characters; shorten it, or write it to a file and send the path",
			inbox.MaxBodyLen, codex.MaxBodyChars)
	}
	return s, nil
}

// sentMessage is a delivered message and the box it went to.
type sentMessage struct {
	inbox.Message
	box    string
	layout project.Layout // of the project it was sent in
}

// deliverMessage checks that from may message to and delivers body into
// the recipient's box; inside an agent (inAgent) it writes the request into
// the agent's outbox instead, for the daemon to deliver as from that agent
// (the id printed is the message's).
func deliverMessage(f *Factory, teamFile, from, to, body string, inAgent bool) (sentMessage, error) {
	if strings.TrimSpace(body) == "" {
		return sentMessage{}, errors.New("empty message: give the text as arguments, or \"-\" to read it from stdin")
	}
	if err := codex.CheckBodyLen(body); err != nil {
		return sentMessage{}, err
	}
	p, cfg, err := f.Team(teamFile)
	if err != nil {
		return sentMessage{}, err
	}
	if from != team.Human {
		if _, ok := cfg.Agent(from); !ok {
			return sentMessage{}, fmt.Errorf("unknown sender %q (from --from, $%s, or the agent this command runs inside): not an agent of team %q (%s); agents: %s",
				from, agentenv.Agent, cfg.Name, cfg.Path, strings.Join(teamAgentNames(cfg), ", "))
		}
	}
	box, err := recipientBox(cfg, from, to)
	if err != nil {
		return sentMessage{}, err
	}
	if inAgent {
		id, err := p.Layout.WriteRequest(from, outbox.Request{To: to, Body: body})
		if err != nil {
			return sentMessage{}, fmt.Errorf("send to %s: %w", to, err)
		}
		return sentMessage{Message: inbox.Message{ID: id, From: from, To: to, Body: body}, box: box, layout: p.Layout}, nil
	}
	store, err := p.Layout.OpenInboxes()
	if err != nil {
		return sentMessage{}, fmt.Errorf("send to %s: %w", to, err)
	}
	b, err := store.Box(box)
	if err != nil {
		return sentMessage{}, fmt.Errorf("send to %s: %w", to, err)
	}
	if box != team.Human {
		b.Limit = cfg.BacklogLimit
	}
	m, err := b.Deliver(inbox.Message{From: from, To: to, Body: body})
	if err != nil {
		return sentMessage{}, deliverError(cfg, to, err)
	}
	return sentMessage{Message: m, box: box, layout: p.Layout}, nil
}

// recipientBox resolves to into the name of the box the message goes to and
// enforces talks_to for agent senders.
func recipientBox(cfg *team.Config, from, to string) (string, error) {
	box, target, allowed, err := cfg.SendBox(from, to)
	switch {
	case err != nil:
		return "", err
	case box == team.Human && from == team.Human:
		return "", errors.New("the human may not message itself: name an agent or a role")
	case !allowed:
		return "", refusal(cfg, from, to, target)
	}
	return box, nil
}

// refusal explains why agent from may not message to.
func refusal(cfg *team.Config, from, to, target string) error {
	if target == from {
		return fmt.Errorf("%s may not message itself", from)
	}
	a, _ := cfg.Agent(from)
	var talksTo []string
	for _, r := range cfg.Roles {
		if r.Name == a.Role {
			talksTo = slices.Clone(r.TalksTo)
		}
	}
	listed := "none"
	if len(talksTo) > 0 {
		listed = strings.Join(talksTo, ", ")
	}
	allowed := append(talksTo, team.Human)
	return fmt.Errorf("%s may not message %s (talks_to of role %q in %s: %s); it may message: %s",
		from, to, a.Role, cfg.Path, listed, strings.Join(allowed, ", "))
}
