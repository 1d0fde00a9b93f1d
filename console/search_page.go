package console

// The Search page (/search?q=…&agent=…): full-text search over every
// thread of the team, as `batty search`, the snippets redacted.

import (
	"net/http"
	"strings"

	"github.com/battyhq/batty/redact"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/textclip"
)

// maxQuery bounds a search's text, in bytes.
const maxQuery = 1000

// hitRow is one turn found.
type hitRow struct {
	Agent, Thread, ThreadShort, Message, From, At, Field, Snippet string
}

// searchView is the Search page's data.
type searchView struct {
	Team   string
	Nav    nav
	Query  string
	Agent  string
	Names  []string
	Err    string
	Asked  bool
	Hits   []hitRow
	Direct string
}

// newHitRows makes the rows of hits, their snippets redacted. It is a
// pure function.
func newHitRows(hits []searchindex.Hit) []hitRow {
	var out []hitRow
	for _, h := range hits {
		out = append(out, hitRow{Agent: safetext.Line(h.Agent, 80), Thread: h.Thread, ThreadShort: statusview.ThreadCell(h.Thread),
			Message: safetext.Line(h.Message, 0), From: safetext.Line(h.From, 80), At: when(h.At), Field: safetext.Line(h.Field, 20),
			Snippet: shown(redact.Text(h.Snippet), maxShownLine)})
	}
	return out
}

func (s *Server) searchPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	q := r.URL.Query()
	v := searchView{Team: st.Team, Nav: s.navOf("search", st), Query: textclip.Bytes(strings.TrimSpace(q.Get("q")), maxQuery, ""), Agent: q.Get("agent")}
	for _, a := range st.Agents {
		v.Names = append(v.Names, a.Name)
	}
	if v.Query != "" {
		v.Asked = true
		query := searchindex.Query{Text: v.Query}
		if v.Agent != "" {
			query.Agents = []string{v.Agent}
		}
		if len(searchindex.Terms(v.Query)) == 0 {
			v.Err = "No word to search for: words are letters and digits."
		} else if res, err := s.cfg.Team.Search(r.Context(), query); err != nil {
			v.Err = safetext.Line(err.Error(), maxShownLine)
		} else {
			v.Hits = newHitRows(res.Hits)
			if res.Stale > 0 || strings.HasPrefix(res.Direct, "the index") {
				v.Direct = safetext.Line(res.Direct, maxShownLine)
			}
		}
	}
	s.render(w, r, "search", v)
}
