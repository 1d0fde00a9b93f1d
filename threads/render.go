package threads

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/redact"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
)

// Show is one thread and its conversation, as `batty threads show`
// prints it.
type Show struct {
	Thread Thread           `json:"thread"`
	Turns  []journal.Record `json:"turns"`
	// Redacted counts the secrets taken out (0 with redaction off).
	Redacted int `json:"redacted"`
}

// Redact is s with its secrets taken out (package redact), the count
// added to the show's.
func (s *Show) redact(t string) string {
	out, n := redact.Count(t)
	s.Redacted += n
	return out
}

// Redact takes the secrets out of every text of the show: the thread's
// first message and last reply, and each turn's message, reply, error,
// commands and their output. Pure (it changes s's copies only).
func (s Show) Redact() Show {
	th := s.Thread
	// The thread's first message and last reply are its turns' too:
	// counted with the turns.
	th.FirstMessage, th.LastReply = redact.Text(th.FirstMessage), redact.Text(th.LastReply)
	turns := make([]journal.Record, len(s.Turns))
	for i, r := range s.Turns {
		r.Message.Body, r.Reply, r.Error = s.redact(r.Message.Body), s.redact(r.Reply), s.redact(r.Error)
		if r.Commands != nil {
			cmds := make([]journal.Command, len(r.Commands))
			for k, c := range r.Commands {
				c.Command, c.Output = s.redact(c.Command), s.redact(c.Output)
				cmds[k] = c
			}
			r.Commands = cmds
		}
		turns[i] = r
	}
	s.Thread, s.Turns = th, turns
	return s
}

// stamp is how a time reads in a show: local, to the second.
func stamp(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04:05")
}

// WriteText writes s for a terminal: every text the agents or the model
// wrote escaped (safetext: no escape sequence, control character or bidi
// control reaches the terminal), times in loc.
func WriteText(w io.Writer, s Show, loc *time.Location) error {
	th := s.Thread
	var b strings.Builder
	fmt.Fprintf(&b, "thread %s  agent %s", safetext.Line(th.ID, 0), safetext.Line(th.Agent, 0))
	if th.Role != "" {
		fmt.Fprintf(&b, "  role %s", safetext.Line(th.Role, 0))
	}
	if th.Account != "" {
		fmt.Fprintf(&b, "  account %s", safetext.Line(th.Account, 0))
	}
	if th.Host != "" {
		fmt.Fprintf(&b, "  host %s", safetext.Line(th.Host, 0))
	}
	fmt.Fprintf(&b, "\n%s", th.State)
	if th.Ended != "" {
		fmt.Fprintf(&b, " (%s %s: %s)", th.Ended, stamp(th.EndedAt, loc), safetext.Line(th.EndReason, 200))
	}
	fmt.Fprintf(&b, "  %d turns  %s tokens  %s → %s\n", th.Turns, statusview.Tokens(th.Tokens.Total()), stamp(th.Started, loc), stamp(th.LastActive, loc))
	if len(s.Turns) == 0 {
		b.WriteString("\nNo turn of this thread is in the turn journal (its turns ran before it was kept).\n")
	}
	for i, r := range s.Turns {
		fmt.Fprintf(&b, "\n── turn %d  %s  message %s from %s (sent %s)  %s", i+1, stamp(r.At, loc), safetext.Line(r.Message.ID, 0),
			safetext.Line(r.Message.From, 0), stamp(r.Message.At, loc), safetext.Line(r.Status, 0))
		if r.Failure != "" {
			fmt.Fprintf(&b, " (%s)", safetext.Line(r.Failure, 0))
		}
		fmt.Fprintf(&b, "  %s tokens\n", statusview.Tokens(r.Tokens.Total()))
		fmt.Fprintf(&b, "message:\n%s\n", indent(safetext.Text(r.Message.Body)))
		for _, c := range r.Commands {
			code := "?"
			if c.ExitCode != nil {
				code = fmt.Sprint(*c.ExitCode)
			}
			fmt.Fprintf(&b, "$ %s  (exit %s)\n", safetext.Line(c.Command, 0), code)
			if c.Output != "" {
				fmt.Fprintf(&b, "%s\n", indent(safetext.Text(c.Output)))
			}
		}
		if len(r.Files) > 0 {
			b.WriteString("files changed:\n")
			for _, f := range r.Files {
				fmt.Fprintf(&b, "  %s\n", safetext.Line(f, 0))
			}
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "error:\n%s\n", indent(safetext.Text(r.Error)))
		}
		if r.Reply != "" {
			fmt.Fprintf(&b, "reply:\n%s\n", indent(safetext.Text(r.Reply)))
		}
		if r.Commit != nil {
			fmt.Fprintf(&b, "commit %s", safetext.Line(r.Commit.SHA, 0))
			if r.Commit.Branch != "" {
				fmt.Fprintf(&b, " on %s", safetext.Line(r.Commit.Branch, 0))
			}
			b.WriteString("\n")
		}
	}
	if s.Redacted > 0 {
		fmt.Fprintf(&b, "\n(%d secrets redacted; --no-redact shows them)\n", s.Redacted)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// WriteMarkdown writes s as a Markdown document: texts the agents or the
// model wrote go into fenced blocks (a fence longer than any run of
// backticks in them, so none can close it early) after safetext.Text,
// and one-line fields through safetext.Line with Markdown's specials
// escaped; times in loc.
func WriteMarkdown(w io.Writer, s Show, loc *time.Location) error {
	th := s.Thread
	var b strings.Builder
	fmt.Fprintf(&b, "# Thread %s\n\n", mdLine(th.ID))
	fmt.Fprintf(&b, "- agent: %s\n", mdLine(th.Agent))
	for _, kv := range [][2]string{{"role", th.Role}, {"account", th.Account}, {"host", th.Host}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "- %s: %s\n", kv[0], mdLine(kv[1]))
		}
	}
	fmt.Fprintf(&b, "- state: %s", th.State)
	if th.Ended != "" {
		fmt.Fprintf(&b, " (%s, %s: %s)", th.Ended, stamp(th.EndedAt, loc), mdLine(th.EndReason))
	}
	fmt.Fprintf(&b, "\n- turns: %d, tokens: %s\n- from %s to %s\n", th.Turns, statusview.Tokens(th.Tokens.Total()), stamp(th.Started, loc), stamp(th.LastActive, loc))
	if s.Redacted > 0 {
		fmt.Fprintf(&b, "- %d secrets redacted\n", s.Redacted)
	}
	for i, r := range s.Turns {
		fmt.Fprintf(&b, "\n## Turn %d — %s\n\n", i+1, stamp(r.At, loc))
		fmt.Fprintf(&b, "Message %s from %s, sent %s; %s", mdLine(r.Message.ID), mdLine(r.Message.From), stamp(r.Message.At, loc), mdLine(r.Status))
		if r.Failure != "" {
			fmt.Fprintf(&b, " (%s)", mdLine(r.Failure))
		}
		fmt.Fprintf(&b, "; %s tokens.\n\n", statusview.Tokens(r.Tokens.Total()))
		b.WriteString(fence(r.Message.Body, "text"))
		if len(r.Commands) > 0 {
			b.WriteString("\n### Commands\n\n")
			for _, c := range r.Commands {
				code := "?"
				if c.ExitCode != nil {
					code = fmt.Sprint(*c.ExitCode)
				}
				out := "$ " + c.Command + "\n" + c.Output
				b.WriteString(fence(out, "console"))
				fmt.Fprintf(&b, "exit %s\n\n", code)
			}
		}
		if len(r.Files) > 0 {
			b.WriteString("\n### Files changed\n\n")
			for _, f := range r.Files {
				fmt.Fprintf(&b, "- %s\n", mdLine(f))
			}
		}
		if r.Error != "" {
			b.WriteString("\n### Error\n\n")
			b.WriteString(fence(r.Error, "text"))
		}
		if r.Reply != "" {
			b.WriteString("\n### Reply\n\n")
			b.WriteString(fence(r.Reply, "markdown"))
		}
		if r.Commit != nil {
			fmt.Fprintf(&b, "\nCommit %s", mdLine(r.Commit.SHA))
			if r.Commit.Branch != "" {
				fmt.Fprintf(&b, " on %s", mdLine(r.Commit.Branch))
			}
			b.WriteString(".\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdLine is s on one line, clean, with Markdown's specials escaped.
func mdLine(s string) string {
	s = safetext.Line(s, 0)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_{}[]()<>#+-.!|~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fence is s, clean, in a fenced code block that nothing in s can close.
func fence(s, lang string) string {
	s = strings.TrimRight(safetext.Text(s), "\n")
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + lang + "\n" + s + "\n" + f + "\n"
}
