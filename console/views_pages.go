package console

import (
	"fmt"
	"strings"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/textclip"
)

// Limits of what the pages show of a text an agent or a model wrote.
const (
	maxShownBody  = 4000
	maxShownReply = 4000
	maxShownLine  = 300
)

// nav is the header's part of every page: where it is and what waits for
// the human.
type nav struct {
	// Page names the page ("team", "inbox", "landings", "alerts", "").
	Page string
	// Inbox counts the human's unread messages; Alerts the alerts not
	// seen; Review the landings waiting for review.
	Inbox, Alerts, Review int
}

// Unread is what the tab's title counts: unread messages and unseen
// alerts.
func (n nav) Unread() int { return n.Inbox + n.Alerts }

// shown is an agent's or a model's text for a page: escape sequences and
// control characters made inert (as the panes show them), at most max
// runes. html/template escapes the rest. It is a pure function.
func shown(s string, max int) string {
	return textclip.Runes(safetext.Text(strings.TrimRight(s, "\n")), max, textclip.Ellipsis)
}

// when shows a time on the pages. It is a pure function.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("Jan 2 15:04:05")
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

// landingRow is one request of the merge queue.
type landingRow struct {
	ID, Short, Agent, State, By, When string
	Detail                            string
	Tip, Onto, Commit                 string
	// Review says it waits for the human's review.
	Review bool
	// Finished says it has ended (landed, failed, nothing).
	Finished bool
}

// newLandingRow makes the row of l (statusview.NewLanding). It is a pure
// function.
func newLandingRow(l control.LandingStatus) landingRow {
	r := statusview.NewLanding(l)
	return landingRow{ID: r.ID, Short: r.Short, Agent: safetext.Line(r.Agent, 80), State: safetext.Line(r.State, 20),
		By: safetext.Line(r.By, 80), When: when(r.RequestedAt), Detail: safetext.Line(r.Detail, maxShownLine),
		Tip: orDash(r.Tip), Onto: orDash(r.Onto), Commit: orDash(r.Commit), Review: r.Review, Finished: r.Finished}
}

// orDash is s, "—" when it is empty. It is a pure function.
func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// landingsView is the Landings page's data: the queue (unfinished) and
// the history (finished, newest first).
type landingsView struct {
	Team           string
	Nav            nav
	CSRF           string
	Err            string
	Done           string
	Queue, History []landingRow
}

// newLandingsView splits the merge queue of st. It is a pure function.
func newLandingsView(st *control.Status) landingsView {
	v := landingsView{Team: st.Team}
	for _, l := range st.Landings {
		r := newLandingRow(l)
		if r.Finished {
			v.History = append([]landingRow{r}, v.History...)
		} else {
			v.Queue = append(v.Queue, r)
		}
	}
	return v
}

// diffLine is one line of a diff and its kind, the CSS class it is
// coloured by: "file", "meta", "hunk", "add", "del", "ctx" or "note".
type diffLine struct {
	Kind, Text string
}

// diffLines splits a diff (cleaned by safetext.Block: one line per line
// of git's) into its lines, each with its kind. It is a pure function.
func diffLines(diff string) []diffLine {
	var out []diffLine
	inHeader := false
	for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		kind := "ctx"
		switch {
		case strings.HasPrefix(l, "diff --git "):
			kind, inHeader = "file", true
		case strings.HasPrefix(l, "@@"):
			kind, inHeader = "hunk", false
		case inHeader:
			kind = "meta"
		case strings.HasPrefix(l, "+"):
			kind = "add"
		case strings.HasPrefix(l, "-"):
			kind = "del"
		case strings.HasPrefix(l, `\`), strings.HasPrefix(l, "note: "):
			kind = "note"
		}
		out = append(out, diffLine{Kind: kind, Text: l})
	}
	if len(out) == 1 && out[0].Text == "" {
		return nil
	}
	return out
}

// landingView is a landing request's page: its row, verify's output,
// why it failed, and its branch's diff.
type landingView struct {
	Team string
	Nav  nav
	CSRF string
	Err  string
	Done string
	landingRow
	Attempts   int
	Conflicts  []string
	Rejection  string
	Output     string
	Error      string
	FinishedAt string
	// Diff is the branch's diff against base now; DiffErr why there is
	// none; DiffCut that it was cut at maxDiff.
	Diff    []diffLine
	DiffErr string
	DiffCut bool
}

// newLandingView makes the page of request r (its row row, from the
// status). It is a pure function.
func newLandingView(row landingRow, r landing.Request) landingView {
	v := landingView{landingRow: row, Attempts: r.Attempts, Rejection: shown(r.Rejection, maxShownReply),
		Output: shown(r.OutputTail, landing.MaxOutputTail), Error: shown(r.Error, maxShownReply)}
	if !r.FinishedAt.IsZero() {
		v.FinishedAt = when(r.FinishedAt)
	}
	for _, c := range r.Conflicts {
		v.Conflicts = append(v.Conflicts, safetext.Line(c, maxShownLine))
	}
	return v
}

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
