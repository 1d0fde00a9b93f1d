package console

// The Team page (/): every agent's card, the totals, pause and resume.

import (
	"net/http"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/statusview"
)

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

func (s *Server) teamPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	v := newTeamView(st, err, s.csrfOf(r))
	v.Nav = s.navOf("team", st)
	s.render(w, r, "team", v)
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Team.Pause(r.Context()); err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	s.Notify()
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Team.Resume(r.Context()); err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	s.Notify()
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
