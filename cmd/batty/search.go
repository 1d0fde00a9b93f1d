package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/recall"
	"github.com/battyhq/batty/searchindex"
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

Inside an agent (its Codex's shell) the command cannot read the state
directory: it asks the running daemon through the agent's outbox and prints
its answer, of the agent's own team, secrets always redacted, at most 64 KiB,
a few searches a second at most. The team must be running.

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
			agent, err := insideAgent()
			if err != nil {
				return err
			}
			if agent != "" {
				if noRedact {
					return usageError(cmd, "--no-redact: inside an agent, secrets are always redacted")
				}
				if limit > outbox.MaxRecallLimit {
					return usageError(cmd, "--limit: at most %d inside an agent", outbox.MaxRecallLimit)
				}
				rq := outbox.Recall{Search: q.Text, Agents: agents, Role: role, Since: q.Since, Until: q.Until, Limit: limit}
				if asJSON {
					rq.Format = outbox.FormatJSON
				}
				return askRecall(cmd, p.Layout, agent, rq)
			}
			res, err := searchindex.Search(cmd.Context(), p.Layout, q)
			if err != nil {
				return err
			}
			if !noRedact {
				recall.RedactHits(res.Hits)
			}
			for _, n := range recall.SearchNotes(res) {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: %s\n", n)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), recall.SearchJSON(res))
			}
			recall.WriteHits(cmd.OutOrStdout(), res.Hits, time.Local)
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
