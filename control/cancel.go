package control

import (
	"errors"
	"fmt"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// CancelledByUser is the error a cancelled message's outcome records.
const CancelledByUser = "cancelled by the user (batty cancel)"

// CancelledOutcome is the outcome a message withdrawn by `batty cancel` is
// recorded with; agent is who would have run it (an agent, or the role of
// a role queue). It is a pure function.
func CancelledOutcome(agent string) inbox.Outcome {
	return inbox.Outcome{Status: inbox.StatusCancelled, Error: CancelledByUser, Agent: agent}
}

// QueueBoxes names the boxes messages wait in before they run: every
// agent's, then "@" + the name of every role with several instances (its
// queue). It is a pure function.
func QueueBoxes(cfg *team.Config) []string {
	var names []string
	for _, a := range cfg.Agents() {
		names = append(names, a.Name)
	}
	for _, r := range cfg.Roles {
		if r.Instances > 1 {
			names = append(names, "@"+r.Name)
		}
	}
	return names
}

// FinishedRefusal is the refusal of a cancel for a message that has an
// outcome already (status). It is a pure function.
func FinishedRefusal(id, box, status string) CancelResult {
	return CancelResult{ID: id, Box: box, Result: CancelRefused, Detail: "finished already (" + status + ")"}
}

// OfflineCancel withdraws the messages ids of a stopped team: each one
// waiting in an agent's box or a role's queue, or left in flight by a
// daemon that stopped (no turn runs it now), is recorded as cancelled.
// It returns one result per id, in order. No note goes to an agent that
// sent one (the daemon sends it when it cancels).
func OfflineCancel(cfg *team.Config, l project.Layout, ids []string) ([]CancelResult, error) {
	var out []CancelResult
	err := project.WithLock(l, func() error {
		store, err := l.OpenInboxes()
		if err != nil {
			return err
		}
		var boxes []*inbox.Box
		names := QueueBoxes(cfg)
		for _, n := range names {
			b, err := store.Box(n)
			if err != nil {
				return err
			}
			boxes = append(boxes, b)
		}
		for _, id := range ids {
			out = append(out, offlineCancel(boxes, names, id))
		}
		return nil
	})
	return out, err
}

// offlineCancel cancels id in whichever of boxes (named names) holds it.
func offlineCancel(boxes []*inbox.Box, names []string, id string) CancelResult {
	for i, b := range boxes {
		m, where, err := b.Get(id)
		if errors.Is(err, inbox.ErrNotFound) {
			continue
		}
		res := CancelResult{ID: id, Box: names[i], Result: CancelDone}
		if err != nil {
			res.Result, res.Detail = CancelRefused, err.Error()
			return res
		}
		agent := names[i]
		if len(agent) > 0 && agent[0] == '@' {
			agent = agent[1:]
		}
		switch where {
		case inbox.StateDone:
			return FinishedRefusal(id, names[i], m.Outcome.Status)
		case inbox.StateCur:
			// Left in flight by a daemon that stopped: it would run
			// again at the next start.
			_, err = b.Complete(id, CancelledOutcome(agent))
		default:
			_, err = b.Cancel(id, CancelledOutcome(agent))
		}
		if err != nil {
			res.Result, res.Detail = CancelRefused, fmt.Sprintf("not cancelled: %v", err)
		}
		return res
	}
	return CancelResult{ID: id, Result: CancelNotFound, Detail: "no queue of the team holds it"}
}
