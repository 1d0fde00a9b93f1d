package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/recall"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/threads"
)

// threadsRecent is how far back `batty threads` without --all lists the
// threads an agent left.
const threadsRecent = 7 * 24 * time.Hour

// threadsCellWidth bounds the first-message and last-reply cells.
const threadsCellWidth = 48

func newThreadsCmd(f *Factory) *cobra.Command {
	var (
		teamFile    string
		all, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "threads [agent…] [--all] [--json]",
		Short: "Every Codex thread the agents have had: current, reset, handed off, stale, rotated",
		Long: `threads lists the Codex threads of the team's agents (of the agents named,
when some are): each agent's current thread and the threads it left —
archived by batty reset, left by a context hand-off, replaced after a thread
codex could not resume (stale), or not carried to a new account (rotation) —
with the agent, role, account, host, when it started and was last active,
its turns and tokens, its state, its first message and its last reply.

It reads what batty records in the project's state directory — each agent's
state, the usage ledger and the turn journal — and needs no daemon: the team
may be running or stopped, its agents local or on other hosts. A thread
whose turns ran before the turn journal was kept shows no message or reply.

Without --all it lists each agent's current thread and the threads active in
the last 7 days; --all lists every one. --json prints {threads [{thread_id,
agent, role, account, host, started, last_active, turns, tokens, state,
ended, end_reason, ended_at, first_message, first_message_id, last_reply,
last_message_id}], skipped}, the texts as the agents wrote them.

batty threads show <thread> prints one thread's conversation; batty threads
restore <agent> <thread> makes an archived thread the agent's current one
again; batty threads fork <thread> --to <agent> starts the agent on a new
thread carrying that thread's history.`,
		Example: `  batty threads
  batty threads architect --all
  batty threads --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			ld, err := threads.Load(p.Layout, teamRoles(cfg))
			if err != nil {
				return err
			}
			warnThreadRecords(cmd.ErrOrStderr(), ld)
			ts := threads.Filter(threads.Build(ld.Records), args, all, time.Now().Add(-threadsRecent))
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"threads": nonNil(ts), "skipped": len(ld.JournalSkips) + len(ld.LedgerSkips)})
			}
			printThreads(cmd.OutOrStdout(), ts, time.Local)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&all, "all", false, "every thread, not only the current ones and those of the last 7 days")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.ValidArgsFunction = f.completeNames(&teamFile, namesAgents)
	cmd.AddCommand(newThreadsShowCmd(f), newThreadsRestoreCmd(f), newThreadsForkCmd(f))
	return cmd
}

func newThreadsShowCmd(f *Factory) *cobra.Command {
	var (
		teamFile                   string
		markdown, asJSON, noRedact bool
	)
	cmd := &cobra.Command{
		Use:   "show <thread> [--markdown | --json] [--no-redact]",
		Short: "One thread's conversation, turn by turn",
		Long: `show prints a thread's conversation turn by turn, from the turn journal: the
message (its id, sender and time), the commands the agent ran with their
output and the files it changed (when the records hold them), its reply, the
turn's tokens and the commit its edits made. <thread> is the thread's id or
a prefix of it (at least 4 characters) that names one thread.

Secrets in the texts (API keys, tokens, private keys, passwords in URLs and
assignments: the common credential formats) are replaced by
[REDACTED:<kind>] unless --no-redact is given. Everything the agents or the
model wrote is escaped before it reaches the terminal.

Inside an agent the running daemon answers, through the agent's outbox: a
thread of the agent's own team, secrets always redacted, at most 64 KiB.

--markdown prints a Markdown document (an export); --json prints {thread,
turns, redacted}, each turn as the journal keeps it.`,
		Example: `  batty threads show 0199a3f2
  batty threads show 0199a3f2 --markdown > thread.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if markdown && asJSON {
				return usageError(cmd, "--markdown and --json are two formats: give one")
			}
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			agent, err := insideAgent()
			if err != nil {
				return err
			}
			if agent != "" {
				if noRedact {
					return usageError(cmd, "--no-redact: inside an agent, secrets are always redacted")
				}
				rq := outbox.Recall{Thread: args[0]}
				switch {
				case asJSON:
					rq.Format = outbox.FormatJSON
				case markdown:
					rq.Format = outbox.FormatMarkdown
				}
				if err := rq.Validate(); err != nil {
					return usageError(cmd, "%v", err)
				}
				return askRecall(cmd, p.Layout, agent, rq)
			}
			ld, err := threads.Load(p.Layout, teamRoles(cfg))
			if err != nil {
				return err
			}
			warnThreadRecords(cmd.ErrOrStderr(), ld)
			th, err := threads.Find(threads.Build(ld.Records), args[0])
			if err != nil {
				return err
			}
			s := recall.ShowOf(ld, th)
			if !noRedact {
				s = s.Redact()
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return writeJSON(out, s)
			case markdown:
				return threads.WriteMarkdown(out, s, time.Local)
			default:
				return threads.WriteText(out, s, time.Local)
			}
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print a Markdown document")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noRedact, "no-redact", false, "show secrets as they were written")
	return cmd
}

// teamRoles maps each agent of the team to its role.
func teamRoles(cfg *team.Config) map[string]string { return recall.Roles(cfg) }

// warnThreadRecords names on w what of the records could not be read.
func warnThreadRecords(w io.Writer, ld threads.Loaded) {
	for _, n := range recall.LoadNotes(ld) {
		fmt.Fprintf(w, "batty: %s\n", n)
	}
}

// printThreads writes the table of ts, the texts escaped and cut to a cell.
func printThreads(w io.Writer, ts []threads.Thread, loc *time.Location) {
	if len(ts) == 0 {
		fmt.Fprintln(w, "No thread yet (batty threads --all lists the older ones).")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tTHREAD\tSTATE\tTURNS\tTOKENS\tSTARTED\tLAST ACTIVE\tACCOUNT\tFIRST MESSAGE\tLAST REPLY")
	for _, t := range ts {
		state := t.State
		if t.Ended != "" {
			state += " (" + t.Ended + ")"
		}
		host := ""
		if t.Host != "" {
			host = "@" + safetext.Line(t.Host, 24)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", safetext.Line(t.Agent, 32), host, statusview.ThreadCell(t.ID), state, t.Turns,
			statusview.Tokens(t.Tokens.Total()), threadTime(t.Started, loc), threadTime(t.LastActive, loc), orDash(safetext.Line(t.Account, 24)),
			orDash(safetext.Line(t.FirstMessage, threadsCellWidth)), orDash(safetext.Line(t.LastReply, threadsCellWidth)))
	}
	tw.Flush()
}

// threadTime is a time in a table: local, to the minute; "-" for none.
func threadTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04")
}
