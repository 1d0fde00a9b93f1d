package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// Limits of the pages.
const (
	// agentMessages and humanMessages are how many messages an agent's
	// page and the Inbox page list.
	agentMessages = 30
	humanMessages = 100
	// maxDiff bounds the diff a landing's page shows, in bytes.
	maxDiff = 1 << 20
	// maxNotes is how many of the latest alerts and messages the live
	// badge offers for notifications.
	maxNotes = 20
	// maxReason bounds a rejection's reason (landing.MaxReasonLen) and a
	// reset's.
	maxReason = landing.MaxReasonLen
)

// pageState is what the pages keep: the alert history, and a lock around
// the marks' read-change-write.
type pageState struct {
	alerts  *alertFeed
	marksMu sync.Mutex
}

// newPageState makes the pages' state of s, the alert history read
// from the event log (the events after it come through Observe).
func (s *Server) newPageState() *pageState {
	ps := &pageState{alerts: &alertFeed{path: s.cfg.Team.EventsLog(), log: s.cfg.Log, changed: s.Notify}}
	if ps.alerts.path != "" {
		ps.alerts.load()
	}
	return ps
}

// pageRoutes adds the routes of the Agent page's actions and of the
// Inbox, Landings and Alerts pages.
func (s *Server) pageRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /agent/{name}/cancel", s.cancelMessage)
	m.HandleFunc("POST /agent/{name}/reset", s.reset)
	m.HandleFunc("GET /inbox", s.inboxPage)
	m.HandleFunc("POST /inbox/read", s.markRead)
	m.HandleFunc("POST /inbox/{id}/answer", s.answer)
	m.HandleFunc("GET /landings", s.landingsPage)
	m.HandleFunc("GET /landing/{id}", s.landingPage)
	m.HandleFunc("POST /landing/{id}/approve", s.approve)
	m.HandleFunc("POST /landing/{id}/reject", s.reject)
	m.HandleFunc("GET /alerts", s.alertsPage)
	m.HandleFunc("POST /alerts/seen", s.alertsSeen)
}

// doneText is what a page says after an action, by the code its address
// carries (?done=); "" for none. It is a pure function: the address says
// nothing of its own.
func doneText(code string) string {
	return map[string]string{
		"cancelled":      "Cancelled: it never runs.",
		"interrupting":   "Its turn is being interrupted; the message is recorded as cancelled when the turn ends.",
		"cancel-pending": "Its agent is in a git or ssh step: cancelled once the step ends (the Alerts page says if it cannot be).",
		"reset":          "Reset: its next message starts a fresh thread.",
		"reset-pending":  "Its agent is in a git or ssh step: its thread is reset once the step ends.",
		"answered":       "Answered.",
		"read":           "Marked read.",
		"approved":       "Approved: it lands (merged onto the latest base and verified again first).",
		"requeued":       "The branch moved since it was verified: nothing approved; its new commits are verified and wait for your review again.",
		"rejected":       "Rejected: its agent is told why.",
		"seen":           "Marked seen.",
	}[code]
}

// navOf says what waits for the human, st being the team's status (nil
// when unknown).
func (s *Server) navOf(page string, st *control.Status) nav {
	n, _ := s.navAndMarks(page, st)
	return n
}

// navAndMarks is navOf and the marks it read.
func (s *Server) navAndMarks(page string, st *control.Status) (nav, Marks) {
	n := nav{Page: page}
	marks, err := s.cfg.Team.LoadMarks()
	if err != nil {
		s.cfg.Log.Warn("Console cannot read its marks", "error", err)
	}
	ids, err := s.cfg.Team.MessageIDs(team.Human)
	if err != nil {
		s.cfg.Log.Warn("Console cannot list the human's inbox", "error", err)
	}
	n.Inbox = marks.Unread(ids)
	n.Alerts = s.pg.alerts.since(marks.AlertsSeen)
	if st != nil {
		for _, l := range st.Landings {
			if l.State == string(landing.Review) {
				n.Review++
			}
		}
	}
	return n, marks
}

// note is a notification the browser may show (when the human asked for
// them): a message to the human or an alert, by a key it keeps to show
// each once.
type note struct {
	Key   string `json:"key"`
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url"`
}

// badge is the live "badge" event: what waits for the human, for the
// tab's title and the header, and what to notify of.
type badge struct {
	Unread int    `json:"unread"`
	Inbox  int    `json:"inbox"`
	Alerts int    `json:"alerts"`
	Review int    `json:"review"`
	Notes  []note `json:"notes"`
}

// badgeOf is the badge of n (marks, the marks it was read with): the
// latest alerts, and the unread messages to the human that are no reply
// (a reply has its alert).
func (s *Server) badgeOf(n nav, marks Marks) badge {
	b := badge{Unread: n.Unread(), Inbox: n.Inbox, Alerts: n.Alerts, Review: n.Review, Notes: []note{}}
	for _, a := range s.pg.alerts.latest(maxNotes) {
		b.Notes = append(b.Notes, note{Key: "a:" + a.Time.UTC().Format(time.RFC3339Nano) + ":" + a.Kind + ":" + a.Agent,
			Title: "batty: " + strings.ReplaceAll(safetext.Line(a.Kind, 40), "_", " "), Body: safetext.Line(a.Message, 300), URL: cmp.Or(alertLink(a), "/alerts")})
	}
	if n.Inbox > 0 {
		ms, err := s.cfg.Team.Messages(team.Human, maxNotes)
		if err != nil {
			s.cfg.Log.Debug("Console cannot read the human's inbox", "error", err)
		}
		for _, m := range ms {
			if m.InReplyTo == "" && !marks.IsRead(m.ID) {
				b.Notes = append(b.Notes, note{Key: "m:" + m.ID, Title: "batty: " + safetext.Line(m.From, 80) + " writes to you",
					Body: safetext.Line(m.Body, 300), URL: "/inbox"})
			}
		}
	}
	return b
}

// badgeJSON is the badge of the team whose status is st, as the badge
// event carries it: the same for every open page, made once per status
// (renderCache) however many pages are open.
func (s *Server) badgeJSON(st *control.Status) (string, error) {
	return s.live.get(st, "\x00badge", func() (string, error) {
		data, err := json.Marshal(s.badgeOf(s.navAndMarks("", st)))
		return string(data), err
	})
}

// back sends the browser to path with the done code.
func back(w http.ResponseWriter, r *http.Request, path, code string) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	http.Redirect(w, r, path+sep+"done="+code, http.StatusSeeOther)
}

// refuse answers a request the team refused (status) with why, as text.
func refuse(w http.ResponseWriter, status int, why string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, why)
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

func (s *Server) landingsPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	v := newLandingsView(st)
	v.Nav, v.CSRF, v.Done = s.navOf("landings", st), s.csrfOf(r), doneText(r.URL.Query().Get("done"))
	s.render(w, r, "landings", v)
}

// landingOf returns the status and the row of the request named by r's
// path (or its id parameter), or answers 404.
func (s *Server) landingOf(w http.ResponseWriter, r *http.Request) (*control.Status, landingRow, bool) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return nil, landingRow{}, false
	}
	id := cmp.Or(r.PathValue("id"), r.URL.Query().Get("id"))
	for _, l := range st.Landings {
		if l.ID == id {
			return st, newLandingRow(l), true
		}
	}
	http.Error(w, "no such landing request", http.StatusNotFound)
	return nil, landingRow{}, false
}

func (s *Server) landingPage(w http.ResponseWriter, r *http.Request) {
	st, row, ok := s.landingOf(w, r)
	if !ok {
		return
	}
	v := s.landingView(r, st, row, s.csrfOf(r))
	v.Done = doneText(r.URL.Query().Get("done"))
	v.Diff, v.DiffCut, v.DiffErr = s.diffOf(r.Context(), row.Agent)
	s.render(w, r, "landing", v)
}

// landingView makes the page of the request of row, but for its diff:
// what the status says of it and what the queue's state file adds
// (verify's output, conflicts, the rejection).
func (s *Server) landingView(r *http.Request, st *control.Status, row landingRow, csrf string) landingView {
	var req landing.Request
	reqs, err := s.cfg.Team.Landings(r.Context())
	if err != nil {
		s.cfg.Log.Warn("Console cannot read the merge queue", "error", err)
	}
	for _, q := range reqs {
		if q.ID == row.ID {
			req = q
		}
	}
	v := newLandingView(row, req)
	v.Team, v.Nav, v.CSRF = st.Team, s.navOf("landings", st), csrf
	if err != nil {
		v.Err = err.Error()
	}
	return v
}

// diffOf reads agent's diff as `batty diff` shows it on a terminal
// (safetext.Block), at most maxDiff bytes of git's, and splits it into
// lines.
func (s *Server) diffOf(ctx context.Context, agent string) ([]diffLine, bool, string) {
	head := &textclip.HeadWriter{Max: maxDiff + 1}
	if err := s.cfg.Team.Diff(ctx, agent, head); err != nil {
		return nil, false, safetext.Line(err.Error(), maxShownLine)
	}
	text := head.String()
	cut := len(text) > maxDiff
	if cut {
		text = textclip.Bytes(text, maxDiff, "")
		if i := strings.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i+1]
		}
	}
	return diffLines(safetext.Block(text)), cut, ""
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	_, row, ok := s.landingOf(w, r)
	if !ok {
		return
	}
	resp, err := s.cfg.Team.Approve(r.Context(), row.ID)
	if err != nil {
		s.fail(w, r, http.StatusConflict, err)
		return
	}
	s.Notify()
	if resp.Requeued != "" {
		back(w, r, "/landing/"+row.ID, "requeued")
		return
	}
	back(w, r, "/landing/"+row.ID, "approved")
}

func (s *Server) reject(w http.ResponseWriter, r *http.Request) {
	_, row, ok := s.landingOf(w, r)
	if !ok {
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		http.Error(w, "a rejection needs a reason: its agent is told why, to act on it", http.StatusBadRequest)
		return
	}
	if _, err := s.cfg.Team.Reject(r.Context(), row.ID, textclip.Bytes(reason, maxReason, textclip.Truncated)); err != nil {
		s.fail(w, r, http.StatusConflict, err)
		return
	}
	s.Notify()
	back(w, r, "/landing/"+row.ID, "rejected")
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
