package console

// The blame view (/blame?path=…&line=…&rev=…): who wrote each line of a
// file on the team's base branch (or an agent's branch, or a commit) —
// the commit, the agent, the turn and message, the landing that brought
// it — as `batty blame`; a landing's diff links each line it adds here.

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/battyhq/batty/blame"
	"github.com/battyhq/batty/redact"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/team"
)

// maxBlamePath bounds the path a blame view is asked for, in bytes.
const maxBlamePath = 4096

// blameLine is one line of the blame view.
type blameLine struct {
	N              int
	Text           string
	Commit, Short  string
	Agent, Message string
	Focus          bool
	// First says it starts a run of lines of one commit (the others leave
	// the commit's cells empty).
	First bool
}

// blameTurn is the turn that made a commit.
type blameTurn struct {
	Agent, Thread, ThreadShort, From, At, Text string
	Attempt                                    int
}

// blameLanding is the landing that brought a commit.
type blameLanding struct {
	Merge, Subject, Request, By, At string
}

// blameCommit is a commit's story.
type blameCommit struct {
	SHA, Short, Subject, Author, When string
	MessageID, Agent, Via             string
	// How says how the commit is tied to its turn: "made" (the journal
	// names it), "via" (a later commit of its turn took it along),
	// "trailer" (its trailer names a message no turn made it for),
	// "unknown" (a trailer no turn ran), "" (no message).
	How     string
	Turn    *blameTurn
	Landing *blameLanding
	Focus   bool
	// Files are the files it changed (the show page's).
	Files []string
}

// blameView is the blame view's data.
type blameView struct {
	Team string
	Nav  nav
	// Path and Rev are what was asked ("" Rev: the base); Line the line
	// to show first (0: none).
	Path, Rev string
	Line      int
	Err       string
	Lines     []blameLine
	Commits   []blameCommit
	// Focus is the story of Line's commit.
	Focus *blameCommit
}

// newBlameView makes the view of res, line its line to show first, the
// messages' texts redacted. It is a pure function.
func newBlameView(res blame.Result, line int) blameView {
	v := blameView{Path: safetext.Line(res.Path, maxShownLine), Line: line}
	focus := ""
	prev := ""
	for _, l := range res.Lines {
		c := res.Commit(l.Commit)
		bl := blameLine{N: l.N, Text: safetext.Line(l.Text, 0), Commit: l.Commit, Short: short8(l.Commit), Focus: l.N == line, First: l.Commit != prev}
		if c != nil {
			bl.Agent, bl.Message = safetext.Line(c.Agent, 40), safetext.Line(c.MessageID, 0)
		}
		if bl.Focus {
			focus = l.Commit
		}
		prev = l.Commit
		v.Lines = append(v.Lines, bl)
	}
	for _, c := range res.Commits {
		bc := newBlameCommit(c)
		bc.Focus = c.SHA == focus
		v.Commits = append(v.Commits, bc)
		if bc.Focus {
			f := bc
			v.Focus = &f
		}
	}
	return v
}

// newBlameCommit is the story of c. It is a pure function.
func newBlameCommit(c *blame.Commit) blameCommit {
	bc := blameCommit{SHA: c.SHA, Short: statusview.ShortCommit(c.SHA), Subject: shown(c.Subject, maxShownLine), Author: safetext.Line(c.Author, 120),
		When: when(c.Time), MessageID: safetext.Line(c.MessageID, 0), Agent: safetext.Line(c.Agent, 80), Via: statusview.ShortCommit(c.Via)}
	switch {
	case c.Turn != nil && c.Made && c.Via != "":
		bc.How = "via"
	case c.Turn != nil && c.Made:
		bc.How = "made"
	case c.Turn != nil:
		bc.How = "trailer"
	case c.MessageID != "":
		bc.How = "unknown"
	}
	for _, f := range c.Files {
		bc.Files = append(bc.Files, safetext.Line(f, maxShownLine))
	}
	if t := c.Turn; t != nil {
		bc.Turn = &blameTurn{Agent: safetext.Line(t.Agent, 80), Thread: t.Thread, ThreadShort: statusview.ThreadCell(t.Thread), From: safetext.Line(t.From, 80),
			At: when(t.At), Text: shown(redact.Text(t.Text), maxShownBody), Attempt: t.Attempt}
	}
	if l := c.Landing; l != nil {
		bc.Landing = &blameLanding{Merge: statusview.ShortCommit(l.Merge), Subject: shown(l.Subject, maxShownLine), Request: l.Request,
			By: safetext.Line(l.RequestedBy, 80)}
		if !l.At.IsZero() {
			bc.Landing.At = when(l.At)
		}
	}
	return bc
}

// blameRev checks the revision a blame view is asked for: "" (the
// base), an agent's branch (batty/<agent>) or a full commit id. It is a
// pure function.
func blameRev(rev string) bool {
	if rev == "" {
		return true
	}
	if agent, ok := strings.CutPrefix(rev, "batty/"); ok {
		return team.ValidName(agent)
	}
	return (len(rev) == 40 || len(rev) == 64) && strings.Trim(rev, "0123456789abcdef") == ""
}

// blameLink is the address of the blame view of line of path on rev.
// It is a pure function.
func blameLink(rev, path string, line int) string {
	q := url.Values{"path": {path}}
	if rev != "" {
		q.Set("rev", rev)
	}
	if line > 0 {
		q.Set("line", strconv.Itoa(line))
	}
	return "/blame?" + q.Encode() + fmt.Sprintf("#L%d", max(line, 1))
}

func (s *Server) blamePage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	q := r.URL.Query()
	path, rev := strings.TrimSpace(q.Get("path")), q.Get("rev")
	line, _ := strconv.Atoi(q.Get("line"))
	switch {
	case path == "" || len(path) > maxBlamePath || strings.HasPrefix(path, "-"):
		http.Error(w, "blame: give the path of a file of the repository (?path=)", http.StatusBadRequest)
		return
	case !blameRev(rev):
		http.Error(w, "blame: rev is the base (none), an agent's branch batty/<agent> or a full commit id", http.StatusBadRequest)
		return
	}
	v := blameView{Path: safetext.Line(path, maxShownLine), Rev: rev, Line: max(line, 0)}
	if res, err := s.cfg.Team.Blame(r.Context(), rev, path, blame.Range{}); err != nil {
		v.Err = safetext.Line(err.Error(), maxShownLine)
	} else {
		v = newBlameView(res, max(line, 0))
		v.Rev = rev
	}
	v.Team, v.Nav = st.Team, s.navOf("", st)
	s.render(w, r, "blame", v)
}

// short8 is a commit id's first 8 digits (git's, checked hex).
func short8(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}
