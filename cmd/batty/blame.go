package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/blame"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/workspaces"
)

// blameWait bounds the git runs of batty blame and batty show.
const blameWait = 2 * time.Minute

// blameTextWidth bounds a message's text on one line of batty blame.
const blameTextWidth = 120

func newBlameCmd(f *Factory) *cobra.Command {
	var (
		teamFile, branch string
		asJSON, noRedact bool
	)
	cmd := &cobra.Command{
		Use:   "blame <path>[:<line>[-<line>]] [--branch BRANCH] [--json]",
		Short: "Who wrote these lines: the agent, turn and message of each, and the landing that brought it",
		Long: `blame shows, for each line of <path> on the team's base branch (or on
--branch, any branch or commit), the commit that last changed it and what
batty knows of that commit: the agent that made it, its turn (thread, when)
and the message the turn ran (its id, from whom, its text), and the landing
of the merge queue that brought it to the branch (its merge commit and, while
the queue keeps it, its request). <path>:<line> (or <line>-<line>) blames
those lines only, and prints each commit's story whole.

A commit batty makes for a turn carries the trailer Batty-Message: <message
id>; the turn journal, which the daemon alone writes, names the commit each
turn made. A commit the journal names is told as made by that turn; one an
agent made by itself within a turn (no trailer) is told by the turn commit
of its landing that took it along; a commit of the human's, or a trailer no
turn of the journal ran, is told as such. The landing is found by git blame
--first-parent: the merge commit of the branch's own line that brought the
line.

It reads the repository (git run with no hook, textconv or user
configuration) and the project's state directory, and needs no daemon.
Secrets in the messages' texts are redacted unless --no-redact; everything is
escaped before it reaches the terminal.

--json prints {path, branch, rev, lines [{line, text, commit}], commits
[{commit, subject, author, time, message_id, via, agent, made, turn {agent,
role, thread_id, attempt, message_id, from, sent_at, text, status, at,
commit, files}, landing {merge, subject, agent, request, requested_by,
landed_at}}], skipped}.

batty show <message-id|commit> goes the other way.`,
		Example: `  batty blame parser/lexer.go
  batty blame parser/lexer.go:42
  batty blame README.md:10-20 --branch batty/backend --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, rg, err := parseBlameArg(args[0])
			if err != nil {
				return usageError(cmd, "%v", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), blameWait)
			defer cancel()
			src, branch, err := blameSource(ctx, f, teamFile, branch)
			if err != nil {
				return err
			}
			cwd, _ := os.Getwd()
			res, err := blame.Blame(ctx, src, branch, repoPath(src.Git.Dir, cwd, path), rg)
			if err != nil {
				return err
			}
			if !noRedact {
				res.Redact()
			}
			if res.Skipped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: %d line(s) of the turn journal could not be read\n", res.Skipped)
			}
			if asJSON {
				res.Lines, res.Commits = nonNil(res.Lines), nonNil(res.Commits)
				return writeJSON(cmd.OutOrStdout(), res)
			}
			printBlame(cmd.OutOrStdout(), res, rg.From > 0, time.Local)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringVar(&branch, "branch", "", "blame on this branch (or commit) instead of the team's base branch")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noRedact, "no-redact", false, "show secrets in the messages as they were written")
	return cmd
}

func newShowCmd(f *Factory) *cobra.Command {
	var (
		teamFile, branch string
		asJSON, noRedact bool
	)
	cmd := &cobra.Command{
		Use:   "show <message-id|commit> [--json]",
		Short: "What a message made (its turns, commits, landings, files), or a commit's message and turn",
		Long: `show tells, for a message id, the turns that ran it (agent, thread, when,
from whom, its text), the commits they made — those the turn journal names
and those on the base branch and the agents' branches whose Batty-Message
trailer names it — where each landed on the team's base branch (or
--branch), and the files each changed. For a commit (any revision git
knows), its message and the turn that made it, its landing and its files.

It reads the repository and the project's state directory and needs no
daemon. Secrets in the texts are redacted unless --no-redact; everything is
escaped before it reaches the terminal.

--json prints {query, message_id, turns [...], commits [...], gone}, the
turns and commits as batty blame --json prints them; gone lists commits the
journal names that the repository no longer has.`,
		Example: `  batty show 20260101T120000.000000000Z-1a2b3c4d
  batty show 4f2a9c1 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), blameWait)
			defer cancel()
			src, branch, err := blameSource(ctx, f, teamFile, branch)
			if err != nil {
				return err
			}
			sh, err := blame.Show(ctx, src, branch, args[0])
			if err != nil {
				return err
			}
			if !noRedact {
				sh.Redact()
			}
			if sh.Skipped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: %d line(s) of the turn journal could not be read\n", sh.Skipped)
			}
			if asJSON {
				sh.Turns, sh.Commits = nonNil(sh.Turns), nonNil(sh.Commits)
				return writeJSON(cmd.OutOrStdout(), sh)
			}
			printShown(cmd.OutOrStdout(), sh, time.Local)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringVar(&branch, "branch", "", "where the commits landed: this branch instead of the team's base branch")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noRedact, "no-redact", false, "show secrets in the messages as they were written")
	return cmd
}

// blameSource opens the repository of the team in teamFile (only
// reading) and returns where blame and show read and the branch they
// read: branch, or the team's base branch when it is "".
func blameSource(ctx context.Context, f *Factory, teamFile, branch string) (blame.Source, string, error) {
	p, cfg, err := f.Team(teamFile)
	if err != nil {
		return blame.Source{}, "", err
	}
	repo, err := workspaces.Open(ctx, repoOptions(p))
	if err != nil {
		return blame.Source{}, "", err
	}
	if branch == "" {
		if branch, err = repo.ResolveBase(ctx, cfg.Workspace.Base); err != nil {
			return blame.Source{}, "", fmt.Errorf("%s: %w", cfg.Path, err)
		}
	}
	return blame.Source{Git: blame.Git(repo.TopLevel(), nil), Layout: p.Layout}, branch, nil
}

// parseBlameArg splits <path>[:<line>[-<line>]]. A suffix that is not a
// line number is part of the path. It is a pure function.
func parseBlameArg(arg string) (string, blame.Range, error) {
	i := strings.LastIndexByte(arg, ':')
	if i <= 0 {
		return arg, blame.Range{}, nil
	}
	spec := arg[i+1:]
	a, b, isRange := strings.Cut(spec, "-")
	from, err := strconv.Atoi(a)
	if err != nil || a == "" || a[0] == '+' {
		return arg, blame.Range{}, nil
	}
	to := from
	if isRange {
		if to, err = strconv.Atoi(b); err != nil || b == "" || b[0] == '+' {
			return "", blame.Range{}, fmt.Errorf("%q: want <path>:<line> or <path>:<line>-<line>", arg)
		}
	}
	if from < 1 || to < from {
		return "", blame.Range{}, fmt.Errorf("%q: lines count from 1, the first no later than the last", arg)
	}
	return arg[:i], blame.Range{From: from, To: to}, nil
}

// repoPath is path as the repository whose top level is top names it: a
// path given from cwd inside the work tree is made relative to top; any
// other is taken as relative to top already. It is a pure function of its
// arguments (and of no file).
func repoPath(top, cwd, path string) string {
	if filepath.IsAbs(path) {
		if rel, err := filepath.Rel(top, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
		return path
	}
	if cwd != "" {
		if rel, err := filepath.Rel(top, filepath.Join(cwd, path)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(path)
}

// printBlame writes one row per line (commit, agent, message, the line)
// and then each commit's story: with detail, whole.
func printBlame(w io.Writer, res blame.Result, detail bool, loc *time.Location) {
	width := len(strconv.Itoa(max(len(res.Lines), 1)))
	if n := len(res.Lines); n > 0 {
		width = len(strconv.Itoa(res.Lines[n-1].N))
	}
	for _, l := range res.Lines {
		c := res.Commit(l.Commit)
		fmt.Fprintf(w, "%s %s %s %*d│ %s\n", pad(shortSHA(l.Commit), 8), pad(cell(c.Agent, 16), 16), pad(cell(shortID(c.MessageID), 14), 14),
			width, l.N, safetext.Line(l.Text, 0))
	}
	fmt.Fprintln(w)
	for _, c := range res.Commits {
		writeCommit(w, c, detail, loc)
	}
}

// printShown writes what batty show found.
func printShown(w io.Writer, sh blame.Shown, loc *time.Location) {
	if sh.MessageID != "" {
		fmt.Fprintf(w, "Message %s\n", safetext.Line(sh.MessageID, 0))
	}
	if len(sh.Turns) == 0 && sh.MessageID != "" {
		fmt.Fprintln(w, "  no turn of the turn journal ran it")
	}
	for _, t := range sh.Turns {
		writeTurn(w, "  ", t, loc)
	}
	fmt.Fprintln(w)
	if len(sh.Commits) == 0 {
		fmt.Fprintln(w, "No commit.")
	}
	for _, c := range sh.Commits {
		writeCommit(w, c, true, loc)
		if len(c.Files) > 0 {
			fmt.Fprintf(w, "  files:")
			for _, f := range c.Files {
				fmt.Fprintf(w, " %s", safetext.Line(f, 200))
			}
			fmt.Fprintln(w)
		}
	}
	for _, g := range sh.Gone {
		fmt.Fprintf(w, "%s  named by the turn journal, no longer in the repository\n", shortSHA(g))
	}
}

// writeCommit writes a commit's story: who made it, the turn and message,
// the landing; detail adds the message's text whole (clipped).
func writeCommit(w io.Writer, c *blame.Commit, detail bool, loc *time.Location) {
	fmt.Fprintf(w, "%s  %s  %s  %s\n", shortSHA(c.SHA), stamp(c.Time, loc), safetext.Line(c.Author, 60), safetext.Line(c.Subject, 80))
	switch {
	case c.Turn != nil && c.Made && c.Via != "":
		fmt.Fprintf(w, "  made by %s within the turn of message %s, whose commit %s took it along\n",
			safetext.Line(c.Agent, 64), safetext.Line(c.MessageID, 0), shortSHA(c.Via))
	case c.Turn != nil && c.Made:
		fmt.Fprintf(w, "  made by %s in the turn of message %s\n", safetext.Line(c.Agent, 64), safetext.Line(c.MessageID, 0))
	case c.Turn != nil:
		fmt.Fprintf(w, "  its trailer names message %s, but no turn of the journal made this commit; the message's last turn:\n", safetext.Line(c.MessageID, 0))
	case c.MessageID != "":
		fmt.Fprintf(w, "  its trailer names message %s, which no turn of the turn journal ran\n", safetext.Line(c.MessageID, 0))
	default:
		fmt.Fprintln(w, "  no message: not a turn's commit")
	}
	if c.Turn != nil {
		writeTurn(w, "    ", *c.Turn, loc)
		if detail {
			fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(safetext.Block(strings.TrimSpace(c.Turn.Text)), "\n", "\n    "))
		}
	}
	if l := c.Landing; l != nil {
		fmt.Fprintf(w, "  landed by %s", shortSHA(l.Merge))
		if l.Request != "" {
			fmt.Fprintf(w, ", landing request %s asked by %s, landed %s", safetext.Line(l.Request, 0), safetext.Line(l.RequestedBy, 64), stamp(l.At, loc))
		} else {
			fmt.Fprintf(w, " (%s; the merge queue no longer keeps its request)", safetext.Line(l.Subject, 80))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// writeTurn writes one line of turn t: agent, thread, when, from whom,
// the message's text's first line.
func writeTurn(w io.Writer, indent string, t blame.Turn, loc *time.Location) {
	fmt.Fprintf(w, "%s%s  thread %s  attempt %d  %s  from %s: %s\n", indent, safetext.Line(t.Agent, 32), statusview.ThreadCell(t.Thread),
		t.Attempt, stamp(t.At, loc), safetext.Line(t.From, 32), safetext.Line(t.Text, blameTextWidth))
}

// stamp is t in loc to the minute, "-" when zero.
func stamp(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04")
}

// shortSHA is a commit's first 8 hex digits.
func shortSHA(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return safetext.Line(s, 8)
}

// shortID is a message id's end (its unique part), at most 14
// characters.
func shortID(id string) string {
	if len(id) > 14 {
		return "…" + id[len(id)-13:]
	}
	return id
}

// pad is s padded with spaces to n characters.
func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// cell is s escaped and clipped to n, "-" when empty.
func cell(s string, n int) string {
	if s == "" {
		return "-"
	}
	return safetext.Line(s, n)
}
