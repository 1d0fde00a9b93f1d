package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/usage"
)

// usageChartBuckets is how many buckets the chart of tokens over time has.
const usageChartBuckets = 48

// usageSkipsShown bounds the ledger's unreadable lines named on stderr.
const usageSkipsShown = 5

func newUsageCmd(f *Factory) *cobra.Command {
	var (
		teamFile, since, until, by string
		asJSON, limits             bool
	)
	cmd := &cobra.Command{
		Use:   "usage [--since DUR|TIME] [--until DUR|TIME] [--by agent|role|account|host|model|hour|day] [--json] [--limits]",
		Short: "Tokens used over time, by agent, role, account, host, model, hour or day; with --limits the accounts' rate limits",
		Long: `usage reads the project's usage ledger (usage/ in its state directory), where
the daemon appends every finished turn — agent, role, account, host, model,
runtime, input, cached input, output and reasoning tokens, the turn's time
and its outcome — and prints a table with a TOTAL row and, on a terminal,
a chart of tokens over time. It needs no daemon: the ledger is append-only,
read directly, with the team running or stopped.

Tokens are as Codex reports them: INPUT counts every input token, CACHED
the part of it served from the prompt cache; OUTPUT every output token,
REASONING the part of it spent reasoning; TOTAL is INPUT + OUTPUT. A turn
cut off before it ended (a daemon killed mid-turn) reported nothing and is
not counted; a message that ran again counts each run.

--since and --until bound the turns by when they ended: a duration before
now (90m, 36h, 7d, 2w), an RFC 3339 time, or a local date or time
(2030-05-01, "2030-05-01 14:00"); --since includes, --until excludes.
--by groups the rows; hours and days are local.

With pricing: in team.yaml (dollars per million input, cached input and
output tokens, per model as codex.model names it) a COST column is added; a
turn on a model without a price has no cost (marked *): batty never guesses
a price.

--limits shows instead each account's rate-limit windows as Codex reported
them (runtime: app-server): the used percent over time, the last one, and
when the window resets.

--json prints {since, until, by, rows, total, series, step_s, skipped} (each
row {key, turns, tokens {input, cached_input, output, reasoning_output},
total_tokens, duration_ms, cost_usd, unpriced_turns}), or with --limits
{limits [{account, window, window_minutes, used_pct, resets_at, seen_at,
samples}], skipped}. A line of the ledger that cannot be read is skipped
and named on stderr (and in "skipped").`,
		Example: `  batty usage
  batty usage --since 24h --by agent
  batty usage --since 2030-05-01 --until 2030-06-01 --by day --json
  batty usage --limits`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			q := usage.Query{Loc: time.Local}
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
				return usageError(cmd, "--since (%s) must come before --until (%s)", q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
			}
			if by != "" {
				if limits {
					return usageError(cmd, "--by groups turns; --limits shows the rate-limit windows")
				}
				if q.By, err = usage.ParseDimension(by); err != nil {
					return usageError(cmd, "--by: %v", err)
				}
			}
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			d, err := usage.Read(p.Layout, q.Since, q.Until)
			if err != nil {
				return err
			}
			warnSkips(cmd.ErrOrStderr(), d.Skips)
			out := cmd.OutOrStdout()
			if limits {
				rows := usage.LimitHistory(d.Limits, q)
				if asJSON {
					return writeJSON(out, map[string]any{"limits": rows, "skipped": nonNil(d.Skips)})
				}
				printLimits(out, rows, now)
				return nil
			}
			s := usage.Summarize(d.Turns, q, prices(cfg))
			from, to := q.Since, q.Until
			if to.IsZero() {
				to = now
			}
			if from.IsZero() && len(d.Turns) > 0 {
				from = d.Turns[0].At
				for _, t := range d.Turns {
					if t.At.Before(from) {
						from = t.At
					}
				}
			}
			series, step := usage.Series(d.Turns, from, to, usageChartBuckets)
			if asJSON {
				return writeJSON(out, usageJSON{Summary: s, Series: nonNil(series), StepS: int64(step / time.Second), Skipped: nonNil(d.Skips)})
			}
			printUsage(out, s, cfg.Pricing != nil)
			if f.IOStreams.IsStdoutTTY() && len(series) > 1 {
				printChart(out, series, step)
			}
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringVar(&since, "since", "", "only turns ended since: a duration before now (24h, 7d) or a time")
	cmd.Flags().StringVar(&until, "until", "", "only turns ended before: a duration before now or a time")
	cmd.Flags().StringVar(&by, "by", "", "group the rows: agent, role, account, host, model, hour or day")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&limits, "limits", false, "the accounts' rate-limit windows over time, with their reset times")
	_ = cmd.RegisterFlagCompletionFunc("by", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, d := range usage.Dimensions {
			out = append(out, string(d))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// usageJSON is what `batty usage --json` prints.
type usageJSON struct {
	usage.Summary
	Series  []usage.Point `json:"series"`
	StepS   int64         `json:"step_s"`
	Skipped []usage.Skip  `json:"skipped"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// prices are the team file's prices, nil without pricing.
func prices(cfg *team.Config) usage.Prices {
	if cfg.Pricing == nil {
		return nil
	}
	ps := usage.Prices{}
	for model, p := range cfg.Pricing {
		ps[model] = usage.Price{Input: p.Input, CachedInput: p.CachedInput, Output: p.Output}
	}
	return ps
}

// warnSkips names the ledger's lines that were not read.
func warnSkips(w io.Writer, skips []usage.Skip) {
	if len(skips) == 0 {
		return
	}
	fmt.Fprintf(w, "batty usage: %d line(s) of the usage ledger could not be read and are not counted:\n", len(skips))
	for i, s := range skips {
		if i == usageSkipsShown {
			fmt.Fprintf(w, "  … and %d more\n", len(skips)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", safetext.Line(s.String(), 200))
	}
}

// printUsage writes the table of s: one row per group and the total, the
// cost column when priced.
func printUsage(w io.Writer, s usage.Summary, priced bool) {
	fmt.Fprintln(w, usageHeadline(s))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := strings.ToUpper(string(s.By))
	if head == "" {
		head = " "
	}
	cols := []string{head, "TURNS", "INPUT", "CACHED", "OUTPUT", "REASONING", "TOTAL", "TIME"}
	if priced {
		cols = append(cols, "COST")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	unpriced := false
	row := func(r usage.Row, key string) {
		cells := []string{key, fmt.Sprint(r.Turns), statusview.Tokens(r.Tokens.Input), statusview.Tokens(r.Tokens.CachedInput), statusview.Tokens(r.Tokens.Output),
			statusview.Tokens(r.Tokens.ReasoningOutput), statusview.Tokens(r.Total), (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Second).String()}
		if priced {
			cells = append(cells, cost(r))
			unpriced = unpriced || r.Unpriced > 0
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	for _, r := range s.Rows {
		row(r, rowKey(r.Key, s.By))
	}
	row(s.Total, "TOTAL")
	tw.Flush()
	if unpriced {
		fmt.Fprintf(w, "* %d turn(s) on a model without a price in pricing: (or on Codex's default model) are not in the cost\n", s.Total.Unpriced)
	}
}

// usageHeadline says what the table covers.
func usageHeadline(s usage.Summary) string {
	from, to := "the first turn", "now"
	if s.Since != nil {
		from = s.Since.Local().Format("2006-01-02 15:04")
	}
	if s.Until != nil {
		to = s.Until.Local().Format("2006-01-02 15:04")
	}
	return fmt.Sprintf("Usage from %s to %s: %d turn(s), %s tokens", from, to, s.Total.Turns, statusview.Tokens(s.Total.Total))
}

// rowKey is how a row's key shows: hours and days as local times, other
// keys made safe for the terminal.
func rowKey(key string, by usage.Dimension) string {
	if by == usage.ByHour || by == usage.ByDay {
		if t, err := time.Parse(time.RFC3339, key); err == nil {
			if by == usage.ByDay {
				return t.Format("2006-01-02")
			}
			return t.Format("2006-01-02 15:04")
		}
	}
	return safetext.Line(key, 60)
}

// cost shows a row's cost, marked * when turns of it have no price.
func cost(r usage.Row) string {
	if r.Cost == nil {
		return "-"
	}
	s := fmt.Sprintf("$%.2f", *r.Cost)
	if *r.Cost > 0 && *r.Cost < 0.01 {
		s = fmt.Sprintf("$%.4f", *r.Cost)
	}
	if r.Unpriced > 0 {
		s += "*"
	}
	return s
}

// printChart draws the tokens over time as a sparkline, with its range
// and its highest bucket.
func printChart(w io.Writer, series []usage.Point, step time.Duration) {
	values := make([]int64, len(series))
	top := int64(0)
	for i, p := range series {
		values[i] = p.Tokens
		top = max(top, p.Tokens)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "tokens per %s, highest %s\n", stepLabel(step), statusview.Tokens(top))
	fmt.Fprintf(w, "%s\n", usage.Sparkline(values, 0))
	first, last := series[0].At.Local(), series[len(series)-1].At.Add(step).Local()
	fmt.Fprintf(w, "%s → %s\n", first.Format("2006-01-02 15:04"), last.Format("2006-01-02 15:04"))
}

// stepLabel names a bucket's length: 15m, 3h, 1d, 7d.
func stepLabel(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}

// printLimits writes each account's rate-limit windows: the last used
// percent, when the window resets, and the used percent over time.
func printLimits(w io.Writer, rows []usage.LimitRow, now time.Time) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No rate-limit windows recorded: Codex reports them with runtime: app-server.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tWINDOW\tUSED\tRESETS\tSEEN\tOVER TIME")
	for _, r := range rows {
		window := safetext.Line(r.Window, 20)
		if r.WindowMinutes > 0 {
			window += " (" + stepLabel(time.Duration(r.WindowMinutes)*time.Minute) + ")"
		}
		resets := "-"
		if r.ResetsAt != nil {
			resets = r.ResetsAt.Local().Format("2006-01-02 15:04")
			if r.ResetsAt.Before(now) {
				resets += " (past)"
			}
		}
		samples := r.Samples
		if len(samples) > usageChartBuckets {
			samples = samples[len(samples)-usageChartBuckets:]
		}
		values := make([]int64, len(samples))
		for i, s := range samples {
			values[i] = int64(s.UsedPct) + 1 // 0% still a bar: a sample
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%s\t%s\t%s\n", safetext.Line(r.Account, 60), window, r.UsedPct, resets,
			r.SeenAt.Local().Format("2006-01-02 15:04"), usage.Sparkline(values, 101))
	}
	tw.Flush()
}
