package console

import (
	"fmt"
	"html/template"
	"strconv"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/safetext"
)

// parsePages parses each page with the layout; every page defines
// "content", the layout "page".
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{"pct": pct}
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

// totals are the team's sums.
type totals struct {
	Agents, Busy, Backlog, Turns int
	Input, Output                string
	// Limit is the highest usage-limit percent of the team's accounts,
	// Budget the highest use of its budgets ("" when none).
	Limit, Budget gauge
}

// gauge is a percentage shown with its level: "" (none), ok, warn or
// over.
type gauge struct {
	Text, Level string
}

// newGauge shows p, nil for none, warning from warn percent, over from
// 100. It is a pure function.
func newGauge(p *float64, warn float64) gauge {
	switch {
	case p == nil:
		return gauge{}
	case *p >= 100:
		return gauge{Text: pct(*p), Level: "over"}
	case *p >= warn:
		return gauge{Text: pct(*p), Level: "warn"}
	}
	return gauge{Text: pct(*p), Level: "ok"}
}

// gaugeWarn is where a usage-limit or budget gauge turns to a warning.
const gaugeWarn = 80

// highest is the highest of ps, nil when none is set. It is a pure
// function.
func highest(ps ...*float64) *float64 {
	var h *float64
	for _, p := range ps {
		if p != nil && (h == nil || *p > *h) {
			h = p
		}
	}
	return h
}

// agentRow is one agent as the pages show it, every field text.
type agentRow struct {
	Name, Role, State, Why, Host, Account string
	Backlog, Turns                        int
	InFlight, InFlightFor                 string
	ContextPct                            float64
	Input, Output                         string
	Workspace                             string
	Busy                                  bool
	Limit, Budget                         gauge
	// Waiting says why an idle agent with a backlog starts no turn
	// (control.WaitingStatus's detail), "" when it does not wait.
	Waiting string
}

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
	var in, out int64
	var limit, spent *float64
	for _, a := range st.Agents {
		limit = highest(limit, a.LimitPct)
		row := newAgentRow(a)
		v.Agents = append(v.Agents, row)
		v.Totals.Agents++
		if row.Busy {
			v.Totals.Busy++
		}
		v.Totals.Backlog += a.Backlog
		v.Totals.Turns += a.TurnsCompleted
		in += a.InputTokens
		out += a.OutputTokens
	}
	for _, n := range st.Queues {
		v.Totals.Backlog += n
	}
	v.Totals.Input, v.Totals.Output = tokens(in), tokens(out)
	for _, b := range st.Budgets {
		spent = highest(spent, &b.UsedPct)
	}
	v.Totals.Limit, v.Totals.Budget = newGauge(limit, gaugeWarn), newGauge(spent, gaugeWarn)
	for _, l := range st.Landings {
		if l.State != "landed" && l.State != "failed" && l.State != "nothing" {
			v.Landings++
		}
	}
	return v
}

// maxWhy bounds the reason shown for an agent's state.
const maxWhy = 400

// newAgentRow makes a's row. It is a pure function.
func newAgentRow(a control.AgentStatus) agentRow {
	r := agentRow{Name: a.Name, Role: a.Role, State: a.State, Why: a.LastError, Host: a.Host, Account: a.Account,
		Backlog: a.Backlog, Turns: a.TurnsCompleted, ContextPct: a.ContextPct,
		Input: tokens(a.InputTokens), Output: tokens(a.OutputTokens),
		Limit: newGauge(a.LimitPct, gaugeWarn), Budget: newGauge(a.BudgetPct, gaugeWarn)}
	if r.Host == "" {
		r.Host = "local"
	}
	switch {
	case a.Parked != nil:
		r.Why = a.Parked.Detail + " — " + a.Parked.Fix
	case a.Network != nil:
		r.Why = a.Network.Message
	}
	// The reason may quote codex or a model: one clean line.
	r.Why = safetext.Line(r.Why, maxWhy)
	if w := a.Waiting; w != nil {
		// It may quote a pause reason or codex too.
		r.Waiting = safetext.Line(w.Detail, maxWhy)
	}
	if a.InFlight != nil {
		r.Busy = true
		r.InFlight = inbox.ShortID(*a.InFlight)
		r.InFlightFor = age(time.Duration(a.InFlightAgeS) * time.Second)
	}
	if ws := a.Workspace; ws != nil {
		r.Workspace = ws.Branch
		if ws.Ahead > 0 {
			r.Workspace += fmt.Sprintf(" +%d", ws.Ahead)
		}
		if ws.Dirty > 0 {
			r.Workspace += fmt.Sprintf(" ~%d", ws.Dirty)
		}
	}
	return r
}

// tokens shows a count of tokens: 950, 12.3k, 4.5M. It is a pure function.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
}

// age shows a duration to the second, its largest two units: 42s, 3m05s,
// 2h07m. It is a pure function.
func age(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}

// pct shows a percentage without decimals.
func pct(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + "%" }
