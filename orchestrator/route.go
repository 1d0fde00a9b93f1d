package orchestrator

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
)

// busyRetry is how soon routing tries again when an instance's inbox was
// locked by a sender writing into it.
const busyRetry = 20 * time.Millisecond

// route gives each message waiting in a role's queue to an instance: an
// idle one, else the one with the shortest backlog (one whose account is
// not paused by a usage limit first), never one whose backlog
// is at the team's backlog_limit (the message then waits in the queue until
// an instance finishes a message). Failed and parked instances get nothing;
// with no live instance the message waits. A queue message that an instance already
// holds (in any state) is a duplicate, never routed again. Messages are
// taken oldest first, one file read at a time, and the pass ends when
// every instance is at its limit: its cost does not grow with the
// messages left waiting. It runs on the daemon's goroutine only.
func (d *Daemon) route(role string) {
	box := d.roles[role]
	m, ok, errs := box.Next("")
	d.inboxProblems("@"+role, errs, d.routeIn)
	if !ok {
		return
	}
	limit := d.cfg.BacklogLimit
	var cands []*agent
	var boxes []*inbox.Box
	load := map[*agent]int{}
	for _, a := range d.agents {
		if a.def.Role != role {
			continue
		}
		boxes = append(boxes, a.box)
		if s := a.snapshot(); s.state == agentFailed || s.state == agentStopped || parkedNow(s) != nil {
			continue
		}
		// The load is read from disk, so messages routed a moment ago and
		// not yet picked up by the agent count too.
		pending, inflight, err := a.box.Count()
		if err != nil {
			d.log.Warn("Counting an inbox failed", "agent", a.def.Name, "error", err)
			continue
		}
		cands = append(cands, a)
		load[a] = pending + inflight
	}
	if len(cands) == 0 {
		return
	}
	// An instance whose account is paused by a usage limit gets a message
	// only when every instance's is.
	paused := map[*agent]bool{}
	for _, a := range cands {
		paused[a] = d.quota.Paused(a.def.Name)
	}
	lighter := func(a, b *agent) bool {
		if paused[a] != paused[b] {
			return !paused[a]
		}
		return load[a] < load[b]
	}
	for ; ok; m, ok = d.nextQueued(role, box, m.ID) {
		if !anyRoom(cands, load, limit) {
			return // the rest waits for an instance to finish a message
		}
		if d.dropDuplicate(role, box, m, boxes) {
			continue
		}
		for range len(cands) {
			// An instance writing to its own role means "another one of us".
			var best *agent
			for _, a := range cands {
				if (a.def.Name == m.From && len(cands) > 1) || load[a] >= limit {
					continue
				}
				if best == nil || lighter(a, best) {
					best = a
				}
			}
			if best == nil {
				break // every instance is at its limit: the message waits
			}
			_, err := box.MoveTo(m.ID, best.box)
			switch {
			case errors.Is(err, inbox.ErrFull):
				load[best] = limit // a sender filled it meanwhile
				continue
			case errors.Is(err, inbox.ErrBusy):
				d.routeIn(busyRetry)
			case err != nil:
				d.log.Warn("Routing failed", "role", role, "message", m.ID, "error", err)
			default:
				load[best]++
				d.events.Append(eventlog.Event{Type: eventlog.EvRouted, Agent: best.def.Name, Message: m.ID, Detail: "@" + role})
				best.poke()
			}
			break
		}
	}
}

// nextQueued returns the message of role's queue box after the one with
// id after, reporting the problems met on the way.
func (d *Daemon) nextQueued(role string, box *inbox.Box, after string) (inbox.Message, bool) {
	m, ok, errs := box.Next(after)
	d.inboxProblems("@"+role, errs, d.routeIn)
	return m, ok
}

// anyRoom reports whether any of cands has a backlog (load) below limit.
func anyRoom(cands []*agent, load map[*agent]int, limit int) bool {
	for _, a := range cands {
		if load[a] < limit {
			return true
		}
	}
	return false
}

// dropDuplicate removes (or, for another message under the same id, moves
// to bad/) the queue's copy of m when an instance already holds m, and
// reports whether it did: a message has one live copy and runs once.
func (d *Daemon) dropDuplicate(role string, queue *inbox.Box, m inbox.Message, instances []*inbox.Box) bool {
	copies, err := inbox.Find(m.ID, instances)
	if err != nil {
		d.log.Warn("Looking for copies of a queued message failed", "role", role, "message", m.ID, "error", err)
		return true // route it on a later pass rather than risk a second copy
	}
	if len(copies) == 0 {
		return false
	}
	queued := inbox.Copy{Box: queue, State: inbox.StateNew, Msg: m}
	if err := queued.Drop(copies[0]); err != nil {
		d.log.Warn("Dropping a duplicate queued message failed", "role", role, "message", m.ID, "error", err)
		return true
	}
	detail := fmt.Sprintf("%s was also in %s: dropped the queue's copy", m.ID, copies[0])
	d.log.Warn("Duplicate message in a role queue", "role", role, "message", m.ID, "kept", copies[0].String())
	d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Message: m.ID, Detail: detail})
	return true
}

// roleQueues are the "@role" queues of the roles with several instances
// and what makes the daemon route them again.
type roleQueues struct {
	roles      map[string]*inbox.Box // by role
	routeKick  chan struct{}         // buffered(1): route the role queues again
	routeTimer *time.Timer           // routes again at routeAt; Run's goroutine owns both
	routeAt    time.Time
}

// routeIn makes the daemon route again after delay (or sooner). It runs on
// the daemon's goroutine only.
func (q *roleQueues) routeIn(delay time.Duration) {
	at := time.Now().Add(delay)
	if q.routeTimer != nil && !q.routeAt.After(at) {
		return
	}
	if q.routeTimer != nil {
		q.routeTimer.Stop()
	}
	q.routeTimer, q.routeAt = time.NewTimer(delay), at
}

// kickRoute asks the daemon's goroutine to route the role queues again (an
// instance's backlog went down); it never blocks. Safe from any goroutine.
func (q *roleQueues) kickRoute() {
	select {
	case q.routeKick <- struct{}{}:
	default:
	}
}

// reconcile makes every message id that a crash (or a copy by hand) left
// in more than one inbox have one live copy, or none once it has an
// outcome, before anything is recovered, routed or delivered.
func (d *Daemon) reconcile() {
	var boxes []*inbox.Box
	for _, a := range d.agents {
		boxes = append(boxes, a.box)
	}
	for _, r := range d.cfg.Roles {
		if q, ok := d.roles[r.Name]; ok {
			boxes = append(boxes, q)
		}
	}
	res, errs := inbox.Reconcile(boxes)
	for _, err := range errs {
		d.log.Warn("Reconciling the inboxes", "error", err)
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Detail: "reconcile inboxes: " + err.Error()})
	}
	for _, r := range res {
		var gone []string
		for _, c := range r.Removed {
			gone = append(gone, c.String()+" (removed)")
		}
		for _, c := range r.Quarantined {
			gone = append(gone, c.String()+" (another message with this id: moved to bad/)")
		}
		var kept []string
		for _, c := range r.Kept {
			kept = append(kept, c.String())
		}
		detail := fmt.Sprintf("message %s was in several inboxes: kept %s; %s", r.ID, strings.Join(kept, ", "), strings.Join(gone, ", "))
		d.log.Warn("Message found in several inboxes", "message", r.ID, "kept", kept, "dropped", gone)
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Message: r.ID, Detail: detail})
	}
}

// inboxProblems logs the problems a listing of box reported. A file not
// ready yet (still being written) is only looked at again when its grace
// ends, through retry; the rest are warnings.
func (d *Daemon) inboxProblems(box string, errs []error, retry func(time.Duration)) {
	for _, err := range errs {
		var nr *inbox.NotReadyError
		if errors.As(err, &nr) {
			d.log.Debug("Inbox file not ready yet", "box", box, "error", err)
			retry(nr.Retry)
			continue
		}
		d.log.Warn("Inbox problem", "box", box, "error", err)
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Detail: box + ": " + err.Error()})
	}
}
