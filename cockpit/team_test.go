package cockpit

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

func TestTeamSnapshot(t *testing.T) {
	id := "m1"
	resume := time.Now().Add(time.Hour)
	st := control.Status{Team: "demo", Agents: []control.AgentStatus{
		{Name: "a", State: "working", InFlight: &id, InFlightAgeS: 150, Backlog: 4},
		{Name: "b", State: "idle", Backlog: 2},
		{Name: "c", State: "failed"},
		{Name: "d", State: "parked", Backlog: 1, Parked: &control.ParkedStatus{Kind: "codex_missing"}},
	}}
	r := newCountingRunner()
	team := NewTeam(Server{Run: r}, "s", func() control.Status { return st }, UpdaterOptions{})
	titles := func() []string {
		var out []string
		for _, v := range team.Snapshot().Agents {
			out = append(out, Title(v))
		}
		return out
	}
	want := []string{"a · working 2m · 3 waiting", "b · idle · 2 waiting", "c · failed", "d · parked (codex missing) · 1 waiting"}
	if got := titles(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("titles %q, want %q", got, want)
	}

	// A pause the events named.
	st.Dispatch = control.DispatchStatus{Paused: true, Reason: "codex needs a login (reported by a): 401"}
	team.Event(eventlog.Event{Type: eventlog.EvPaused, Data: eventlog.Paused{Kind: PauseAuth}})
	if got := titles()[1]; got != "b · login needed · 2 waiting" {
		t.Fatalf("auth pause: %q", got)
	}
	// Resumed: the status says so first.
	st.Dispatch = control.DispatchStatus{}
	if got := titles()[1]; got != "b · idle · 2 waiting" {
		t.Fatalf("after resume: %q", got)
	}
	team.Event(eventlog.Event{Type: eventlog.EvResumed})
	// A pause kept from an earlier run: no event names its kind.
	st.Dispatch = control.DispatchStatus{Paused: true, Reason: "quota", ResumeAt: &resume}
	snap := team.Snapshot()
	if got := Title(snap.Agents[1]); got != "b · quota paused · 2 waiting" || !snap.Feed.ResumeAt.Equal(resume) {
		t.Fatalf("kept quota pause: %q, %v", got, snap.Feed.ResumeAt)
	}
	st.Dispatch = control.DispatchStatus{}

	// Codex waiting for the network; another agent of its account held.
	st.Agents[0].State = control.AgentWaitingForNetwork
	st.Agents[0].Network = &control.NetworkStatus{State: "waiting"}
	st.Agents[1].Network = &control.NetworkStatus{State: "held"}
	if got := titles(); got[0] != "a · waiting for network · 3 waiting" || got[1] != "b · held: no network · 2 waiting" {
		t.Fatalf("network: %q", got)
	}
	st.Agents[0].State, st.Agents[0].Network, st.Agents[1].Network = "working", nil, nil

	// A worktree agent's title names its branch and how far ahead it is.
	st.Agents[1].Workspace = &control.WorkspaceStatus{Branch: "batty/b", Base: "main", Exists: true, Ahead: 2, Behind: 1}
	if got := titles(); got[1] != "b · idle · 2 waiting · batty/b +2" || got[0] != "a · working 2m · 3 waiting" {
		t.Fatalf("worktree agent: %q", got)
	}
	st.Agents[1].Workspace = nil

}

func TestAlertText(t *testing.T) {
	at := time.Date(2030, 1, 2, 14, 5, 0, 0, time.Local)
	for _, tc := range []struct {
		e    eventlog.Event
		want string
	}{
		{eventlog.Event{Type: eventlog.EvQuotaBlocked, Agent: "a", Data: eventlog.QuotaBlocked{RetryAt: at.UTC()}}, "batty: quota exhausted (a): its account's agents are paused until 14:05"},
		{eventlog.Event{Type: eventlog.EvQuotaBlocked, Agent: "a"}, "batty: quota exhausted (a): its account's agents are paused"},
		{eventlog.Event{Type: eventlog.EvAuthRequired, Agent: "a"}, "batty: codex needs a login (a): run `codex login`, then `batty resume`"},
		{eventlog.Event{Type: eventlog.EvAgentFailed, Agent: "a", Detail: "d"}, "batty: a failed: d"},
		{eventlog.Event{Type: eventlog.EvWedged, Agent: "a", Detail: "no pong within 10s"}, "batty: a did not answer (no pong within 10s); restarting it"},
		{eventlog.Event{Type: eventlog.EvAgentParked, Agent: "a", Detail: "codex not found", Data: eventlog.AgentParked{Fix: "install it"}}, "batty: a parked: codex not found — install it"},
		{eventlog.Event{Type: eventlog.EvNetworkWaiting, Agent: "a"}, "batty: a's codex waits for the network; its account's agents start nothing new until the API answers"},
		{eventlog.Event{Type: eventlog.EvMessageFailed, Agent: "a", Detail: "boom"}, "batty: a message to a failed on its last try: boom"},
		{eventlog.Event{Type: eventlog.EvDelivered, Agent: "a"}, ""},
		{eventlog.Event{Type: eventlog.EvWarning, Agent: "a"}, ""},
	} {
		if got := AlertText(tc.e); got != tc.want {
			t.Errorf("AlertText(%s) = %q, want %q", tc.e.Type, got, tc.want)
		}
	}
}

func TestPauseKind(t *testing.T) {
	at := time.Now()
	for _, tc := range []struct {
		d    control.DispatchStatus
		want string
	}{
		{control.DispatchStatus{}, ""},
		{control.DispatchStatus{Paused: true, ResumeAt: &at}, PauseQuota},
		{control.DispatchStatus{Paused: true, Reason: "codex needs a login (reported by a)"}, PauseAuth},
		{control.DispatchStatus{Paused: true, Reason: "lunch"}, PauseManual},
	} {
		if got := pauseKind(tc.d); got != tc.want {
			t.Errorf("pauseKind(%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestShownAlert(t *testing.T) {
	for _, tc := range []struct {
		e    eventlog.Event
		kind string // "" when not shown
	}{
		{eventlog.Event{Type: eventlog.EvQuotaBlocked, Agent: "a"}, eventlog.AlertQuota},
		{eventlog.Event{Type: eventlog.EvMessageFailed, Agent: "a"}, eventlog.AlertMessageFailed},
		{eventlog.Event{Type: eventlog.EvWedged, Agent: "a"}, eventlog.AlertAgentWedged},
		{eventlog.Event{Type: eventlog.EvRecordFailed, Agent: "a"}, eventlog.AlertRecordFailed},
		{eventlog.Event{Type: eventlog.EvMemoryLow}, eventlog.AlertMemory},
		{eventlog.Event{Type: eventlog.EvMemoryRecovered}, ""},
		// Alerts for on_alert that the cockpit leaves to the feed's own lines.
		{eventlog.Event{Type: eventlog.EvReply, Agent: "a"}, ""},
		{eventlog.Event{Type: eventlog.EvReply, Agent: "a", Data: eventlog.Reply{To: "b"}}, ""},
		{eventlog.Event{Type: eventlog.EvContextExhaust, Agent: "a"}, ""},
		{eventlog.Event{Type: eventlog.EvRejected, Agent: "a"}, ""},
		{eventlog.Event{Type: eventlog.EvTurnFinished, Agent: "a", Data: eventlog.TurnFinished{Status: "failed"}}, ""},
		// Not alerts at all.
		{eventlog.Event{Type: eventlog.EvDelivered, Agent: "a"}, ""},
	} {
		a, ok := ShownAlert(tc.e)
		if ok != (tc.kind != "") || a.Kind != tc.kind && ok {
			t.Errorf("ShownAlert(%s) = %q, %v; want %q", tc.e.Type, a.Kind, ok, tc.kind)
		}
		if _, alert := eventlog.AlertFor(tc.e); ok && !alert {
			t.Errorf("ShownAlert(%s) shows an event AlertFor does not call an alert", tc.e.Type)
		}
	}
}
