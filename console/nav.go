package console

// What every page shares: its header (what waits for the human), the live
// badge, the words after an action.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
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
// from the event log (the alerts after it come through AlertSink).
func (s *Server) newPageState() *pageState {
	ps := &pageState{alerts: &alertFeed{path: s.cfg.Team.EventsLog(), log: s.cfg.Log}}
	if ps.alerts.path != "" {
		ps.alerts.load()
	}
	return ps
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
