package console

import (
	"fmt"
	"html/template"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/statusview"
)

// parsePages parses each page with the layout; every page defines
// "content", the layout "page".
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{"pct": statusview.Pct}
	pages := map[string]*template.Template{}
	for p, files := range pageFiles {
		t, err := template.New(p).Funcs(funcs).ParseFS(webFiles, append([]string{"web/layout.html"}, files...)...)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", p, err)
		}
		pages[p] = t
	}
	return pages, nil
}

// pageFiles are the templates of each page, besides the layout.
var pageFiles = map[string][]string{
	"team":     {"web/team.html"},
	"agent":    {"web/agent.html", "web/messages.html"},
	"inbox":    {"web/inbox.html"},
	"landings": {"web/landings.html"},
	"landing":  {"web/landing.html"},
	"alerts":   {"web/alerts.html"},
	"usage":    {"web/usage.html"},
}

// teamView is the team page's data (and its live part's).
type teamView struct {
	Team     string
	Nav      nav
	Err      string
	CSRF     string
	Paused   bool
	Reason   string
	Agents   []agentRow
	Totals   totals
	Landings int
}

// totals are the team's sums as the team page shows them
// (statusview.Totals): Busy counts the turns that run, Backlog the
// agents' backlogs and the messages in role queues.
type totals struct {
	Agents, Busy, Backlog, Turns int
	Input, Output                string
	// Limit is the highest usage-limit percent of the team's accounts,
	// Budget the highest use of its budgets ("" when none).
	Limit, Budget gauge
}

// gauge is a percentage shown with its level (statusview.Gauge).
type gauge = statusview.Gauge

// agentRow is one agent as the pages show it (statusview.Agent).
type agentRow = statusview.Agent

// agentView is the agent page's data.
type agentView struct {
	Team         string
	Nav          nav
	Agent        agentRow
	CSRF         string
	Sent         string
	Transcript   string
	NoTranscript bool
	// Messages are its inbox, newest first; Done says what the last
	// action did.
	Messages []msgRow
	Done     string
}

// newTeamView makes the team page's data of st (err when it could not be
// had). It is a pure function.
func newTeamView(st *control.Status, err error, csrf string) teamView {
	v := teamView{CSRF: csrf}
	if err != nil {
		v.Err = err.Error()
		return v
	}
	v.Team, v.Paused, v.Reason = st.Team, st.Dispatch.Paused, st.Dispatch.Reason
	for _, a := range st.Agents {
		v.Agents = append(v.Agents, statusview.NewAgent(a))
	}
	t := statusview.NewTotals(*st)
	v.Totals = totals{Agents: t.Agents, Busy: t.Working, Backlog: t.Backlog + t.Queued, Turns: t.Turns,
		Input: t.Input, Output: t.Output, Limit: t.Limit, Budget: t.Budget}
	v.Landings = statusview.OpenLandings(st.Landings)
	return v
}
