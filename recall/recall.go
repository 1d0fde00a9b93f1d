// Package recall answers what an agent asks of its team's memory from
// inside its sandbox: `batty search` and `batty threads show` run by an
// agent write a recall request into its outbox (package outbox), its shim
// relays it, and the daemon answers it here, from its own team's turn
// journal and search index, into the agent's outbox. The answer is what
// the same command prints outside an agent (the rendering is this
// package's, for both), with every secret redacted, cut at
// outbox.MaxAnswerOutput; a Bucket per agent bounds how often it asks.
//
// The agent never reads the state directory, where the index holds every
// agent's text unredacted: the daemon reads it and gives back only the
// answer.
package recall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/redact"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/threads"
)

// Answer answers q, asked by an agent of the team cfg, from the team's
// records in l: the output of `batty search` (q.Search) or `batty threads
// show` (q.Thread) in q's format, times in loc, every secret redacted,
// cut at outbox.MaxAnswerOutput (a note says so); the notes are what the
// command would print on its standard error. Only the team's own threads
// are searched: l is the team's. An error of the search becomes the
// answer's Error.
func Answer(ctx context.Context, l project.Layout, cfg *team.Config, q outbox.Recall, loc *time.Location) outbox.Answer {
	var (
		out   bytes.Buffer
		notes []string
		err   error
	)
	if q.Thread != "" {
		notes, err = show(&out, l, cfg, q, loc)
	} else {
		notes, err = search(ctx, &out, l, cfg, q, loc)
	}
	if err != nil {
		return outbox.Answer{Error: safetext.Line(err.Error(), 1000), Notes: notes}
	}
	text, cut := Bound(out.String(), outbox.MaxAnswerOutput)
	if cut {
		notes = append(notes, fmt.Sprintf("the answer is longer than %d KiB and was cut: narrow it (--agent, --role, --since, --limit)", outbox.MaxAnswerOutput>>10))
	}
	return outbox.Answer{Output: text, Notes: notes}
}

// Bound cuts s to at most max bytes at a UTF-8 boundary and reports
// whether it cut. Pure.
func Bound(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s[len(s)-min(len(s), utf8.UTFMax):]) {
		s = s[:len(s)-1]
	}
	return s, true
}

// search writes the hits of q to w.
func search(ctx context.Context, w io.Writer, l project.Layout, cfg *team.Config, q outbox.Recall, loc *time.Location) ([]string, error) {
	if len(searchindex.Terms(q.Search)) == 0 {
		return nil, fmt.Errorf("%q has no word to search for", q.Search)
	}
	for _, a := range q.Agents {
		if _, ok := cfg.Agent(a); !ok {
			return nil, fmt.Errorf("unknown agent %q in team %q", a, cfg.Name)
		}
	}
	res, err := searchindex.Search(ctx, l, searchindex.Query{Text: q.Search, Agents: q.Agents, Role: q.Role,
		Since: q.Since, Until: q.Until, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	RedactHits(res.Hits)
	notes := SearchNotes(res)
	if q.Format == outbox.FormatJSON {
		return notes, WriteJSON(w, SearchJSON(res))
	}
	WriteHits(w, res.Hits, loc)
	return notes, nil
}

// show writes the conversation of thread q.Thread to w, redacted.
func show(w io.Writer, l project.Layout, cfg *team.Config, q outbox.Recall, loc *time.Location) ([]string, error) {
	ld, err := threads.Load(l, Roles(cfg))
	if err != nil {
		return nil, err
	}
	notes := LoadNotes(ld)
	th, err := threads.Find(threads.Build(ld.Records), q.Thread)
	if err != nil {
		return notes, err
	}
	s := ShowOf(ld, th).Redact()
	switch q.Format {
	case outbox.FormatJSON:
		return notes, WriteJSON(w, s)
	case outbox.FormatMarkdown:
		return notes, threads.WriteMarkdown(w, s, loc)
	default:
		return notes, threads.WriteText(w, s, loc)
	}
}

// ShowOf is thread th of the records ld with its conversation, as `batty
// threads show` prints it. Pure.
func ShowOf(ld threads.Loaded, th threads.Thread) threads.Show {
	turns := threads.Conversation(ld.Journal, th.Agent, th.ID)
	if turns == nil {
		turns = []journal.Record{}
	}
	return threads.Show{Thread: th, Turns: turns}
}

// RedactHits replaces the secrets in the hits' snippets. In place.
func RedactHits(hits []searchindex.Hit) {
	for i := range hits {
		hits[i].Snippet = redact.Text(hits[i].Snippet)
	}
}

// SearchJSON is what `batty search --json` prints of res.
func SearchJSON(res searchindex.Result) map[string]any {
	hits := res.Hits
	if hits == nil {
		hits = []searchindex.Hit{}
	}
	return map[string]any{"hits": hits, "stale": res.Stale, "direct": res.Direct, "skipped": len(res.Skips)}
}

// SearchNotes are the lines `batty search` prints on its standard error
// about res: a journal searched directly, lines not read. Escaped.
func SearchNotes(res searchindex.Result) []string {
	var notes []string
	if res.Stale > 0 || strings.HasPrefix(res.Direct, "the index") {
		notes = append(notes, "searched the turn journal directly: "+safetext.Line(res.Direct, 300))
	}
	if len(res.Skips) > 0 {
		notes = append(notes, fmt.Sprintf("%d line(s) of the turn journal could not be read (first: %s)", len(res.Skips), safetext.Line(res.Skips[0].String(), 200)))
	}
	return notes
}

// LoadNotes are the lines `batty threads` prints on its standard error
// about what of the records could not be read. Escaped.
func LoadNotes(ld threads.Loaded) []string {
	var notes []string
	if n := len(ld.JournalSkips); n > 0 {
		notes = append(notes, fmt.Sprintf("%d line(s) of the turn journal could not be read (first: %s)", n, safetext.Line(ld.JournalSkips[0].String(), 200)))
	}
	if n := len(ld.LedgerSkips); n > 0 {
		notes = append(notes, fmt.Sprintf("%d line(s) of the usage ledger could not be read (first: %s)", n, safetext.Line(ld.LedgerSkips[0].String(), 200)))
	}
	for _, err := range ld.StateErrors {
		notes = append(notes, safetext.Line(err.Error(), 300))
	}
	return notes
}

// WriteHits writes one hit per two lines: where, then the snippet,
// escaped; a line saying so when there is none.
func WriteHits(w io.Writer, hits []searchindex.Hit, loc *time.Location) {
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

// WriteJSON writes v as batty's commands print JSON: indented, one value.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Roles maps each agent of the team to its role.
func Roles(cfg *team.Config) map[string]string {
	m := map[string]string{}
	for _, a := range cfg.Agents() {
		m[a.Name] = a.Role
	}
	return m
}
