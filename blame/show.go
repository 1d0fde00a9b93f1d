package blame

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/redact"
)

// maxShown bounds the commits Show tells of one message.
const maxShown = 100

// Shown is what Show found of a message or a commit.
type Shown struct {
	// Query is what was asked; MessageID the message shown (the query,
	// or the commit's).
	Query     string `json:"query"`
	MessageID string `json:"message_id,omitempty"`
	// Turns are the journal's turns of the message, in the order written.
	Turns []Turn `json:"turns"`
	// Commits are the commits it made (of a message: those its turns'
	// journal lines name and those whose trailer names it, on the base
	// and the agents' branches), each with its landing on the base and
	// its files.
	Commits []*Commit `json:"commits"`
	// Gone are commits the journal names that the repository no longer
	// has.
	Gone []string `json:"gone,omitempty"`
	// Skipped counts the journal's lines that could not be read.
	Skipped int `json:"skipped,omitempty"`
}

// Show tells of what, a message id or a commit (any revision git
// resolves): for a message, its turns and the commits they made, where
// each landed on base, and their files; for a commit, its message (its
// trailer, else the turn commit that took it along: see Commit.Via), the
// turn that made it and its landing. A message id the journal and the
// branches do not know, that is no commit either, is an error.
func Show(ctx context.Context, s Source, base, what string) (Shown, error) {
	if err := checkArg("message or commit", what); err != nil {
		return Shown{}, err
	}
	if err := checkArg("base branch", base); err != nil {
		return Shown{}, err
	}
	baseRev, err := resolve(ctx, s.Git, base)
	if err != nil {
		return Shown{}, err
	}
	sh := Shown{Query: what}
	var shas []string
	if inbox.ValidID(what) {
		found, skipped, err := scanJournal(s.Layout, map[string]bool{what: true})
		if err != nil {
			return sh, err
		}
		sh.Skipped = skipped
		for _, r := range found {
			if r.Message.ID != what {
				continue
			}
			sh.Turns = append(sh.Turns, turnOf(r))
			if r.Commit != nil && !slices.Contains(shas, r.Commit.SHA) {
				shas = append(shas, r.Commit.SHA)
			}
		}
		if shas, sh.Gone, err = existing(ctx, s, shas); err != nil {
			return sh, err
		}
		byTrailer, err := trailed(ctx, s, base, what)
		if err != nil {
			return sh, err
		}
		for _, c := range byTrailer {
			if !slices.Contains(shas, c) {
				shas = append(shas, c)
			}
		}
		if len(sh.Turns) > 0 || len(shas) > 0 || len(sh.Gone) > 0 {
			sh.MessageID = what
		}
	}
	if sh.MessageID == "" {
		sha, err := resolve(ctx, s.Git, what)
		if err != nil {
			return sh, fmt.Errorf("%q is neither a message the turn journal or a branch knows nor a commit: %w", what, err)
		}
		shas = []string{sha}
	}
	if len(shas) > maxShown {
		shas = shas[len(shas)-maxShown:]
	}
	info, err := logCommits(ctx, s.Git, shas)
	if err != nil {
		return sh, err
	}
	reqs, err := landing.Read(s.Layout)
	if err != nil {
		return sh, err
	}
	line, err := firstParents(ctx, s, baseRev)
	if err != nil {
		return sh, err
	}
	for _, sha := range shas {
		ci := info[sha]
		c := &Commit{SHA: sha, Subject: ci.subject, MessageID: ci.message}
		if c.Author, c.Time, err = authorOf(ctx, s, sha); err != nil {
			return sh, err
		}
		if c.Files, err = filesOf(ctx, s, sha, ci.parents); err != nil {
			return sh, err
		}
		l, err := landedBy(ctx, s, sha, baseRev, line)
		if err != nil {
			return sh, err
		}
		var li map[string]commitInfo
		if l != "" {
			if li, err = logCommits(ctx, s.Git, []string{l}); err != nil {
				return sh, err
			}
			c.Landing = landingOf(l, li[l], reqs)
		}
		if c.MessageID == "" && sh.MessageID == "" && c.Landing != nil {
			if c.Via, c.MessageID, err = via(ctx, s.Git, sha, li[l].parents[1]); err != nil {
				return sh, err
			}
		}
		sh.Commits = append(sh.Commits, c)
	}
	if sh.MessageID == "" && len(sh.Commits) == 1 {
		// A commit: its message's turns.
		c := sh.Commits[0]
		sh.MessageID = c.MessageID
		want := map[string]bool{c.SHA: true}
		if c.MessageID != "" {
			want[c.MessageID] = true
		}
		if c.Via != "" {
			want[c.Via] = true
		}
		found, skipped, err := scanJournal(s.Layout, want)
		if err != nil {
			return sh, err
		}
		sh.Skipped = skipped
		for _, r := range found {
			if r.Message.ID == c.MessageID || r.Commit != nil && r.Commit.SHA == c.SHA {
				sh.Turns = append(sh.Turns, turnOf(r))
			}
		}
		c.Turn, c.Made = pick(found, c.SHA, c.Via, c.MessageID)
	} else {
		recs := make([]journal.Record, 0, len(sh.Turns))
		for _, t := range sh.Turns {
			recs = append(recs, recordOf(t))
		}
		for _, c := range sh.Commits {
			c.Turn, c.Made = pick(recs, c.SHA, "", sh.MessageID)
		}
	}
	for _, c := range sh.Commits {
		switch {
		case c.Turn != nil:
			c.Agent = c.Turn.Agent
		case c.Landing != nil:
			c.Agent = c.Landing.Agent
		}
	}
	return sh, nil
}

// recordOf is the part of a journal record pick reads, from turn t.
func recordOf(t Turn) journal.Record {
	r := journal.Record{Agent: t.Agent, Role: t.Role, Thread: t.Thread, Attempt: t.Attempt, At: t.At, Status: t.Status, Files: t.Files,
		Message: journal.Message{ID: t.MessageID, From: t.From, At: t.SentAt, Body: t.Text}}
	if t.Commit != "" {
		r.Commit = &journal.Commit{SHA: t.Commit}
	}
	return r
}

// existing splits shas into the commits the repository has and those it
// has not (one git cat-file).
func existing(ctx context.Context, s Source, shas []string) (have, gone []string, err error) {
	if len(shas) == 0 {
		return nil, nil, nil
	}
	out, err := s.Git.RunInput(ctx, strings.Join(shas, "\n")+"\n", "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return nil, nil, fmt.Errorf("look up the turns' commits: %w", err)
	}
	ok := map[string]bool{}
	for l := range strings.SplitSeq(out, "\n") {
		if sha, typ, _ := strings.Cut(l, " "); typ == "commit" {
			ok[sha] = true
		}
	}
	for _, sha := range shas {
		if ok[sha] {
			have = append(have, sha)
		} else {
			gone = append(gone, sha)
		}
	}
	return have, gone, nil
}

// trailed lists the commits of base and of the agents' branches
// (batty/*) whose Batty-Message trailer is id, oldest first.
func trailed(ctx context.Context, s Source, base, id string) ([]string, error) {
	out, err := s.Git.Run(ctx, "log", "--reverse", "--fixed-strings", "--grep="+"Batty-Message: "+id, "--format="+logFormat,
		"--branches=batty/*", "refs/heads/"+strings.TrimPrefix(base, "refs/heads/"), "--")
	if err != nil {
		// base may be a revision rather than a branch: then by itself.
		if out, err = s.Git.Run(ctx, "log", "--reverse", "--fixed-strings", "--grep="+"Batty-Message: "+id, "--format="+logFormat,
			"--branches=batty/*", base, "--"); err != nil {
			return nil, fmt.Errorf("look for the commits of message %s: %w", id, err)
		}
	}
	var shas []string
	for _, e := range parseLog(out) {
		if e.message == id {
			shas = append(shas, e.sha)
		}
	}
	return shas, nil
}

// firstParents is the set of the commits on base's own line (its first
// parents).
func firstParents(ctx context.Context, s Source, base string) (map[string]bool, error) {
	out, err := s.Git.Run(ctx, "rev-list", "--first-parent", base)
	if err != nil {
		return nil, fmt.Errorf("read the base's history: %w", err)
	}
	set := map[string]bool{}
	for l := range strings.SplitSeq(out, "\n") {
		if l != "" {
			set[l] = true
		}
	}
	return set, nil
}

// landedBy returns the commit of base's own line (line) that brought sha
// to base: the oldest descendant of sha on that line; "" when sha is on
// the line itself or not in base.
func landedBy(ctx context.Context, s Source, sha, base string, line map[string]bool) (string, error) {
	if line[sha] {
		return "", nil
	}
	out, err := s.Git.Run(ctx, "rev-list", "--ancestry-path", "--topo-order", "--reverse", sha+".."+base)
	if err != nil {
		return "", fmt.Errorf("find where %s landed: %w", sha, err)
	}
	for l := range strings.SplitSeq(out, "\n") {
		if line[l] {
			return l, nil
		}
	}
	return "", nil
}

// authorOf reads the author of commit sha.
func authorOf(ctx context.Context, s Source, sha string) (string, time.Time, error) {
	out, err := s.Git.Run(ctx, "log", "-1", "--format=%an <%ae>%x1f%at", sha)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read commit %s: %w", sha, err)
	}
	who, at, _ := strings.Cut(strings.TrimSpace(out), "\x1f")
	return who, parseUnix(at), nil
}

// filesOf lists the files commit sha changed against its first parent
// (all of them for a root commit), at most journal.MaxFiles.
func filesOf(ctx context.Context, s Source, sha string, parents []string) ([]string, error) {
	args := []string{"diff-tree", "-r", "--name-only", "--no-renames", "-z"}
	switch {
	case len(parents) == 0:
		args = append(args, "--root", sha)
	default:
		args = append(args, parents[0], sha)
	}
	out, err := s.Git.Run(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", sha, err)
	}
	var files []string
	for f := range strings.SplitSeq(out, "\x00") {
		if f == "" || f == sha {
			continue
		}
		if len(files) == journal.MaxFiles {
			break
		}
		files = append(files, f)
	}
	return files, nil
}

// parseUnix reads a time in seconds since the epoch; zero when it is not
// one.
func parseUnix(s string) time.Time {
	sec, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// redactCommits replaces the secrets in the texts of commits' turns. In
// place: the commits are the caller's.
func redactCommits(commits []*Commit) {
	for _, c := range commits {
		if c.Turn != nil {
			c.Turn.Text = redact.Text(c.Turn.Text)
		}
	}
}

// Redact replaces the secrets in the texts of r's turns (package
// redact). In place.
func (r Result) Redact() { redactCommits(r.Commits) }

// Redact replaces the secrets in the texts of s's turns (package
// redact). In place.
func (s Shown) Redact() {
	for i := range s.Turns {
		s.Turns[i].Text = redact.Text(s.Turns[i].Text)
	}
	redactCommits(s.Commits)
}
