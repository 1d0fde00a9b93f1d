package console

// The Agent page (/agent/NAME): its card, transcript and inbox; send,
// cancel and reset.

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/logtail"
	"github.com/battyhq/batty/ptylog"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/textclip"
)

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

// agentOf returns the status and the agent named by r's path, or answers
// 404 (an agent not in the team: its name never reaches a path).
func (s *Server) agentOf(w http.ResponseWriter, r *http.Request) (*control.Status, *control.AgentStatus, bool) {
	return s.agentNamed(w, r, r.PathValue("name"))
}

// agentNamed is agentOf of the agent name.
func (s *Server) agentNamed(w http.ResponseWriter, r *http.Request, name string) (*control.Status, *control.AgentStatus, bool) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return nil, nil, false
	}
	for i := range st.Agents {
		if st.Agents[i].Name == name {
			return st, &st.Agents[i], true
		}
	}
	http.Error(w, "no such agent", http.StatusNotFound)
	return nil, nil, false
}

func (s *Server) agentPage(w http.ResponseWriter, r *http.Request) {
	st, a, ok := s.agentOf(w, r)
	if !ok {
		return
	}
	v := agentView{Team: st.Team, Nav: s.navOf("", st), Agent: statusview.NewAgent(*a), CSRF: s.csrfOf(r), Sent: r.URL.Query().Get("sent"),
		Messages: s.agentMessages(a.Name), Done: doneText(r.URL.Query().Get("done"))}
	v.Transcript, v.NoTranscript = s.lastLines(a.Name)
	s.render(w, r, "agent", v)
}

// lastLines returns the last lines of agent's transcript, cleaned as the
// panes show them, and whether there is none yet.
func (s *Server) lastLines(agent string) (string, bool) {
	var b bytes.Buffer
	clean := ptylog.NewCleanWriter(&b, false)
	t := &logtail.Tail{Path: s.cfg.Team.Transcript(agent), Label: "transcript of " + agent, Out: clean}
	err := t.PrintLast(transcriptLines)
	clean.Flush()
	if errors.Is(err, logtail.ErrNoFile) {
		return "", true
	}
	if err != nil {
		s.cfg.Log.Warn("Console cannot read a transcript", "agent", agent, "error", err)
	}
	return b.String(), false
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	_, a, ok := s.agentOf(w, r)
	if !ok {
		return
	}
	body := r.PostFormValue("body")
	if strings.TrimSpace(body) == "" {
		http.Error(w, "an empty message: write something to send", http.StatusBadRequest)
		return
	}
	id, err := s.cfg.Team.Send(r.Context(), a.Name, body)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	http.Redirect(w, r, "/agent/"+a.Name+"?sent="+id, http.StatusSeeOther)
}

func (s *Server) cancelMessage(w http.ResponseWriter, r *http.Request) {
	_, a, ok := s.agentOf(w, r)
	if !ok {
		return
	}
	id := r.PostFormValue("id")
	if !inbox.ValidID(id) {
		refuse(w, http.StatusBadRequest, "no message to cancel: the form names none")
		return
	}
	interrupt := r.PostFormValue("interrupt") != ""
	res, err := s.cfg.Team.Cancel(r.Context(), id, interrupt)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	s.Notify()
	switch res.Result {
	case control.CancelDone:
		back(w, r, "/agent/"+a.Name, "cancelled")
	case control.CancelInterrupting:
		back(w, r, "/agent/"+a.Name, "interrupting")
	case control.CancelPending:
		back(w, r, "/agent/"+a.Name, "cancel-pending")
	default:
		refuse(w, http.StatusConflict, fmt.Sprintf("%s was not cancelled (%s): %s", inbox.ShortID(id), res.Result, safetext.Line(res.Detail, maxShownLine)))
	}
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	_, a, ok := s.agentOf(w, r)
	if !ok {
		return
	}
	reason := textclip.Bytes(strings.TrimSpace(r.PostFormValue("reason")), maxReason, textclip.Truncated)
	if reason == "" {
		reason = "reset from the console"
	}
	pending, err := s.cfg.Team.Reset(r.Context(), a.Name, reason)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	s.Notify()
	if pending {
		back(w, r, "/agent/"+a.Name, "reset-pending")
		return
	}
	back(w, r, "/agent/"+a.Name, "reset")
}

// msgRow is one message of an agent's inbox, every field text.
type msgRow struct {
	ID, Short, From, To, When string
	// State is "new", "in flight" or the outcome's status; Class its CSS
	// class.
	State, Class string
	Body         string
	BodyCut      bool
	Re           string
	Reply, Error string
	Tokens       string
	// Cancel says it waits (cancel withdraws it); Interrupt that it is in
	// flight (cancel --interrupt ends its turn).
	Cancel, Interrupt bool
}

// newMsgRow makes the row of message m of an agent's inbox. It is a pure
// function.
func newMsgRow(m inbox.Listed) msgRow {
	r := msgRow{ID: m.ID, Short: inbox.ShortID(m.ID), From: safetext.Line(m.From, 80), To: safetext.Line(m.To, 80),
		When: when(m.CreatedAt), Body: shown(m.Body, maxShownBody), BodyCut: m.BodyFile != ""}
	if m.InReplyTo != "" {
		r.Re = inbox.ShortID(m.InReplyTo)
	}
	switch {
	case m.State == inbox.StateNew:
		r.State, r.Class, r.Cancel = "new", "new", true
	case m.State == inbox.StateCur:
		r.State, r.Class, r.Interrupt = fmt.Sprintf("in flight (attempt %d)", max(m.Attempt, 1)), "busy", true
	case m.Outcome != nil:
		o := m.Outcome
		r.State, r.Class = safetext.Line(o.Status, 40), "done"
		if o.Status != inbox.StatusCompleted {
			r.Class = "failed"
		}
		if o.Failure != "" {
			r.State += " (" + safetext.Line(o.Failure, 80) + ")"
		}
		r.Reply, r.Error = shown(o.Reply, maxShownReply), shown(o.Error, maxShownReply)
		r.Tokens = statusview.Tokens(o.InputTokens) + " in / " + statusview.Tokens(o.OutputTokens) + " out"
	default:
		r.State, r.Class = "done", "done"
	}
	return r
}

// agentMessages returns the rows of agent's latest messages.
func (s *Server) agentMessages(agent string) []msgRow {
	ms, err := s.cfg.Team.Messages(agent, agentMessages)
	if err != nil {
		s.cfg.Log.Warn("Console cannot read an inbox", "agent", agent, "error", err)
	}
	rows := make([]msgRow, 0, len(ms))
	for _, m := range ms {
		rows = append(rows, newMsgRow(m))
	}
	return rows
}

// agentLive renders the live part of agent's page from st: its card and
// its inbox.
func (s *Server) agentLive(w *bytes.Buffer, st *control.Status, agent, csrf string) error {
	for _, a := range st.Agents {
		if a.Name == agent {
			v := agentView{Team: st.Team, Agent: statusview.NewAgent(a), CSRF: csrf}
			v.Messages = s.agentMessages(agent)
			return s.pages["agent"].ExecuteTemplate(w, "live", v)
		}
	}
	return fmt.Errorf("no agent %q in the status", agent)
}
