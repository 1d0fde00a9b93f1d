package console

// The Landings page (/landings) and a landing request's (/landing/ID):
// the merge queue from the status, a request's verify output and diff;
// approve, reject.

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/textclip"
)

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
			v.History = append(v.History, r)
		} else {
			v.Queue = append(v.Queue, r)
		}
	}
	slices.Reverse(v.History) // newest first
	return v
}

// diffLine is one line of a diff and its kind, the CSS class it is
// coloured by: "file", "meta", "hunk", "add", "del", "ctx" or "note".
// Link, for a line the diff adds, is the blame view of that line on the
// branch.
type diffLine struct {
	Kind, Text, Link string
}

// diffLines splits a diff (cleaned by safetext.Block: one line per line
// of git's) into its lines, each with its kind; each line it adds links
// to its blame on rev (the branch the diff is of: "+++ b/<path>" names
// the file, the hunks' "+<start>" its lines; a path git quoted gets no
// link). It is a pure function.
func diffLines(diff, rev string) []diffLine {
	var out []diffLine
	inHeader := false
	path, line := "", 0
	for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		kind, link := "ctx", ""
		switch {
		case strings.HasPrefix(l, "diff --git "):
			kind, inHeader, path = "file", true, ""
		case strings.HasPrefix(l, "@@"):
			kind, inHeader, line = "hunk", false, hunkStart(l)
		case inHeader:
			kind = "meta"
			if p, ok := strings.CutPrefix(l, "+++ b/"); ok {
				path = p
			}
		case strings.HasPrefix(l, "+"):
			kind = "add"
			if path != "" && line > 0 {
				link = blameLink(rev, path, line)
			}
			line++
		case strings.HasPrefix(l, "-"):
			kind = "del"
		case strings.HasPrefix(l, `\`), strings.HasPrefix(l, "note: "):
			kind = "note"
		default:
			line++
		}
		out = append(out, diffLine{Kind: kind, Text: l, Link: link})
	}
	if len(out) == 1 && out[0].Text == "" {
		return nil
	}
	return out
}

// hunkStart is the first line of the new side of hunk header h ("@@ -a,b
// +c,d @@"), 0 when h is not one. It is a pure function.
func hunkStart(h string) int {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[2], "+") {
		return 0
	}
	n, err := strconv.Atoi(strings.SplitN(f[2][1:], ",", 2)[0])
	if err != nil || n < 0 {
		return 0
	}
	return n
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
	return diffLines(safetext.Block(text), "batty/"+agent), cut, ""
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
