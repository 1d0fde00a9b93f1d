package offline

import (
	"errors"
	"fmt"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

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

// Cancel withdraws the messages ids of a stopped team: each one
// waiting in an agent's box or a role's queue, or left in flight by a
// daemon that stopped (no turn runs it now), is recorded as cancelled.
// It returns one result per id, in order. No note goes to an agent that
// sent one (the daemon sends it when it cancels).
func Cancel(cfg *team.Config, l project.Layout, ids []string) ([]control.CancelResult, error) {
	var out []control.CancelResult
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
			out = append(out, cancelIn(boxes, names, id))
		}
		return nil
	})
	return out, err
}

// cancelIn cancels id in whichever of boxes (named names) holds it.
func cancelIn(boxes []*inbox.Box, names []string, id string) control.CancelResult {
	for i, b := range boxes {
		m, where, err := b.Get(id)
		if errors.Is(err, inbox.ErrNotFound) {
			continue
		}
		res := control.CancelResult{ID: id, Box: names[i], Result: control.CancelDone}
		if err != nil {
			res.Result, res.Detail = control.CancelRefused, err.Error()
			return res
		}
		agent := names[i]
		if len(agent) > 0 && agent[0] == '@' {
			agent = agent[1:]
		}
		switch where {
		case inbox.StateDone:
			return control.FinishedRefusal(id, names[i], m.Outcome.Status)
		case inbox.StateCur:
			// Left in flight by a daemon that stopped: it would run
			// again at the next start.
			_, err = b.Complete(id, inbox.CancelledOutcome(agent))
		default:
			_, err = b.Cancel(id, inbox.CancelledOutcome(agent))
		}
		if err != nil {
			res.Result, res.Detail = control.CancelRefused, fmt.Sprintf("not cancelled: %v", err)
		}
		return res
	}
	return control.CancelResult{ID: id, Result: control.CancelNotFound, Detail: "no queue of the team holds it"}
}
