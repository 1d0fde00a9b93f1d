package cockpit

import (
	"fmt"
	"strings"
	"time"

	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
)

// Dispatch pause kinds, as the orchestrator names them.
const (
	PauseQuota  = "quota"
	PauseAuth   = "auth"
	PauseManual = "manual"
)

// AgentView is what a pane title shows of one agent.
type AgentView struct {
	Name string
	// State is the orchestrator's state of the agent (idle, working,
	// spawning, starting, restarting, stopping, stopped, failed).
	State string
	// Busy reports a message in flight, for Working.
	Busy    bool
	Working time.Duration
	// Waiting counts the messages queued behind the one in flight.
	Waiting int
	// Pause is the kind of the team's dispatch pause ("" when running).
	Pause string
	// Network reports that the agent's codex is waiting for the network.
	Network bool
	// Held reports that another agent of its account waits for the
	// network, so it starts no new turn.
	Held bool
	// Parked is the kind of problem that parks the agent (its codex cannot
	// run: "codex_missing", "not_logged_in", …), "" when it is not parked.
	Parked string
	// Branch is the agent's branch when it works in a git worktree of its
	// own (batty/<agent>), "" when it works in the project's checkout.
	Branch string
	// Ahead counts the commits on Branch not on the team's base branch.
	Ahead int
}

// Title renders an agent's pane title: its name, its live state (idle,
// working 2m, quota paused, waiting for network, parked (not logged in),
// failed, …), when messages wait, how many, and for an agent in a
// worktree its branch and how many commits it is ahead of the base
// ("engineer-1 · working 2m · 3 waiting · batty/engineer-1 +2"). Ages
// are in whole minutes, so a title changes at most once a minute by
// itself. Pure.
func Title(v AgentView) string {
	parts := []string{v.Name, agentState(v)}
	if v.Waiting > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting", v.Waiting))
	}
	if v.Branch != "" {
		parts = append(parts, fmt.Sprintf("%s +%d", v.Branch, v.Ahead))
	}
	return clean(strings.Join(parts, " · "))
}

func agentState(v AgentView) string {
	switch {
	case v.State == "failed":
		return "failed"
	case v.Parked != "" || v.State == "parked":
		if v.Parked == "" {
			return "parked"
		}
		return "parked (" + strings.ReplaceAll(v.Parked, "_", " ") + ")"
	case v.State == "finishing":
		// Its turn has ended (it waits for no network any more); its
		// outcome is being recorded.
		return "finishing"
	case v.Network || v.State == "waiting_for_network":
		return "waiting for network"
	case v.Busy:
		return "working " + statusview.Duration(v.Working, time.Minute)
	case v.State == "restarting":
		return "restarting"
	case v.Held:
		return "held: no network"
	case v.State == "spawning" || v.State == "starting":
		return "starting"
	case v.State == "stopping" || v.State == "stopped":
		return "stopped"
	case v.Pause == PauseQuota:
		return "quota paused"
	case v.Pause == PauseAuth:
		return "login needed"
	case v.Pause != "":
		return "paused"
	case v.State == "working":
		return "working"
	}
	return "idle"
}

// FeedView is what the orchestrator pane's title shows.
type FeedView struct {
	Team     string
	Pause    string // kind of the dispatch pause, "" when running
	Reason   string
	ResumeAt time.Time // end of a quota pause; zero when unknown
	// TeamChanged says that the team's files changed since the team
	// started (control.Status.TeamFileChanged).
	TeamChanged bool
}

// FeedTitle renders the orchestrator pane's title: the team and its
// dispatch gate ("orchestrator · demo · quota paused until 14:32"). Pure.
func FeedTitle(v FeedView) string {
	s := "orchestrator · " + v.Team + " · "
	switch v.Pause {
	case "":
		s += "dispatch running"
	case PauseQuota:
		s += "quota paused"
		if !v.ResumeAt.IsZero() {
			s += " until " + v.ResumeAt.Local().Format("15:04")
		}
	case PauseAuth:
		s += "paused: codex needs a login (codex login, then batty resume)"
	default:
		s += "paused"
		if v.Reason != "" {
			s += ": " + v.Reason
		}
	}
	if v.TeamChanged {
		s += " · team.yaml changed: batty restart applies it"
	}
	return clean(s)
}

// clean makes s safe as a title or message: one line of at most 200 runes
// (safetext.Line), so that control characters or an escape sequence in an
// agent's error cannot garble the border or drive the terminal.
func clean(s string) string { return safetext.Line(s, 200) }
