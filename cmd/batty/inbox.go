package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
)

// Message states shown by `batty inbox`.
const (
	msgStateNew      = "new"
	msgStateInFlight = "in_flight"
	msgStateDone     = "done"
)

// listedState is the name `batty inbox` gives a message's state in its
// box (inbox.StateNew, StateCur, StateDone). It is a pure function.
func listedState(state string) string {
	return map[string]string{inbox.StateNew: msgStateNew, inbox.StateCur: msgStateInFlight, inbox.StateDone: msgStateDone}[state]
}

// listedMessage is one message of `batty inbox --json`: the stored message
// plus the box it is in and its state there.
type listedMessage struct {
	inbox.Message
	Box   string `json:"box"`
	State string `json:"state"`
}

// newInboxCmd returns `batty inbox`: list the human's or an agent's
// messages.
func newInboxCmd(f *Factory) *cobra.Command {
	var (
		teamFile string
		limit    int
		asJSON   bool
		full     string
	)
	cmd := &cobra.Command{
		Use:   "inbox [agent] [-n N] [--json] [-f TEAMFILE]",
		Short: "List the human's messages, or an agent's messages and their outcomes",
		Long: `Without an agent, inbox lists the human's inbox: the messages agents sent to
"human", newest first, with the time, the sender, the message they answer and
the text.

With an agent, it lists that agent's recent messages: pending (new), in
flight, and done with their outcome (status, failure, error, the first line
of the reply and the tokens used). The name of a role with several instances
lists the messages waiting in the role's queue.

--json prints a JSON array of the messages, each with its "box" and "state"
(new, in_flight or done).

A long text is listed as its beginning: a message to the human longer than
1 MiB shows its first 64 KiB, an agent's reply its first line. --full ID
prints the whole text of one message: in the human's inbox its body, in an
agent's its reply once it has one (else its body). With --json, --full
prints the message with its whole texts.

Messages are listed by their short id (1f2e3d4c: what follows the time in
the whole id, 20261121T125100.123456789Z-1f2e3d4c), as in the feed, status
and transcripts. An ID given to --full may be the whole id, the short one,
or any unique beginning of either, as git takes a short hash.`,
		Example: `  batty inbox
  batty inbox --full 1f2e3d4c
  batty inbox --full 1f2e
  batty inbox engineer-1 -n 5
  batty inbox manager --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageError(cmd, "-n must be at least 1, got %d", limit)
			}
			name := team.Human
			if len(args) == 1 {
				name = args[0]
			}
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			box, err := inboxBoxName(cfg, name)
			if err != nil {
				return err
			}
			if full != "" {
				return printFull(cmd.OutOrStdout(), p.Layout, box, name, full, asJSON)
			}
			msgs, err := listBox(p.Layout, box, limit, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printInboxJSON(out, msgs)
			}
			if len(msgs) == 0 {
				fmt.Fprintf(out, "no messages for %s\n", name)
				return nil
			}
			for _, m := range msgs {
				if box == team.Human {
					printHumanMessage(out, m)
				} else {
					printAgentMessage(out, m)
				}
			}
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.ValidArgsFunction = f.completeNames(&teamFile, namesAgents|namesQueues|namesHuman)
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "show at most N messages")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&full, "full", "", "print the whole text of message `ID`")
	return withUsageExit(cmd)
}

// inboxBoxName maps the argument of `batty inbox` to a box: "human", an
// agent, or the queue of a role with several instances.
func inboxBoxName(cfg *team.Config, name string) (string, error) {
	if name == team.Human {
		return team.Human, nil
	}
	if _, ok := cfg.Agent(name); ok {
		return name, nil
	}
	for _, r := range cfg.Roles {
		if r.Name == name {
			return "@" + name, nil
		}
	}
	return "", fmt.Errorf("%w (or no name for the human's inbox)", unknownAgentError(cfg, name))
}

// printFull writes the whole text of message id of box (named name on the
// command line; id may be any unique abbreviation, inbox.ResolveID): in the human's box its body, in an agent's its reply once
// it has one, else its body. With asJSON it writes the message as JSON with
// its whole texts in "body" and "outcome.reply".
func printFull(w io.Writer, l project.Layout, box, name, id string, asJSON bool) error {
	fail := func(err error) error {
		return fmt.Errorf("inbox %s --full %s: %w", name, id, err)
	}
	ok, err := isDir(filepath.Join(l.Inboxes(), box))
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(fmt.Errorf("no message %s in the inbox of %s", id, name))
	}
	store, err := inbox.Open(l.Inboxes())
	if err != nil {
		return fail(err)
	}
	b, err := store.Box(box)
	if err != nil {
		return fail(err)
	}
	list := "batty inbox"
	if box != team.Human {
		list += " " + name
	}
	full, err := b.Resolve(id)
	if errors.Is(err, inbox.ErrNotFound) {
		return fail(fmt.Errorf("no message %s in the inbox of %s (`%s` lists them)", id, name, list))
	}
	if err != nil {
		return fail(err)
	}
	m, state, err := b.Get(full)
	if errors.Is(err, inbox.ErrNotFound) {
		return fail(fmt.Errorf("no message %s in the inbox of %s (`%s` lists them)", id, name, list))
	}
	if err != nil {
		return fail(err)
	}
	body, err := b.FullBody(m)
	if err != nil {
		return fail(err)
	}
	reply, err := b.FullReply(m)
	if err != nil {
		return fail(err)
	}
	if asJSON {
		m.Body, m.BodyFile = body, ""
		if m.Outcome != nil {
			o := *m.Outcome
			o.Reply, o.ReplyFile = reply, ""
			m.Outcome = &o
		}
		return printInboxJSON(w, listedMessage{Message: m, Box: box, State: listedState(state)})
	}
	text := body
	if box != team.Human && reply != "" {
		text = reply
	}
	text = safetext.Text(text)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if _, err := io.WriteString(w, text); err != nil {
		return fail(err)
	}
	return nil
}

// listBox returns at most limit messages of box, newest first. A box that
// does not exist yet is empty (listing creates nothing). Files that cannot
// be read are reported to warn and skipped.
func listBox(l project.Layout, box string, limit int, warn io.Writer) ([]listedMessage, error) {
	ok, err := isDir(filepath.Join(l.Inboxes(), box))
	if err != nil || !ok {
		return []listedMessage{}, err
	}
	store, err := l.OpenInboxes()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", box, err)
	}
	b, err := store.Box(box)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", box, err)
	}
	recent, errs := b.Recent(limit)
	for _, err := range errs {
		fmt.Fprintf(warn, "batty: warning: %s: %v\n", box, err)
	}
	var out []listedMessage
	for _, m := range recent {
		out = append(out, listedMessage{Message: m.Message, Box: box, State: listedState(m.State)})
	}
	if out == nil {
		out = []listedMessage{}
	}
	return out, nil
}

// printInboxJSON writes v as indented JSON.
func printInboxJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// inboxTime formats t for listings, in local time.
func inboxTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// printHumanMessage writes one message of the human's inbox: a header line
// and the whole body, indented. What the message file holds is made safe
// for the terminal (package safetext): the body keeps its lines, the
// header's fields are one line each.
func printHumanMessage(w io.Writer, m listedMessage) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  from %s", inboxTime(m.CreatedAt), safetext.Line(m.From, 0))
	if m.InReplyTo != "" {
		fmt.Fprintf(&b, "  re %s", safetext.Line(inbox.ShortID(m.InReplyTo), 0))
	}
	if m.State == msgStateInFlight {
		b.WriteString("  [in flight]")
	}
	fmt.Fprintf(&b, "  %s\n", safetext.Line(inbox.ShortID(m.ID), 0))
	writeIndented(&b, "  ", safetext.Text(m.Body))
	if m.BodyFile != "" {
		fmt.Fprintf(&b, "  … (%s shown of %s; the whole text: batty inbox --full %s)\n", byteSize(int64(len(m.Body))), byteSize(m.BodySize), safetext.Line(inbox.ShortID(m.ID), 0))
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// byteSize renders n bytes for people: "812 bytes", "64.0 KiB", "20.0 MiB".
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// printAgentMessage writes one message of an agent's inbox: a header line
// with its state or outcome, the first line of the message and, when done,
// the outcome's details, each one line made safe for the terminal
// (safetext.Line).
func printAgentMessage(w io.Writer, m listedMessage) {
	var b strings.Builder
	state := "new"
	switch {
	case m.State == msgStateInFlight:
		state = fmt.Sprintf("in flight (attempt %d)", max(m.Attempt, 1))
	case m.Outcome != nil:
		state = safetext.Line(m.Outcome.Status, 0)
		if m.Outcome.Failure != "" {
			state += " (" + safetext.Line(m.Outcome.Failure, 0) + ")"
		}
	case m.State == msgStateDone:
		state = "done"
	}
	fmt.Fprintf(&b, "%s  %s  from %s", inboxTime(m.CreatedAt), state, safetext.Line(m.From, 0))
	if m.To != m.Box && m.To != "" {
		fmt.Fprintf(&b, " to %s", safetext.Line(m.To, 0))
	}
	fmt.Fprintf(&b, "  %s\n", safetext.Line(inbox.ShortID(m.ID), 0))
	fmt.Fprintf(&b, "  message: %s\n", oneLine(m.Body))
	if m.InReplyTo != "" {
		fmt.Fprintf(&b, "  re:      %s\n", safetext.Line(inbox.ShortID(m.InReplyTo), 0))
	}
	if o := m.Outcome; o != nil {
		if o.Agent != "" && o.Agent != m.Box {
			fmt.Fprintf(&b, "  agent:   %s\n", safetext.Line(o.Agent, 0))
		}
		if o.Error != "" {
			fmt.Fprintf(&b, "  error:   %s\n", oneLine(o.Error))
		}
		if o.Reply != "" {
			fmt.Fprintf(&b, "  reply:   %s\n", oneLine(o.Reply))
		}
		if o.ReplyFile != "" {
			fmt.Fprintf(&b, "           (%s in all: batty inbox %s --full %s)\n", byteSize(o.ReplySize), m.Box, safetext.Line(inbox.ShortID(m.ID), 0))
		}
		fmt.Fprintf(&b, "  tokens:  in %d out %d · finished %s\n", o.InputTokens, o.OutputTokens, inboxTime(o.FinishedAt))
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// oneLine returns the first line of s made safe for a terminal
// (safetext.Line: without surrounding white space, at most 160 runes),
// marked with " …" when more lines follow.
func oneLine(s string) string {
	s = safetext.Text(strings.TrimSpace(s))
	first, _, more := strings.Cut(s, "\n")
	line := safetext.Line(first, 160)
	if more {
		line += " …"
	}
	return line
}

// writeIndented writes every line of s with prefix.
func writeIndented(b *strings.Builder, prefix, s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix)
		b.WriteString(l)
		b.WriteString("\n")
	}
}
