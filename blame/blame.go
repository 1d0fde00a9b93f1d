// Package blame ties the project's code to the crew's memory: for a line
// of a file on a branch, the commit that last changed it, the agent, the
// turn and the message that made that commit, and the landing that
// brought it to the base branch (Blame); and the other way round, for a
// message, the turns it ran and the commits they made, or for a commit,
// its message and turn (Show). `batty blame`, `batty show` and the
// console's blame view use it.
//
// What it reads and how far each is trusted:
//
//   - git, run the one way batty runs it (workspaces.Git: no repository
//     configuration an agent could have written, no hook, no fsmonitor;
//     blame and diff without textconv) in the project's top level;
//   - a commit's Batty-Message trailer (workspaces.TrailerKey), which
//     batty writes on every commit it makes for a turn — but an agent may
//     commit in its worktree by itself with any message, so a trailer
//     only names a message to look up;
//   - the turn journal (package journal), which the daemon alone writes:
//     a turn whose journal line names the commit made it (Turn.Made);
//   - the landing's merge commit, found by `git blame --first-parent` on
//     the branch (the first commit of the branch's own line that holds the
//     line), and the merge queue's record of it (landing.Read: the request
//     id, who asked, when it landed) while the queue still keeps it.
//
// A landed commit without a trailer (one the agent made by itself within
// a turn) is told by the first later commit of its landing that carries
// one (Commit.Via): the turn whose commit took the agent's own along.
//
// Everything returned is text as agents and git wrote it: callers escape
// it before a terminal or a page shows it.
package blame

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/textclip"
	"github.com/battyhq/batty/workspaces"
)

// MaxText bounds the message's text a Turn carries, in bytes.
const MaxText = 2 << 10

// maxVia bounds how many commits without a trailer Blame looks past (one
// git run each) for the turn commit that took them along.
const maxVia = 64

// Source is where Blame and Show read: git in the project's top level and
// the project's state directory.
type Source struct {
	// Git runs git in the project's top level (workspaces.Git, its
	// Starter the daemon's reaper when the daemon runs it).
	Git workspaces.Git
	// Layout is the project's state directory: the turn journal and the
	// merge queue's state file.
	Layout project.Layout
}

// Git is the git runner of Blame and Show in the project's top level
// top: workspaces.Git (no GIT_* variable inherited, no hook, fsmonitor or
// textconv, nothing signed), reading neither the system's nor the user's
// configuration either (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null):
// only the repository's own, outside every agent's sandbox. starter is
// the daemon's reaper when the daemon runs it, else nil.
func Git(top string, starter workspaces.Starter) workspaces.Git {
	return workspaces.Git{Dir: top, Starter: starter, Vars: []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}}
}

// Line is one line of a blamed file.
type Line struct {
	// N is its number in the file on the branch, from 1.
	N    int    `json:"line"`
	Text string `json:"text"`
	// Commit is the commit that last changed it (a Commits key).
	Commit string `json:"commit"`
}

// Turn is a turn of the journal that ran a message.
type Turn struct {
	Agent     string    `json:"agent"`
	Role      string    `json:"role,omitempty"`
	Thread    string    `json:"thread_id,omitempty"`
	Attempt   int       `json:"attempt"`
	MessageID string    `json:"message_id"`
	From      string    `json:"from"`
	SentAt    time.Time `json:"sent_at,omitzero"`
	// Text is the message's text, clipped to MaxText bytes.
	Text   string    `json:"text"`
	Status string    `json:"status,omitempty"`
	At     time.Time `json:"at"`
	// Commit is the commit the journal says the turn made ("" none),
	// Files the files it changed.
	Commit string   `json:"commit,omitempty"`
	Files  []string `json:"files,omitempty"`
}

// Landing is the landing that brought a commit to the branch: its merge
// commit and, while the merge queue keeps it, its request.
type Landing struct {
	Merge   string `json:"merge"`
	Subject string `json:"subject"`
	// Agent is whose branch landed: the request's, else the merge's
	// subject's ("Land batty/<agent> (…)").
	Agent string `json:"agent,omitempty"`
	// Request is the landing request's id, RequestedBy who asked and At
	// when it landed ("", zero: the queue no longer keeps it).
	Request     string    `json:"request,omitempty"`
	RequestedBy string    `json:"requested_by,omitempty"`
	At          time.Time `json:"landed_at,omitzero"`
}

// Commit is a commit with what batty knows of it.
type Commit struct {
	SHA     string    `json:"commit"`
	Subject string    `json:"subject"`
	Author  string    `json:"author"`
	Time    time.Time `json:"time"`
	// MessageID is the message the commit answers: its Batty-Message
	// trailer, else Via's.
	MessageID string `json:"message_id,omitempty"`
	// Via is, for a landed commit without a trailer, the later commit of
	// its landing's branch whose trailer names the message.
	Via string `json:"via,omitempty"`
	// Agent is the agent that made it: its turn's, else its landing's.
	Agent string `json:"agent,omitempty"`
	// Turn is the turn that made it (Made: its journal line names this
	// commit, or Via), else the last turn of the message; nil when the
	// journal has none.
	Turn *Turn `json:"turn,omitempty"`
	Made bool  `json:"made,omitempty"`
	// Landing is the landing that brought it to the branch; nil when it
	// is on the branch's own line (committed there, or the branch is an
	// agent's and the line its own).
	Landing *Landing `json:"landing,omitempty"`
	// Files are the files it changed (Show only).
	Files []string `json:"files,omitempty"`
}

// Result is a file's blame.
type Result struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	// Rev is the branch's commit that was blamed.
	Rev   string `json:"rev"`
	Lines []Line `json:"lines"`
	// Commits are the commits of the lines, by first appearance.
	Commits []*Commit `json:"commits"`
	// Skipped counts the journal's lines that could not be read.
	Skipped int `json:"skipped,omitempty"`
}

// Commit returns the commit sha of r, nil when r has none.
func (r Result) Commit(sha string) *Commit {
	for _, c := range r.Commits {
		if c.SHA == sha {
			return c
		}
	}
	return nil
}

// Range is the lines to blame: From to To, from 1; zero From: all.
type Range struct{ From, To int }

// Blame blames path (relative to the repository's top level) on branch
// (a branch name, or any revision) over lines rg: two runs of git blame
// (the commits; the branch's own line's, --first-parent, for the
// landings), one git log of the commits' trailers and parents, one more
// per landed commit without a trailer (at most maxVia), one scan of the turn
// journal keeping only the lines that name a commit or message wanted, and
// the merge queue's state file.
func Blame(ctx context.Context, s Source, branch, path string, rg Range) (Result, error) {
	if err := checkArg("branch", branch); err != nil {
		return Result{}, err
	}
	if path == "" {
		return Result{}, errors.New("blame: no path")
	}
	if rg.From < 0 || rg.To < rg.From {
		return Result{}, fmt.Errorf("blame: lines %d to %d", rg.From, rg.To)
	}
	rev, err := resolve(ctx, s.Git, branch)
	if err != nil {
		return Result{}, err
	}
	args := []string{"blame", "--porcelain", "--ignore-revs-file="}
	if rg.From > 0 {
		args = append(args, "-L", fmt.Sprintf("%d,%d", rg.From, rg.To))
	}
	var (
		wg           sync.WaitGroup
		first, lines []blamed
		ferr, err2   error
	)
	wg.Go(func() {
		var out string
		if out, ferr = s.Git.Run(ctx, append(append(slices.Clone(args), "--first-parent"), rev, "--", path)...); ferr == nil {
			first, ferr = parsePorcelain(out)
		}
	})
	out, err := s.Git.Run(ctx, append(slices.Clone(args), rev, "--", path)...)
	if err == nil {
		lines, err2 = parsePorcelain(out)
	}
	wg.Wait()
	if err != nil {
		return Result{}, fmt.Errorf("blame %s on %s: %w", path, branch, err)
	}
	if err2 != nil {
		return Result{}, fmt.Errorf("blame %s on %s: %w", path, branch, err2)
	}
	if ferr != nil {
		return Result{}, fmt.Errorf("blame %s on %s: %w", path, branch, ferr)
	}
	if len(first) != len(lines) {
		return Result{}, fmt.Errorf("blame %s on %s: %d lines, %d along the branch's own line", path, branch, len(lines), len(first))
	}
	res := Result{Path: path, Branch: branch, Rev: rev}
	byLanding := map[string]string{} // commit → the first-parent commit that holds it
	summaries := map[string]blamed{}
	for i, l := range lines {
		res.Lines = append(res.Lines, Line{N: l.final, Text: l.text, Commit: l.sha})
		if res.Commit(l.sha) == nil {
			res.Commits = append(res.Commits, &Commit{SHA: l.sha, Subject: l.summary, Author: l.author, Time: l.time})
		}
		if f := first[i]; f.sha != l.sha {
			byLanding[l.sha] = f.sha
			summaries[f.sha] = f
		}
	}
	if err := s.attribute(ctx, &res, rev, byLanding); err != nil {
		return res, err
	}
	return res, nil
}

// attribute fills in the commits of res: their trailers, landings, turns.
// byLanding maps a commit to the commit of the branch's own line that
// brought it (absent: the commit is on that line).
func (s Source) attribute(ctx context.Context, res *Result, rev string, byLanding map[string]string) error {
	shas := make([]string, 0, len(res.Commits)+len(byLanding))
	for _, c := range res.Commits {
		shas = append(shas, c.SHA)
	}
	for _, l := range byLanding {
		if !slices.Contains(shas, l) {
			shas = append(shas, l)
		}
	}
	info, err := logCommits(ctx, s.Git, shas)
	if err != nil {
		return err
	}
	reqs, err := landing.Read(s.Layout)
	if err != nil {
		return err
	}
	vias := 0
	for _, c := range res.Commits {
		c.MessageID = info[c.SHA].message
		if l, ok := byLanding[c.SHA]; ok {
			c.Landing = landingOf(l, info[l], reqs)
		}
		if c.MessageID != "" || c.Landing == nil || vias == maxVia {
			continue
		}
		// A landed commit without a trailer: the turn commit that took it
		// along, on the landed branch's side.
		vias++
		if c.Via, c.MessageID, err = via(ctx, s.Git, c.SHA, info[c.Landing.Merge].parents[1]); err != nil {
			return err
		}
	}
	return s.turns(res)
}

// turns finds in the journal the turns of res's commits: by the commit
// (or Via) the journal names, else by the message.
func (s Source) turns(res *Result) error {
	want := map[string]bool{}
	for _, c := range res.Commits {
		want[c.SHA] = true
		if c.Via != "" {
			want[c.Via] = true
		}
		if c.MessageID != "" {
			want[c.MessageID] = true
		}
	}
	found, skipped, err := scanJournal(s.Layout, want)
	if err != nil {
		return err
	}
	res.Skipped = skipped
	for _, c := range res.Commits {
		c.Turn, c.Made = pick(found, c.SHA, c.Via, c.MessageID)
		switch {
		case c.Turn != nil:
			c.Agent = c.Turn.Agent
		case c.Landing != nil:
			c.Agent = c.Landing.Agent
		}
	}
	return nil
}

// pick chooses the turn of a commit among the journal's records found: the
// one whose line names the commit (or via), made; else the last turn of
// message id. It is a pure function.
func pick(found []journal.Record, sha, via, id string) (*Turn, bool) {
	var last *journal.Record
	for i := range found {
		r := &found[i]
		if r.Commit != nil && (r.Commit.SHA == sha || via != "" && r.Commit.SHA == via) {
			t := turnOf(*r)
			return &t, true
		}
		if id != "" && r.Message.ID == id && (last == nil || !r.At.Before(last.At)) {
			last = r
		}
	}
	if last == nil {
		return nil, false
	}
	t := turnOf(*last)
	return &t, false
}

// turnOf is what a Turn shows of journal record r. Pure.
func turnOf(r journal.Record) Turn {
	t := Turn{Agent: r.Agent, Role: r.Role, Thread: r.Thread, Attempt: r.Attempt, MessageID: r.Message.ID, From: r.Message.From,
		SentAt: r.Message.At, Text: textclip.Bytes(r.Message.Body, MaxText, textclip.Truncated), Status: r.Status, At: r.At, Files: r.Files}
	if r.Commit != nil {
		t.Commit = r.Commit.SHA
	}
	return t
}

// scanJournal reads every agent's journal for the records that name one
// of want (a commit or a message id) and returns them in the order
// written, and how many lines could not be read. Only the lines whose
// commit or message id is one of want are decoded (wanted).
func scanJournal(l project.Layout, want map[string]bool) ([]journal.Record, int, error) {
	if len(want) == 0 {
		return nil, 0, nil
	}
	keep := func(line []byte) bool { return wanted(line, want) }
	j, err := journal.Open(l)
	if err != nil {
		return nil, 0, err
	}
	defer j.Close()
	agents, err := j.Agents()
	if err != nil {
		return nil, 0, err
	}
	var found []journal.Record
	skipped := 0
	for _, a := range agents {
		f, err := j.OpenFile(a)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		_, err = f.ScanWhere(0, keep, func(_, _ int64, r journal.Record) error {
			if want[r.Message.ID] || r.Commit != nil && want[r.Commit.SHA] {
				found = append(found, r)
			}
			return nil
		}, func(journal.Skip) { skipped++ })
		f.Close()
		if err != nil {
			return nil, 0, err
		}
	}
	return found, skipped, nil
}

// Keys of a journal line that wanted reads without decoding it: JSON
// escapes a quote inside a string, so these bytes occur in a line only as
// its keys.
var (
	shaKey = []byte(`"sha":"`)
	idKey  = []byte(`"message":{"id":"`)
)

// wanted reports whether journal line may name one of want: its commit's
// SHA or its message's id is one (read as the bytes after their keys, up
// to the closing quote), or the line lacks the message's key (then it is
// decoded, to be sure). It is a pure function.
func wanted(line []byte, want map[string]bool) bool {
	if v, ok := valueAfter(line, shaKey); ok && want[string(v)] {
		return true
	}
	v, ok := valueAfter(line, idKey)
	return !ok || want[string(v)]
}

// valueAfter is the string value after key in line, up to its closing
// quote; false when line lacks key.
func valueAfter(line, key []byte) ([]byte, bool) {
	i := bytes.Index(line, key)
	if i < 0 {
		return nil, false
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil, false
	}
	return rest[:j], true
}

// landRE is the subject of a landing's merge commit (landing's
// mergeMessage).
var landRE = regexp.MustCompile(`^Land batty/([a-z0-9][a-z0-9-]*) \(\d+ commits?\)$`)

// landingOf is the landing of merge commit sha (its log entry ci) with
// the merge queue's request that made it, if kept. Nil when sha is no
// merge. It is a pure function.
func landingOf(sha string, ci commitInfo, reqs []landing.Request) *Landing {
	if len(ci.parents) < 2 {
		return nil
	}
	l := &Landing{Merge: sha, Subject: ci.subject}
	if m := landRE.FindStringSubmatch(ci.subject); m != nil {
		l.Agent = m[1]
	}
	for _, r := range reqs {
		if r.Merged == sha || r.LandedCommit == sha {
			l.Agent, l.Request, l.RequestedBy, l.At = r.Agent, r.ID, r.RequestedBy, r.FinishedAt
		}
	}
	return l
}

// commitInfo is what logCommits reads of a commit.
type commitInfo struct {
	parents []string
	message string // its Batty-Message trailer, "" when none or not a message id
	subject string
}

// logFormat is git log's format for parseLog: sha, parents, the
// Batty-Message trailers, subject.
const logFormat = "%H%x1f%P%x1f%(trailers:key=" + workspaces.TrailerKey + ",valueonly,separator=%x1d)%x1f%s%x1e"

// logCommits reads the parents, trailer and subject of commits shas in one
// git log.
func logCommits(ctx context.Context, g workspaces.Git, shas []string) (map[string]commitInfo, error) {
	if len(shas) == 0 {
		return nil, nil
	}
	out, err := g.RunInput(ctx, strings.Join(shas, "\n")+"\n", "log", "--no-walk=unsorted", "--stdin", "--format="+logFormat)
	if err != nil {
		return nil, fmt.Errorf("read the commits: %w", err)
	}
	m := map[string]commitInfo{}
	for _, e := range parseLog(out) {
		m[e.sha] = e.commitInfo
	}
	return m, nil
}

type logEntry struct {
	sha string
	commitInfo
}

// parseLog reads git log's output in logFormat. A trailer value that is
// not a message id (inbox.ValidID) is none; of several, the first is
// taken. It is a pure function.
func parseLog(out string) []logEntry {
	var es []logEntry
	for rec := range strings.SplitSeq(out, "\x1e") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x1f")
		if len(f) != 4 || !isSHA(f[0]) {
			continue
		}
		e := logEntry{sha: f[0], commitInfo: commitInfo{parents: strings.Fields(f[1]), subject: f[3]}}
		for v := range strings.SplitSeq(f[2], "\x1d") {
			if v = strings.TrimSpace(v); inbox.ValidID(v) {
				e.message = v
				break
			}
		}
		es = append(es, e)
	}
	return es
}

// via finds, for commit sha that has no trailer, the oldest commit between
// it and to (a descendant of sha: the landing's branch side, or the
// branch) that carries one: the turn commit that took sha along.
func via(ctx context.Context, g workspaces.Git, sha, to string) (string, string, error) {
	out, err := g.Run(ctx, "log", "--ancestry-path", "--reverse", "--format="+logFormat, sha+".."+to)
	if err != nil {
		return "", "", fmt.Errorf("look past %s for its turn's commit: %w", sha, err)
	}
	for _, e := range parseLog(out) {
		if e.message != "" {
			return e.sha, e.message, nil
		}
	}
	return "", "", nil
}

// resolve returns the commit rev names.
func resolve(ctx context.Context, g workspaces.Git, rev string) (string, error) {
	out, err := g.Run(ctx, "rev-parse", "-q", "--verify", rev+"^{commit}")
	if workspaces.ExitCode(err) == 1 {
		return "", fmt.Errorf("%q names no commit of the repository", rev)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// isSHA reports whether s is a full commit id (SHA-1 or SHA-256, lower
// case).
func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// checkArg refuses a revision that git would read as an option.
func checkArg(what, s string) error {
	if s == "" || strings.HasPrefix(s, "-") || strings.ContainsAny(s, "\x00\n") {
		return fmt.Errorf("%s %q: not a revision", what, s)
	}
	return nil
}

// blamed is one line of git blame --porcelain.
type blamed struct {
	sha     string
	final   int
	text    string
	summary string
	author  string
	time    time.Time
}

// parsePorcelain reads git blame --porcelain: per line, a header "<sha>
// <orig> <final> [<count>]", the commit's fields the first time it
// appears, and the line after a tab. It is a pure function.
func parsePorcelain(out string) ([]blamed, error) {
	type fields struct {
		summary, author, mail string
		time                  time.Time
	}
	seen := map[string]*fields{}
	var res []blamed
	var cur *blamed
	var cf *fields
	for line := range strings.SplitSeq(out, "\n") {
		if cur == nil {
			if line == "" {
				continue
			}
			h := strings.Fields(line)
			if len(h) < 3 || !isSHA(h[0]) {
				return nil, fmt.Errorf("git blame: unexpected line %q", textclip.Bytes(line, 80, "…"))
			}
			n, err := strconv.Atoi(h[2])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("git blame: unexpected line %q", textclip.Bytes(line, 80, "…"))
			}
			cur = &blamed{sha: h[0], final: n}
			if cf = seen[h[0]]; cf == nil {
				cf = &fields{}
				seen[h[0]] = cf
			}
			continue
		}
		if text, ok := strings.CutPrefix(line, "\t"); ok {
			cur.text = text
			res = append(res, *cur)
			cur = nil
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "summary":
			cf.summary = val
		case "author":
			cf.author = val
		case "author-mail":
			cf.mail = val
		case "author-time":
			cf.time = parseUnix(val)
		}
	}
	if cur != nil {
		return nil, errors.New("git blame: output cut short")
	}
	for i := range res {
		f := seen[res[i].sha]
		res[i].summary, res[i].author, res[i].time = f.summary, strings.TrimSpace(f.author+" "+f.mail), f.time
	}
	return res, nil
}
