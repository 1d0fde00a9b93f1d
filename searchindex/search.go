package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
)

// Query is a search: the words every hit holds, and the filters.
type Query struct {
	Text string
	// Agents, when not empty, are the only agents searched; Role, when
	// set, the only role.
	Agents []string
	Role   string
	// Since and Until bound when the turn ended: [Since, Until), a zero
	// bound none.
	Since, Until time.Time
	// Limit bounds the hits (the newest kept); 0 means DefaultLimit.
	Limit int
}

// DefaultLimit is how many hits a query without a limit returns.
const DefaultLimit = 20

// Hit is one turn that holds the words.
type Hit struct {
	Agent   string    `json:"agent"`
	Role    string    `json:"role,omitempty"`
	Thread  string    `json:"thread_id,omitempty"`
	Key     string    `json:"turn"`
	Message string    `json:"message_id"`
	From    string    `json:"from"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	// Field is where the first word was found (message, reply, command,
	// error), Snippet the text around it, on one line, as the agent or
	// the model wrote it: escape it before it reaches a terminal.
	Field   string `json:"field"`
	Snippet string `json:"snippet"`
}

// Result is a search's answer.
type Result struct {
	Hits []Hit `json:"hits"`
	// Stale counts the index's rows found not to be their turn's (not
	// served; their journal was searched directly instead).
	Stale int `json:"stale,omitempty"`
	// Direct names why journals were searched without the index: the
	// index missing or unreadable (all of them), or the journals it does
	// not hold whole yet. "" when the index answered alone.
	Direct string `json:"direct,omitempty"`
	// Skips are the journal lines that could not be read.
	Skips []journal.Skip `json:"skipped,omitempty"`
}

// Search finds the newest turns of the project in l whose message,
// reply, commands or output hold every word of q.Text. It only reads: the
// index read-only (when there is one to read), the journal directly for
// what the index lacks or got wrong. Safe with the daemon writing.
func Search(ctx context.Context, l project.Layout, q Query) (Result, error) {
	terms := Terms(q.Text)
	if len(terms) == 0 {
		return Result{}, errors.New("nothing to search for: give a word")
	}
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	j, err := journal.Open(l)
	if err != nil {
		return Result{}, err
	}
	defer j.Close()
	s := &searcher{q: q, terms: terms, j: j, files: map[string]*journal.File{}, got: map[string]bool{}}
	defer s.closeFiles()
	agents, err := s.agents()
	if err != nil {
		return Result{}, err
	}
	db, why := openReader(ctx, l)
	if db != nil {
		defer db.Close()
	}
	direct := map[string]int64{} // journal file → from where it is searched directly
	var reasons []string
	if why != "" {
		reasons = append(reasons, "the index "+why)
		for _, a := range agents {
			direct[journal.FileName(a)] = 0
		}
	} else {
		have, err := sources(ctx, db)
		if err != nil {
			return Result{}, err
		}
		behind := 0
		for _, a := range agents {
			f, err := s.file(a)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return Result{}, err
			}
			src, ok := have[f.Name]
			switch sameOK, err := same(src, f); {
			case err != nil:
				return Result{}, err
			case !ok || !sameOK:
				direct[f.Name] = 0
				behind++
			case src.size < f.Size:
				direct[f.Name] = src.size
				behind++
			}
		}
		if behind > 0 {
			reasons = append(reasons, fmt.Sprintf("%d journals not indexed whole yet", behind))
		}
		if err := s.fromIndex(ctx, db, agents, direct); err != nil {
			return Result{}, err
		}
		if s.res.Stale > 0 {
			reasons = append(reasons, fmt.Sprintf("%d stale rows of the index", s.res.Stale))
		}
	}
	for _, a := range agents {
		from, ok := direct[journal.FileName(a)]
		if !ok {
			continue
		}
		if err := s.scan(a, from); err != nil {
			return Result{}, err
		}
	}
	slices.SortStableFunc(s.res.Hits, func(a, b Hit) int { return cmp.Or(b.At.Compare(a.At), strings.Compare(a.Key, b.Key)) })
	if len(s.res.Hits) > q.Limit {
		s.res.Hits = s.res.Hits[:q.Limit]
	}
	s.res.Direct = strings.Join(reasons, "; ")
	if s.res.Hits == nil {
		s.res.Hits = []Hit{}
	}
	return s.res, nil
}

// openReader opens the index read-only: nil and why when there is none to
// read.
func openReader(ctx context.Context, l project.Layout) (*sql.DB, string) {
	d, err := l.OpenDir(DirName, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "is missing (the daemon makes it)"
	}
	if err != nil {
		return nil, "cannot be opened: " + err.Error()
	}
	defer d.Close()
	if err := refuseLinks(d); err != nil {
		return nil, err.Error()
	}
	if _, err := d.Lstat(FileName); err != nil {
		return nil, "is missing (the daemon makes it)"
	}
	db, err := sql.Open("sqlite", dsn(Path(l), true))
	if err != nil {
		return nil, "cannot be opened: " + err.Error()
	}
	if why := version(ctx, db); why != "" {
		db.Close()
		return nil, "is unreadable (" + why + "; the daemon rebuilds it)"
	}
	return db, ""
}

// searcher is one search.
type searcher struct {
	q     Query
	terms []string
	j     *journal.Dir
	files map[string]*journal.File // by agent, opened once
	got   map[string]bool          // the keys of the hits
	res   Result
}

func (s *searcher) closeFiles() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
}

// agents are the agents searched: those with a journal, as q filters them.
func (s *searcher) agents() ([]string, error) {
	all, err := s.j.Agents()
	if err != nil {
		return nil, err
	}
	if len(s.q.Agents) == 0 {
		return all, nil
	}
	return slices.DeleteFunc(all, func(a string) bool { return !slices.Contains(s.q.Agents, a) }), nil
}

// file is agent's journal, opened once per search (so that the index's
// rows and the direct search read the same file).
func (s *searcher) file(agent string) (*journal.File, error) {
	if f, ok := s.files[agent]; ok {
		if f == nil {
			return nil, fs.ErrNotExist
		}
		return f, nil
	}
	f, err := s.j.OpenFile(agent)
	if errors.Is(err, fs.ErrNotExist) {
		s.files[agent] = nil
	}
	if err != nil {
		return nil, err
	}
	s.files[agent] = f
	return f, nil
}

// wanted reports whether r passes q's filters and holds the words.
func (s *searcher) wanted(r journal.Record) bool {
	q := s.q
	switch {
	case len(q.Agents) > 0 && !slices.Contains(q.Agents, r.Agent),
		q.Role != "" && r.Role != q.Role,
		!q.Since.IsZero() && r.At.Before(q.Since),
		!q.Until.IsZero() && !r.At.Before(q.Until):
		return false
	}
	return Matches(r, s.terms)
}

// add makes r a hit, once.
func (s *searcher) add(r journal.Record) {
	if s.got[r.Key] {
		return
	}
	s.got[r.Key] = true
	field, snip := Snippet(r, s.terms)
	s.res.Hits = append(s.res.Hits, Hit{Agent: r.Agent, Role: r.Role, Thread: r.Thread, Key: r.Key, Message: r.Message.ID, From: r.Message.From,
		Attempt: r.Attempt, At: r.At, Field: field, Snippet: snip})
}

// fromIndex takes the hits the index names, each read back from its
// journal line and served only when it is the row's turn and holds the
// words; a stale row's journal is searched directly instead (direct).
// Journals in direct already are not asked of the index.
func (s *searcher) fromIndex(ctx context.Context, db *sql.DB, agents []string, direct map[string]int64) error {
	where := []string{"fts MATCH ?"}
	args := []any{matchExpr(s.terms)}
	if len(s.q.Agents) > 0 {
		where = append(where, "t.agent IN ("+strings.TrimSuffix(strings.Repeat("?,", len(agents)), ",")+")")
		if len(agents) == 0 {
			where[len(where)-1] = "0"
		}
		for _, a := range agents {
			args = append(args, a)
		}
	}
	if s.q.Role != "" {
		where = append(where, "t.role = ?")
		args = append(args, s.q.Role)
	}
	if !s.q.Since.IsZero() {
		// A time key is never below its turn's time: the bound lets
		// the index skip what is older.
		where = append(where, "fts.rowid >= ?", "t.at >= ?")
		args = append(args, s.q.Since.UnixMicro(), s.q.Since.UnixNano())
	}
	if !s.q.Until.IsZero() {
		where = append(where, "t.at < ?")
		args = append(args, s.q.Until.UnixNano())
	}
	rows, err := db.QueryContext(ctx, `SELECT t.key, t.agent, t.thread, t.file, t.off, t.len FROM fts JOIN turns t ON t.id = fts.rowid WHERE `+
		strings.Join(where, " AND ")+` ORDER BY fts.rowid DESC`, args...)
	if err != nil {
		return fmt.Errorf("search the index: %w", err)
	}
	defer rows.Close()
	served := 0
	for rows.Next() && served < s.q.Limit {
		var key, agent, thread, file string
		var off, length int64
		if err := rows.Scan(&key, &agent, &thread, &file, &off, &length); err != nil {
			return fmt.Errorf("search the index: %w", err)
		}
		if _, ok := direct[file]; ok && direct[file] == 0 {
			// Searched whole, directly.
			continue
		}
		r, ok := s.verify(key, agent, thread, file, off, length)
		if !ok {
			// Not the row's turn: its journal is searched directly.
			s.res.Stale++
			direct[file] = 0
			continue
		}
		// A turn whose words are not the query's (a character the
		// index's tokenizer folds otherwise) is not served either.
		if s.wanted(r) {
			s.add(r)
			served++
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("search the index: %w", err)
	}
	return nil
}

// verify reads the journal line a row points at: the record when it is
// the row's turn (key, agent, thread and file agree), ok false when the
// row is stale.
func (s *searcher) verify(key, agent, thread, file string, off, length int64) (journal.Record, bool) {
	if file != journal.FileName(agent) {
		return journal.Record{}, false
	}
	f, err := s.file(agent)
	if err != nil || off+length >= f.Size+1 {
		return journal.Record{}, false
	}
	r, err := f.ReadAt(off, length)
	if err != nil || r.Key != key || r.Agent != agent || r.Thread != thread {
		return journal.Record{}, false
	}
	return r, true
}

// scan searches agent's journal directly from offset from.
func (s *searcher) scan(agent string, from int64) error {
	f, err := s.file(agent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.Scan(from, func(_, _ int64, r journal.Record) error {
		if r.Agent == agent && s.wanted(r) {
			s.add(r)
		}
		return nil
	}, func(sk journal.Skip) { s.res.Skips = append(s.res.Skips, sk) })
	return err
}
