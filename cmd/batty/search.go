package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/redact"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/usage"
)

func newSearchCmd(f *Factory) *cobra.Command {
	var (
		teamFile, role, since, until string
		agents                       []string
		limit                        int
		asJSON, noRedact             bool
	)
	cmd := &cobra.Command{
		Use:   "search <text> [--agent NAME]… [--role ROLE] [--since DUR|TIME] [--until DUR|TIME] [--json]",
		Short: "Full-text search over every thread of the team: messages, replies, commands and their output",
		Long: `search finds the turns of every thread of the team — current or archived —
whose message, reply, commands or command output hold every word of <text>
(words as letters and digits, case ignored), newest first, with the agent,
thread, turn, message id, time and the matching snippet.

It reads the search index the daemon keeps (index/ in the state directory)
and needs no daemon: the team may be running or stopped. Each hit is read
back from the turn journal and shown only when it is still there; what the
index does not hold yet, or holds wrongly, is searched in the journal
directly, and so is everything when the index is missing or unreadable (the
daemon makes it again). A thread whose turns ran before the turn journal
was kept is not found.

--agent (repeatable) and --role keep the turns of those agents or that role;
--since and --until bound when the turn ended: a duration before now (90m,
36h, 7d), an RFC 3339 time or a local date or time; --since includes,
--until excludes. Secrets in the snippets are redacted unless --no-redact.

--json prints {hits [{agent, role, thread_id, turn, message_id, from,
attempt, at, field, snippet}], stale, direct, skipped}.`,
		Example: `  batty search flaky test
  batty search "database is locked" --agent backend --since 7d
  batty search parser --role reviewer --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			q := searchindex.Query{Text: strings.Join(args, " "), Agents: agents, Role: role, Limit: limit}
			if len(searchindex.Terms(q.Text)) == 0 {
				return usageError(cmd, "%q has no word to search for", q.Text)
			}
			var err error
			if since != "" {
				if q.Since, err = usage.ParseWhen(since, now, time.Local); err != nil {
					return usageError(cmd, "--since: %v", err)
				}
			}
			if until != "" {
				if q.Until, err = usage.ParseWhen(until, now, time.Local); err != nil {
					return usageError(cmd, "--until: %v", err)
				}
			}
			if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
				return usageError(cmd, "--since must come before --until")
			}
			if limit < 0 {
				return usageError(cmd, "--limit must not be negative")
			}
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			for _, a := range agents {
				if _, ok := cfg.Agent(a); !ok {
					return unknownAgentError(cfg, a)
				}
			}
			res, err := searchindex.Search(cmd.Context(), p.Layout, q)
			if err != nil {
				return err
			}
			if !noRedact {
				for i := range res.Hits {
					res.Hits[i].Snippet = redact.Text(res.Hits[i].Snippet)
				}
			}
			if res.Stale > 0 || strings.HasPrefix(res.Direct, "the index") {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: searched the turn journal directly: %s\n", safetext.Line(res.Direct, 300))
			}
			if len(res.Skips) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: %d line(s) of the turn journal could not be read (first: %s)\n", len(res.Skips), safetext.Line(res.Skips[0].String(), 200))
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"hits": res.Hits, "stale": res.Stale, "direct": res.Direct, "skipped": len(res.Skips)})
			}
			printHits(cmd.OutOrStdout(), res.Hits, time.Local)
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringSliceVar(&agents, "agent", nil, "only this agent's turns (repeatable)")
	cmd.Flags().StringVar(&role, "role", "", "only the turns of this role's agents")
	cmd.Flags().StringVar(&since, "since", "", "only turns ended since: a duration before now (24h, 7d) or a time")
	cmd.Flags().StringVar(&until, "until", "", "only turns ended before: a duration before now or a time")
	cmd.Flags().IntVar(&limit, "limit", searchindex.DefaultLimit, "at most this many hits, the newest")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noRedact, "no-redact", false, "show secrets in the snippets as they were written")
	_ = cmd.RegisterFlagCompletionFunc("agent", f.completeNames(&teamFile, namesAgents))
	return cmd
}

// printHits writes one hit per two lines: where, then the snippet,
// escaped.
func printHits(w io.Writer, hits []searchindex.Hit, loc *time.Location) {
	if len(hits) == 0 {
		fmt.Fprintln(w, "No turn holds those words.")
		return
	}
	for _, h := range hits {
		fmt.Fprintf(w, "%s  %s  thread %s  message %s from %s  [%s]\n  %s\n",
			h.At.In(loc).Format("2006-01-02 15:04"), safetext.Line(h.Agent, 32), statusview.ThreadCell(h.Thread),
			safetext.Line(h.Message, 0), safetext.Line(h.From, 32), h.Field, safetext.Line(h.Snippet, 200))
	}
}
