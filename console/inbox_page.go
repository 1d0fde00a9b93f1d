package console

// The Inbox page (/inbox): the messages to the human; answer, mark read.

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
)

// inboxRow is one message of the human's inbox.
type inboxRow struct {
	ID, Short, From, When string
	Body                  string
	BodyCut               bool
	// Re is the short id of the message it answers; ReText the first
	// line of that message when it is the human's.
	Re, ReText string
	Read       bool
	// Agent says From is an agent of the team: the human may answer.
	Agent bool
}

// inboxView is the Inbox page's data.
type inboxView struct {
	Team string
	Nav  nav
	CSRF string
	Err  string
	// Done says what the last action did.
	Done string
	Rows []inboxRow
}

// newInboxRows makes the rows of the human's messages ms, unread first,
// each newest first; asked gives the first line of a message the human
// sent (by the id a reply answers; "" when unknown), isAgent whether a
// name is an agent of the team. It is a pure function of its arguments.
func newInboxRows(ms []inbox.Listed, marks Marks, asked func(agent, id string) string, isAgent func(string) bool) []inboxRow {
	var unread, read []inboxRow
	for _, m := range ms {
		r := inboxRow{ID: m.ID, Short: inbox.ShortID(m.ID), From: safetext.Line(m.From, 80), When: when(m.CreatedAt),
			Body: shown(m.Body, 64<<10), BodyCut: m.BodyFile != "", Read: marks.IsRead(m.ID), Agent: isAgent(m.From)}
		if m.InReplyTo != "" {
			r.Re = inbox.ShortID(m.InReplyTo)
			if r.Agent {
				r.ReText = safetext.Line(asked(m.From, m.InReplyTo), 160)
			}
		}
		if r.Read {
			read = append(read, r)
		} else {
			unread = append(unread, r)
		}
	}
	return append(unread, read...)
}

// isAgentOf returns whether name is an agent of st.
func isAgentOf(st *control.Status) func(string) bool {
	return func(name string) bool {
		return slices.ContainsFunc(st.Agents, func(a control.AgentStatus) bool { return a.Name == name })
	}
}

// inboxView makes the Inbox page's data.
func (s *Server) inboxView(r *http.Request, st *control.Status) inboxView {
	v := inboxView{Team: st.Team, Nav: s.navOf("inbox", st), CSRF: s.csrfOf(r), Done: doneText(r.URL.Query().Get("done"))}
	ms, err := s.cfg.Team.Messages(team.Human, humanMessages)
	if err != nil {
		s.cfg.Log.Warn("Console cannot read the human's inbox", "error", err)
		if ms == nil {
			v.Err = err.Error()
		}
	}
	marks, err := s.cfg.Team.LoadMarks()
	if err != nil {
		s.cfg.Log.Warn("Console cannot read its marks", "error", err)
	}
	asked := func(agent, id string) string {
		m, err := s.cfg.Team.Message(agent, id)
		if err != nil || m.From != team.Human {
			return ""
		}
		return m.Body
	}
	v.Rows = newInboxRows(ms, marks, asked, isAgentOf(st))
	return v
}

func (s *Server) inboxPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	s.render(w, r, "inbox", s.inboxView(r, st))
}

// markAsRead marks the human's messages ids read (all when none).
func (s *Server) markAsRead(ids ...string) error {
	s.pg.marksMu.Lock()
	defer s.pg.marksMu.Unlock()
	exist, err := s.cfg.Team.MessageIDs(team.Human)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		ids = exist
	}
	marks, err := s.cfg.Team.LoadMarks()
	if err != nil {
		// A bad file is replaced: the marks start afresh.
		s.cfg.Log.Warn("Console cannot read its marks; writing them afresh", "error", err)
	}
	return s.cfg.Team.SaveMarks(marks.WithRead(exist, ids...))
}

func (s *Server) markRead(w http.ResponseWriter, r *http.Request) {
	var ids []string
	if id := r.PostFormValue("id"); id != "" {
		if !inbox.ValidID(id) {
			refuse(w, http.StatusBadRequest, "not a message id")
			return
		}
		ids = []string{id}
	}
	if err := s.markAsRead(ids...); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	s.Notify()
	back(w, r, "/inbox", "read")
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m, err := s.cfg.Team.Message(team.Human, id)
	if errors.Is(err, inbox.ErrNotFound) {
		http.Error(w, "no such message in your inbox", http.StatusNotFound)
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	_, agent, ok := s.agentNamed(w, r, m.From)
	if !ok {
		return
	}
	body := r.PostFormValue("body")
	if strings.TrimSpace(body) == "" {
		http.Error(w, "an empty answer: write something to send", http.StatusBadRequest)
		return
	}
	if _, err := s.cfg.Team.Reply(r.Context(), agent.Name, m.ID, body); err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	if err := s.markAsRead(m.ID); err != nil {
		s.cfg.Log.Warn("Console cannot mark a message read", "error", err)
	}
	s.Notify()
	back(w, r, "/inbox", "answered")
}
