package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
)

// recallPoll is how often a command inside an agent looks for the
// daemon's answer.
const recallPoll = 50 * time.Millisecond

// insideAgent returns the agent this command runs inside, "" when it runs
// outside the team's agents (currentSenderIn).
func insideAgent() (string, error) {
	agent, inside, err := currentSenderIn("")
	if err != nil || !inside {
		return "", err
	}
	return agent, nil
}

// askRecall asks the team's daemon for q on behalf of agent, the agent
// this command runs inside: it cannot read the state directory (its
// permission profile denies it), so it writes a recall request into its
// outbox, which its shim relays, and waits (outbox.RecallWait at most) for
// the daemon's answer there; then it prints it as the command would
// outside (the notes on stderr). No answer in time withdraws the request
// and is an error naming the likely causes.
func askRecall(cmd *cobra.Command, l project.Layout, agent string, q outbox.Recall) error {
	id, err := l.WriteRequest(agent, outbox.Request{Recall: &q})
	if err != nil {
		return fmt.Errorf("ask the team's daemon: %w", err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), outbox.RecallWait)
	defer cancel()
	t := time.NewTicker(recallPoll)
	defer t.Stop()
	for {
		a, err := outbox.TakeAnswer(l.Dir, agent, id)
		switch {
		case err == nil:
			for _, n := range a.Notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: %s\n", safetext.Line(n, 0))
			}
			fmt.Fprint(cmd.OutOrStdout(), a.Output)
			if a.Error != "" {
				return errors.New(safetext.Line(a.Error, 0))
			}
			return nil
		case !errors.Is(err, outbox.ErrNoAnswer):
			return err
		}
		select {
		case <-ctx.Done():
			outbox.Withdraw(l.Dir, agent, id)
			return fmt.Errorf("no answer from the team's daemon within %s: inside an agent, the running daemon answers (is the team running? batty start)", outbox.RecallWait)
		case <-t.C:
		}
	}
}
