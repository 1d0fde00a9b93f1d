package console

// The show page (/show?id=…): what a message made — its turns, its
// commits, where they landed, their files — or a commit's message and
// turn, as `batty show`.

import (
	"net/http"
	"strings"

	"github.com/battyhq/batty/blame"
	"github.com/battyhq/batty/redact"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
)

// maxShowQuery bounds what the show page is asked for, in bytes.
const maxShowQuery = 256

// showView is the show page's data.
type showView struct {
	Team             string
	Nav              nav
	Query, MessageID string
	Err              string
	Turns            []blameTurn
	Commits          []blameCommit
	Gone             []string
}

// newShowView makes the page of sh, the texts redacted. It is a pure
// function.
func newShowView(sh blame.Shown) showView {
	v := showView{Query: safetext.Line(sh.Query, 0), MessageID: safetext.Line(sh.MessageID, 0)}
	for _, t := range sh.Turns {
		v.Turns = append(v.Turns, blameTurn{Agent: safetext.Line(t.Agent, 80), Thread: t.Thread, ThreadShort: statusview.ThreadCell(t.Thread),
			From: safetext.Line(t.From, 80), At: when(t.At), Text: shown(redact.Text(t.Text), maxShownBody), Attempt: t.Attempt})
	}
	for _, c := range sh.Commits {
		v.Commits = append(v.Commits, newBlameCommit(c))
	}
	for _, g := range sh.Gone {
		v.Gone = append(v.Gone, statusview.ShortCommit(g))
	}
	return v
}

func (s *Server) showPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	what := strings.TrimSpace(r.URL.Query().Get("id"))
	if what == "" || len(what) > maxShowQuery || strings.HasPrefix(what, "-") {
		http.Error(w, "show: give a message id or a commit (?id=)", http.StatusBadRequest)
		return
	}
	v := showView{Query: safetext.Line(what, 0)}
	if sh, err := s.cfg.Team.Show(r.Context(), what); err != nil {
		v.Err = safetext.Line(err.Error(), maxShownLine)
	} else {
		v = newShowView(sh)
	}
	v.Team, v.Nav = st.Team, s.navOf("", st)
	s.render(w, r, "show", v)
}
