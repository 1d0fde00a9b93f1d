// Package budget decides the team's token budgets (team.yaml budgets):
// which budgets cover an agent, the calendar window a budget counts in,
// how much of it the covered agents used, when to warn, when the budget is
// reached and whom it holds. Every function is pure: the clock (now) and
// the time zone are given, and so are the turns, read from the usage
// ledger by the caller.
//
// What counts: the usage ledger's total of a turn (usage.Tokens.Total),
// input + output as Codex reports them, where input includes the tokens
// served from the prompt cache and output the reasoning tokens. A turn
// counts in the window its end falls in (the ledger's time of the turn).
//
// Windows are calendar-aligned in the given time zone (the daemon's local
// zone): an hour starts at minute 0, a day at midnight, a week at
// midnight on Monday. A day or week across a daylight-saving change is
// that much shorter or longer.
package budget

import (
	"slices"
	"time"

	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/usage"
)

// Window is the calendar period per (team.PerHour, PerDay or PerWeek)
// that holds now, [start, end), in loc (nil: UTC). An unknown per is
// taken as a day.
func Window(per string, now time.Time, loc *time.Location) (start, end time.Time) {
	if loc == nil {
		loc = time.UTC
	}
	t := now.In(loc)
	switch per {
	case team.PerHour:
		// By the minutes and seconds of the local clock: an hour of a
		// zone whose offset is not whole hours starts at its own :00.
		start = t.Add(-(time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())))
		return start, start.Add(time.Hour)
	case team.PerWeek:
		y, m, d := t.Date()
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, loc), time.Date(y, m, d-back+7, 0, 0, 0, 0, loc)
	default:
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, loc), time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
}

// Covers reports whether b covers the agent named agent, of role role: b
// is for the team, for the role, or for the agent.
func Covers(b team.Budget, agent, role string) bool {
	return b.For == team.BudgetTeam || b.For == role || b.For == agent
}

// Used is the total tokens (usage.Tokens.Total) of the turns of the
// agents b covers that ended in [start, end).
func Used(b team.Budget, turns []usage.Turn, start, end time.Time) int64 {
	return usage.Sum(turns, start, end, func(t usage.Turn) bool { return Covers(b, t.Agent, t.Role) }).Total()
}

// WarnTokens is the use at which b warns: WarnAt percent of Tokens,
// rounded up, computed without overflow.
func WarnTokens(b team.Budget) int64 {
	w := int64(b.WarnAt)
	return b.Tokens/100*w + (b.Tokens%100*w+99)/100
}

// Mark is what was done about a budget in one window: kept in the
// daemon's state so that a restart sends no alert twice and keeps a
// resume. A mark of another window than the current one is void.
type Mark struct {
	// Start is the start of the window the mark is of.
	Start time.Time `json:"start"`
	// Warned and Reached: the warning, the reached alert was sent.
	Warned  bool `json:"warned,omitempty"`
	Reached bool `json:"reached,omitempty"`
	// Resumed: `batty resume` (the team) let every agent of the budget go
	// on for the rest of the window; ResumedAgents: `batty resume
	// <agent>` let these.
	Resumed       bool     `json:"resumed,omitempty"`
	ResumedAgents []string `json:"resumed_agents,omitempty"`
}

// In returns m when it is of the window starting at start, else the empty
// mark of that window.
func (m Mark) In(start time.Time) Mark {
	if m.Start.Equal(start) {
		return m
	}
	return Mark{Start: start}
}

// Alert is what a budget's use calls for.
type Alert int

// The alerts of Decide.
const (
	AlertNone Alert = iota
	// AlertWarning: the use crossed warn_at.
	AlertWarning
	// AlertReached: the use reached the budget.
	AlertReached
)

// Decide is the alert b's use calls for in the window starting at start,
// given the mark m of what was sent (of any window), and the mark to keep:
// at most one warning and one reached alert per window; a use that goes
// past the budget at once gets the reached alert alone.
func Decide(b team.Budget, used int64, m Mark, start time.Time) (Mark, Alert) {
	m = m.In(start)
	switch {
	case used >= b.Tokens && !m.Reached:
		m.Reached, m.Warned = true, true
		return m, AlertReached
	case used >= WarnTokens(b) && !m.Warned:
		m.Warned = true
		return m, AlertWarning
	}
	return m, AlertNone
}

// Holds reports whether b, used up to used in the window starting at
// start, holds agent: it is reached and no resume of this window lets the
// agent go on.
func Holds(b team.Budget, used int64, m Mark, start time.Time, agent string) bool {
	if used < b.Tokens {
		return false
	}
	m = m.In(start)
	return !m.Resumed && !slices.Contains(m.ResumedAgents, agent)
}

// Resume is the mark after `batty resume` at a budget whose window starts
// at start: of the whole budget when agent is "", else of the agent
// alone. changed is false when it was resumed already.
func Resume(m Mark, start time.Time, agent string) (next Mark, changed bool) {
	m = m.In(start)
	switch {
	case m.Resumed:
		return m, false
	case agent == "":
		m.Resumed, m.ResumedAgents = true, nil
		return m, true
	case slices.Contains(m.ResumedAgents, agent):
		return m, false
	}
	m.ResumedAgents = append(slices.Clone(m.ResumedAgents), agent)
	return m, true
}

// Hold is a budget that holds an agent.
type Hold struct {
	Budget string    `json:"budget"` // its key, team.Budget.Key
	Used   int64     `json:"used_tokens"`
	Tokens int64     `json:"budget_tokens"`
	Until  time.Time `json:"until"` // the end of its window
}

// State is the daemon's budget state (state/budgets.json): the mark of
// each budget by key.
type State struct {
	V     int             `json:"v"`
	Marks map[string]Mark `json:"marks"`
}

// StateVersion is State.V.
const StateVersion = 1
