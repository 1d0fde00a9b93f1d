package console

// The Alerts page (/alerts): the team's alerts; mark them seen.

import (
	"net/http"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/safetext"
)

// alertRow is one alert.
type alertRow struct {
	When, Kind, Agent, Message string
	// Link is the page that tells more ("" for none).
	Link string
	// New says the human has not marked it seen.
	New bool
}

// alertsView is the Alerts page's data.
type alertsView struct {
	Team string
	Nav  nav
	CSRF string
	Done string
	Rows []alertRow
}

// newAlertRows makes the rows of alerts (newest first), new those after
// seen. It is a pure function.
func newAlertRows(alerts []eventlog.Alert, seen time.Time) []alertRow {
	var out []alertRow
	for _, a := range alerts {
		r := alertRow{When: when(a.Time), Kind: safetext.Line(a.Kind, 40), Agent: safetext.Line(a.Agent, 80),
			Message: shown(a.Message, maxShownReply), Link: alertLink(a), New: a.Time.After(seen)}
		out = append(out, r)
	}
	return out
}

// alertLink is the page that tells more of alert a. It is a pure
// function.
func alertLink(a eventlog.Alert) string {
	switch a.Kind {
	case eventlog.AlertLandingFailed, eventlog.AlertReviewWaiting:
		return "/landings"
	case eventlog.AlertReply:
		return "/inbox"
	}
	return ""
}

// alertsView makes the Alerts page's data.
func (s *Server) alertsView(r *http.Request, st *control.Status) alertsView {
	marks, err := s.cfg.Team.LoadMarks()
	if err != nil {
		s.cfg.Log.Warn("Console cannot read its marks", "error", err)
	}
	return alertsView{Team: st.Team, Nav: s.navOf("alerts", st), CSRF: s.csrfOf(r), Done: doneText(r.URL.Query().Get("done")),
		Rows: newAlertRows(s.pg.alerts.latest(maxAlerts), marks.AlertsSeen)}
}

func (s *Server) alertsPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	s.render(w, r, "alerts", s.alertsView(r, st))
}

func (s *Server) alertsSeen(w http.ResponseWriter, r *http.Request) {
	s.pg.marksMu.Lock()
	marks, err := s.cfg.Team.LoadMarks()
	if err != nil {
		s.cfg.Log.Warn("Console cannot read its marks; writing them afresh", "error", err)
	}
	// Seen up to the newest alert there is: a later one is new.
	if latest := s.pg.alerts.latest(1); len(latest) == 1 && latest[0].Time.After(marks.AlertsSeen) {
		marks.AlertsSeen = latest[0].Time
	}
	err = s.cfg.Team.SaveMarks(marks)
	s.pg.marksMu.Unlock()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	s.Notify()
	back(w, r, "/alerts", "seen")
}
