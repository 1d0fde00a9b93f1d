package cockpit

import (
	"fmt"
	"strings"
	"sync"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/statusview"
)

// Team turns a running daemon's status and events into what the cockpit
// shows. Event is meant for orchestrator.Options.OnEvent: it never blocks.
// Safe for concurrent use.
type Team struct {
	status func() control.Status
	up     *Updater

	mu    sync.Mutex
	pause string // kind of the dispatch pause, from the events
}

// NewTeam returns the view of a team whose status is read with status
// (called from the updater's goroutine), and the updater that shows it on
// srv's session.
func NewTeam(srv Server, session string, status func() control.Status, opts UpdaterOptions) *Team {
	t := &Team{status: status}
	t.up = NewUpdater(srv, session, t.Snapshot, opts)
	return t
}

// Updater returns the updater; its Run must be run by the owner.
func (t *Team) Updater() *Updater { return t.up }

// Event notes an orchestrator event: the titles are refreshed (batched).
// It never blocks. Alerts reach attached clients through the cockpit's
// alert sink (NewAlertSink).
func (t *Team) Event(e eventlog.Event) {
	t.mu.Lock()
	switch e.Type {
	case eventlog.EvPaused:
		if p, ok := e.Data.(eventlog.Paused); ok {
			t.pause = p.Kind
		}
	case eventlog.EvResumed:
		t.pause = ""
	}
	t.mu.Unlock()
	t.up.Changed()
}

// Snapshot returns what the titles show now.
func (t *Team) Snapshot() Snapshot {
	st := t.status()
	t.mu.Lock()
	kind := t.pause
	t.mu.Unlock()
	if !st.Dispatch.Paused {
		kind = ""
	} else if kind == "" {
		kind = pauseKind(st.Dispatch)
	}
	snap := Snapshot{Feed: FeedView{Team: st.Team, Pause: kind, Reason: st.Dispatch.Reason, TeamChanged: st.TeamFileChanged}}
	if st.Dispatch.ResumeAt != nil {
		snap.Feed.ResumeAt = *st.Dispatch.ResumeAt
	}
	// A usage limit pauses an account: its agents, not the team.
	quota := map[string]bool{}
	for _, acc := range st.Accounts {
		if !acc.Paused {
			continue
		}
		for _, n := range acc.Agents {
			quota[n] = true
		}
		if snap.Feed.Pause == "" {
			snap.Feed.Pause, snap.Feed.Reason = PauseQuota, acc.Reason
			if acc.ResumeAt != nil {
				snap.Feed.ResumeAt = *acc.ResumeAt
			}
		}
	}
	for _, a := range st.Agents {
		r := statusview.NewAgent(a)
		v := AgentView{Name: r.Name, State: r.State, Pause: kind, Waiting: r.Behind, Busy: r.Busy, Working: r.InFlightAge,
			Branch: r.Branch, Ahead: r.AheadBy}
		if kind == "" && quota[a.Name] {
			v.Pause = PauseQuota
		}
		if a.Network != nil {
			v.Network = a.Network.State == "waiting"
			v.Held = a.Network.State == "held"
		}
		if a.Parked != nil {
			v.Parked = a.Parked.Kind
		}
		snap.Agents = append(snap.Agents, v)
	}
	return snap
}

// pauseKind guesses the kind of a pause no event named (one kept from an
// earlier run): only a quota pause has a resume time. Pure.
func pauseKind(d control.DispatchStatus) string {
	switch {
	case !d.Paused:
		return ""
	case d.ResumeAt != nil:
		return PauseQuota
	case strings.Contains(d.Reason, "login"):
		return PauseAuth
	}
	return PauseManual
}

// ShownAlert reports whether the cockpit (display-message and the feed's
// ALERT lines) shows event e as an alert, and which. The events that are
// alerts are decided by eventlog.AlertFor alone; of those the cockpit
// shows the kinds that stop or lose work, not replies (the inbox has
// them), a full context window (retried on a fresh thread), or a turn's
// failure told by its own event (rejected, turn_finished: the feed has a
// line for each). Pure.
func ShownAlert(e eventlog.Event) (eventlog.Alert, bool) {
	a, ok := eventlog.AlertFor(e)
	if !ok || !Shown(a) {
		return eventlog.Alert{}, false
	}
	return a, true
}

// Shown reports whether the cockpit shows alert a (see ShownAlert). Pure.
func Shown(a eventlog.Alert) bool {
	switch a.Kind {
	case eventlog.AlertQuota, eventlog.AlertAuth, eventlog.AlertNetwork,
		eventlog.AlertAgentFailed, eventlog.AlertAgentWedged, eventlog.AlertAgentParked, eventlog.AlertRecordFailed,
		eventlog.AlertMemory:
		return true
	case eventlog.AlertMessageFailed:
		return a.Event == eventlog.EvMessageFailed
	}
	return false
}

// AlertText returns the message shown to attached clients for an alert
// event (see ShownAlert), "" for the events that are not shown as alerts.
// Pure.
func AlertText(e eventlog.Event) string {
	a, ok := ShownAlert(e)
	if !ok {
		return ""
	}
	return alertText(a)
}

// alertText words alert a for attached clients ("" for a kind the cockpit
// does not show). Pure.
func alertText(a eventlog.Alert) string {
	switch a.Kind {
	case eventlog.AlertQuota:
		s := fmt.Sprintf("batty: quota exhausted (%s): its account's agents are paused", a.Agent)
		q, _ := a.Data.(eventlog.QuotaBlocked)
		at := q.ResumeAt
		if at.IsZero() {
			at = q.RetryAt
		}
		if !at.IsZero() {
			s += " until " + at.Local().Format("15:04")
		}
		return s
	case eventlog.AlertAuth:
		return fmt.Sprintf("batty: codex needs a login (%s): run `codex login`, then `batty resume`", a.Agent)
	case eventlog.AlertAgentFailed:
		return fmt.Sprintf("batty: %s failed: %s", a.Agent, a.Detail)
	case eventlog.AlertAgentParked:
		s := fmt.Sprintf("batty: %s parked: %s", a.Agent, a.Detail)
		if p, _ := a.Data.(eventlog.AgentParked); p.Fix != "" && !strings.Contains(a.Detail, p.Fix) {
			s += " — " + p.Fix
		}
		return s
	case eventlog.AlertNetwork:
		return fmt.Sprintf("batty: %s's codex waits for the network; its account's agents start nothing new until the API answers", a.Agent)
	case eventlog.AlertMessageFailed:
		return fmt.Sprintf("batty: a message to %s failed on its last try: %s", a.Agent, a.Detail)
	case eventlog.AlertAgentWedged:
		return fmt.Sprintf("batty: %s did not answer (%s); restarting it", a.Agent, a.Detail)
	case eventlog.AlertMemory:
		return "batty: free memory is low; no new turn starts here until it is back: " + a.Detail
	}
	return ""
}
