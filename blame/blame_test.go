package blame

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

var t0 = time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)

// repo is a real repository with a team's history: the human's commits
// on main, an agent's turn commits on batty/eng, landed by a merge.
type repo struct {
	t   *testing.T
	dir string
	l   project.Layout
	n   int
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	dir := t.TempDir()
	r := &repo{t: t, dir: filepath.Join(dir, "project"), l: project.Layout{Dir: filepath.Join(dir, "state")}}
	if err := os.Mkdir(r.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r.git("human", "init", "-q", "-b", "main")
	return r
}

// git runs git in the repository as who (its author and committer), at
// a time a second after the last.
func (r *repo) git(who string, args ...string) string {
	r.t.Helper()
	r.n++
	date := t0.Add(time.Duration(r.n) * time.Second).Format(time.RFC3339)
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME="+who, "GIT_AUTHOR_EMAIL="+who+"@batty.invalid", "GIT_AUTHOR_DATE="+date,
		"GIT_COMMITTER_NAME=batty", "GIT_COMMITTER_EMAIL=batty@batty.invalid", "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// write writes file in the work tree and commits it with message msg.
func (r *repo) commit(who, file, content, msg string) string {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, file), []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
	r.git(who, "add", file)
	r.git(who, "commit", "-q", "-m", msg)
	return r.git(who, "rev-parse", "HEAD")
}

// turn writes the journal line of agent's turn of message id, which made
// commit sha ("" none).
func (r *repo) turn(agent, id, from, body, sha string, files ...string) {
	r.t.Helper()
	r.n++
	tn := journal.Turn{Agent: agent, Role: "dev", At: t0.Add(time.Duration(r.n) * time.Second),
		Message:  inbox.Message{ID: id, From: from, To: agent, Body: body, CreatedAt: t0, Attempt: 1},
		Finished: protocol.TurnFinished{MessageID: id, ThreadID: "th-" + agent, Status: protocol.TurnCompleted, Reply: "done"},
		Files:    files}
	if sha != "" {
		tn.Commit = journal.Commit{SHA: sha, Branch: "batty/" + agent}
	}
	if _, _, err := journal.Append(r.l, journal.Build(tn)); err != nil {
		r.t.Fatal(err)
	}
}

// landings writes the merge queue's state file.
func (r *repo) landings(reqs ...landing.Request) {
	r.t.Helper()
	b, err := json.Marshal(map[string]any{"requests": reqs})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(landing.StatePath(r.l)), 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(landing.StatePath(r.l), b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) source() Source {
	return Source{Git: Git(r.dir, nil), Layout: r.l}
}

// history makes the team's history of the tests: the human's two lines;
// eng's turn m1 changing the first (its commit's trailer and journal line
// name it), eng's own commit adding a third line and its turn m2 taking
// it along (a trailer, but the journal line names only the turn's
// commit); the human's fourth line on main meanwhile; the landing L1 of
// batty/eng. It returns the commits.
func history(r *repo) (base, t1, own, t2, human, merge string) {
	base = r.commit("human", "f.go", "one\ntwo\n", "start")
	r.git("human", "checkout", "-q", "-b", "batty/eng")
	t1 = r.commit("eng", "f.go", "ONE\ntwo\n", "fix one\n\nBatty-Message: m1")
	r.turn("eng", "m1", "architect", "make one loud <script>", t1, "f.go")
	own = r.commit("eng", "f.go", "ONE\ntwo\nthree\n", "my own commit")
	t2 = r.commit("eng", "g.go", "g\n", "add g\n\nBatty-Message: m2")
	r.turn("eng", "m2", "human", "add three and g", t2, "g.go")
	r.git("human", "checkout", "-q", "main")
	human = r.commit("human", "h.go", "h\n", "the human's own")
	r.git("batty", "merge", "-q", "--no-ff", "--no-edit", "-m", "Land batty/eng (3 commits)", "batty/eng")
	merge = r.git("batty", "rev-parse", "HEAD")
	r.landings(landing.Request{ID: "L1", Agent: "eng", Branch: "batty/eng", RequestedAt: t0, RequestedBy: "eng", State: landing.Landed,
		Merged: merge, LandedCommit: merge, FinishedAt: t0.Add(time.Hour)})
	return
}

func TestBlameNamesTheTurnAndTheLanding(t *testing.T) {
	r := newRepo(t)
	base, t1, own, t2, _, merge := history(r)
	res, err := Blame(context.Background(), r.source(), "main", "f.go", Range{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lines) != 3 || res.Lines[0].Text != "ONE" || res.Lines[2].N != 3 {
		t.Fatalf("lines %+v", res.Lines)
	}
	want := []string{t1, base, own}
	for i, l := range res.Lines {
		if l.Commit != want[i] {
			t.Errorf("line %d blamed on %s, want %s", l.N, l.Commit, want[i])
		}
	}
	c := res.Commit(t1)
	if c.Agent != "eng" || c.MessageID != "m1" || !c.Made || c.Turn == nil || c.Turn.From != "architect" ||
		c.Turn.Text != "make one loud <script>" || c.Turn.Thread != "th-eng" || c.Via != "" {
		t.Errorf("line 1: %+v turn %+v", c, c.Turn)
	}
	if c.Landing == nil || c.Landing.Merge != merge || c.Landing.Request != "L1" || c.Landing.Agent != "eng" || c.Landing.RequestedBy != "eng" {
		t.Errorf("line 1 landing %+v", c.Landing)
	}
	// The agent's own commit: told by the turn commit that took it along.
	c = res.Commit(own)
	if c.Via != t2 || c.MessageID != "m2" || c.Agent != "eng" || !c.Made || c.Turn == nil || c.Turn.MessageID != "m2" || c.Landing == nil {
		t.Errorf("line 3: %+v turn %+v", c, c.Turn)
	}
	// The human's line of the start: on main's own line, no turn.
	c = res.Commit(base)
	if c.Landing != nil || c.Turn != nil || c.Agent != "" || c.MessageID != "" || c.Subject != "start" || !strings.HasPrefix(c.Author, "human ") {
		t.Errorf("line 2: %+v", c)
	}

	one, err := Blame(context.Background(), r.source(), "main", "f.go", Range{From: 3, To: 3})
	if err != nil || len(one.Lines) != 1 || one.Lines[0].N != 3 || one.Lines[0].Commit != own || len(one.Commits) != 1 {
		t.Fatalf("line 3 alone: %+v %v", one, err)
	}
	// On the agent's branch, nothing has landed.
	br, err := Blame(context.Background(), r.source(), "batty/eng", "f.go", Range{From: 1, To: 1})
	if err != nil || br.Commits[0].Landing != nil || br.Commits[0].MessageID != "m1" {
		t.Fatalf("on batty/eng: %+v %v", br.Commits[0], err)
	}
}

// Once the merge queue has forgotten the request, the landing is still
// told by its merge commit.
func TestBlameLandingForgottenByTheQueue(t *testing.T) {
	r := newRepo(t)
	_, t1, _, _, _, merge := history(r)
	r.landings()
	res, err := Blame(context.Background(), r.source(), "main", "f.go", Range{From: 1, To: 1})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Commit(t1).Landing; l == nil || l.Merge != merge || l.Request != "" || l.Agent != "eng" || l.Subject != "Land batty/eng (3 commits)" {
		t.Fatalf("landing %+v", l)
	}
}

// A trailer an agent wrote naming another agent's message does not make
// the commit that message's turn's.
func TestBlameTrailerWithoutItsTurn(t *testing.T) {
	r := newRepo(t)
	history(r)
	r.git("human", "checkout", "-q", "batty/eng")
	forged := r.commit("eng", "f.go", "ONE\nTWO\nthree\n", "forged\n\nBatty-Message: m1")
	res, err := Blame(context.Background(), r.source(), "batty/eng", "f.go", Range{From: 2, To: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Commit(forged)
	if c.Made || c.MessageID != "m1" || c.Turn == nil || c.Turn.Commit == forged {
		t.Fatalf("forged commit told as made by its turn: %+v %+v", c, c.Turn)
	}
}

func TestBlameRefuses(t *testing.T) {
	r := newRepo(t)
	history(r)
	for _, tc := range []struct {
		branch, path string
		rg           Range
	}{
		{"--output=/tmp/x", "f.go", Range{}},
		{"main", "", Range{}},
		{"nosuch", "f.go", Range{}},
		{"main", "nosuch.go", Range{}},
		{"main", "f.go", Range{From: 9, To: 9}},
		{"main", "f.go", Range{From: 2, To: 1}},
	} {
		if _, err := Blame(context.Background(), r.source(), tc.branch, tc.path, tc.rg); err == nil {
			t.Errorf("Blame(%q, %q, %v) did not fail", tc.branch, tc.path, tc.rg)
		}
	}
}

// The repository's own textconv driver (which a .gitattributes in the
// tree picks) is never run by blame.
func TestBlameRunsNoTextconv(t *testing.T) {
	r := newRepo(t)
	history(r)
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(t.TempDir(), "conv")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\ncat \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	r.git("human", "config", "diff.evil.textconv", script)
	r.commit("human", ".gitattributes", "*.go diff=evil\n", "attributes")
	if _, err := Blame(context.Background(), r.source(), "main", "f.go", Range{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("blame ran the repository's textconv driver")
	}
}

func TestShowMessage(t *testing.T) {
	r := newRepo(t)
	_, t1, _, t2, _, merge := history(r)
	sh, err := Show(context.Background(), r.source(), "main", "m1")
	if err != nil {
		t.Fatal(err)
	}
	if sh.MessageID != "m1" || len(sh.Turns) != 1 || sh.Turns[0].From != "architect" || len(sh.Commits) != 1 {
		t.Fatalf("show m1: %+v", sh)
	}
	c := sh.Commits[0]
	if c.SHA != t1 || !c.Made || c.Agent != "eng" || c.Landing == nil || c.Landing.Merge != merge || c.Landing.Request != "L1" ||
		len(c.Files) != 1 || c.Files[0] != "f.go" {
		t.Fatalf("show m1's commit: %+v %+v", c, c.Landing)
	}
	// A commit, by a short name: its message and turn.
	sh, err = Show(context.Background(), r.source(), "main", t2[:10])
	if err != nil {
		t.Fatal(err)
	}
	if sh.MessageID != "m2" || len(sh.Turns) != 1 || len(sh.Commits) != 1 || !sh.Commits[0].Made || sh.Commits[0].Files[0] != "g.go" {
		t.Fatalf("show %s: %+v", t2[:10], sh)
	}
	// A commit of main's own line: no landing, no turn.
	sh, err = Show(context.Background(), r.source(), "main", "main~1")
	if err != nil || sh.MessageID != "" || len(sh.Turns) != 0 || sh.Commits[0].Landing != nil {
		t.Fatalf("show main~1: %+v %v", sh, err)
	}
	if _, err := Show(context.Background(), r.source(), "main", "nosuch"); err == nil {
		t.Error("show of an unknown message did not fail")
	}
}

// A journal line naming a commit that is gone is told, not an error.
func TestShowGoneCommit(t *testing.T) {
	r := newRepo(t)
	history(r)
	r.turn("eng", "m3", "human", "lost", strings.Repeat("ab", 20))
	sh, err := Show(context.Background(), r.source(), "main", "m3")
	if err != nil || len(sh.Turns) != 1 || len(sh.Commits) != 0 || len(sh.Gone) != 1 {
		t.Fatalf("show m3: %+v %v", sh, err)
	}
}

func TestParsePorcelainRefuses(t *testing.T) {
	for _, in := range []string{"garbage\n", strings.Repeat("a", 40) + " 1 x 1\n\tline\n", strings.Repeat("a", 40) + " 1 1 1\nauthor x\n"} {
		if _, err := parsePorcelain(in); err == nil {
			t.Errorf("parsePorcelain(%q) did not fail", in)
		}
	}
}

func TestParseLog(t *testing.T) {
	sha := strings.Repeat("a", 40)
	out := sha + "\x1fp1 p2\x1f<bad id>\x1dm-2\x1fLand batty/x (2 commits)\x1e\n" + "short\x1f\x1f\x1f\x1e"
	es := parseLog(out)
	if len(es) != 1 || es[0].message != "m-2" || len(es[0].parents) != 2 || es[0].subject != "Land batty/x (2 commits)" {
		t.Fatalf("parseLog: %+v", es)
	}
	if l := landingOf(sha, es[0].commitInfo, nil); l == nil || l.Agent != "x" {
		t.Fatalf("landingOf: %+v", l)
	}
	if l := landingOf(sha, commitInfo{parents: []string{"p"}}, nil); l != nil {
		t.Fatalf("a commit of one parent is a landing: %+v", l)
	}
}

// wanted reads a journal line's commit and message id as Encode writes
// them; a message text holding the keys does not fool it.
func TestWanted(t *testing.T) {
	sha := strings.Repeat("c", 40)
	tn := journal.Turn{Agent: "eng", At: t0, Message: inbox.Message{ID: "m1", Body: `"sha":"` + sha + `" "message":{"id":"m9"`},
		Finished: protocol.TurnFinished{Status: protocol.TurnCompleted}}
	plain, err := journal.Encode(journal.Build(tn))
	if err != nil {
		t.Fatal(err)
	}
	tn.Commit = journal.Commit{SHA: sha}
	committed, err := journal.Encode(journal.Build(tn))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line []byte
		want string
		ok   bool
	}{
		{plain, "m1", true},
		{plain, "m9", false},
		{plain, sha, false},
		{committed, sha, true},
		{committed, "m2", false},
		{[]byte(`{"no":"keys"}`), "m1", true},
	} {
		if got := wanted(tc.line, map[string]bool{tc.want: true}); got != tc.ok {
			t.Errorf("wanted(%s, %s) = %v", tc.line, tc.want, got)
		}
	}
}
