package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/schedule"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/teamstatus"
)

// scheduleBoxes delivers scheduled runs into the team's inboxes, as
// `batty send` from the human does: the recipient's box (a role with
// several instances: its queue), with its backlog limit.
type scheduleBoxes struct{ d *Daemon }

// all is every box a run can be in: the agents' and the role queues.
func (s scheduleBoxes) all() []*inbox.Box {
	out := make([]*inbox.Box, 0, len(s.d.agents)+len(s.d.roles))
	for _, a := range s.d.agents {
		out = append(out, a.box)
	}
	for _, b := range s.d.roles {
		out = append(out, b)
	}
	return out
}

// Deliver writes the run into the recipient's inbox unless its id is in
// any box already (in done/ too): idempotent by id.
func (s scheduleBoxes) Deliver(spec team.Schedule, id string, at time.Time) error {
	copies, err := inbox.Find(id, s.all())
	if err != nil {
		return err
	}
	if len(copies) > 0 {
		return nil
	}
	box, err := s.box(spec.To)
	if err != nil {
		return err
	}
	_, err = box.Deliver(inbox.Message{ID: id, From: team.Human, To: spec.To, Body: spec.Prompt, CreatedAt: at.UTC()})
	if errors.Is(err, inbox.ErrExists) {
		return nil
	}
	return err
}

// box is the box a message to to goes to.
func (s scheduleBoxes) box(to string) (*inbox.Box, error) {
	agents, err := s.d.cfg.ResolveRecipient(to)
	switch {
	case err != nil:
		return nil, err
	case len(agents) == 0:
		return nil, fmt.Errorf("a schedule cannot send to %s", to)
	case len(agents) > 1:
		if b := s.d.roles[agents[0].Role]; b != nil {
			return b, nil
		}
	default:
		if a := s.d.byName[agents[0].Name]; a != nil {
			return a.box, nil
		}
	}
	return nil, fmt.Errorf("no inbox for %s", to)
}

// Lookup says where run id stands, with its result once recorded.
func (s scheduleBoxes) Lookup(id string) (int, schedule.Result, error) {
	copies, err := inbox.Find(id, s.all())
	if err != nil {
		return schedule.Pending, schedule.Result{}, err
	}
	for _, c := range copies {
		if c.State == inbox.StateDone && c.Msg.Outcome != nil {
			return schedule.Recorded, runResult(*c.Msg.Outcome), nil
		}
	}
	if len(copies) > 0 {
		return schedule.Pending, schedule.Result{}, nil
	}
	return schedule.Missing, schedule.Result{}, nil
}

// runResult is what a recorded outcome means for a scheduled run.
func runResult(o inbox.Outcome) schedule.Result {
	r := schedule.Result{Recorded: true}
	if o.Status != inbox.StatusCompleted {
		r.Failed = true
		r.Error = o.Status
		if o.Failure != "" {
			r.Error += " " + o.Failure
		}
		if o.Error != "" {
			r.Error += ": " + o.Error
		}
	}
	return r
}

// newScheduler prepares the runner of the team's schedules (d.sched stays
// nil without any: their state file, if any, is left as it is).
func (d *Daemon) newScheduler() {
	if len(d.cfg.Schedules) == 0 {
		return
	}
	d.sched = schedule.New(d.cfg.Schedules, d.opts.ScheduleClock, scheduleBoxes{d}, project.ScheduleStore{Layout: d.layout}, d.log.Named("schedule"), d.scheduleEvent)
}

// scheduleEvent writes a schedule's event to the event log.
func (d *Daemon) scheduleEvent(e schedule.Event) {
	data := eventlog.Schedule{Schedule: e.Schedule, State: e.State.State, RunsCompleted: e.State.RunsCompleted,
		NextDue: e.State.NextDue, Run: e.Run}
	if e.Kind == schedule.EvRunStarted {
		if s, ok := d.scheduleSpec(e.Schedule); ok {
			data.To = s.To
		}
	}
	d.events.Append(eventlog.Event{Type: e.Kind, Message: e.ID, Detail: e.Detail, Data: data})
}

func (d *Daemon) scheduleSpec(name string) (team.Schedule, bool) {
	for _, s := range d.cfg.Schedules {
		if s.Name == name {
			return s, true
		}
	}
	return team.Schedule{}, false
}

// outcomeRecorded tells the schedules that message id's outcome o is on
// disk: a scheduled run finishes with it. Safe from any goroutine.
func (d *Daemon) outcomeRecorded(id string, o inbox.Outcome) {
	if d.sched != nil {
		d.sched.Finished(id, runResult(o))
	}
}

// scheduleStatus is the status of every schedule of the team file.
func (d *Daemon) scheduleStatus() []control.ScheduleStatus {
	out := []control.ScheduleStatus{}
	if d.sched == nil {
		return out
	}
	return teamstatus.Schedules(d.cfg, d.sched.Status())
}
