package searchindex

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

var t0 = time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)

func layout(t testing.TB) project.Layout {
	t.Helper()
	return project.Layout{Dir: filepath.Join(t.TempDir(), "state")}
}

// rec is turn n of agent on thread, with body and reply.
func rec(agent, role, thread string, n int, body, reply string) journal.Record {
	return journal.Build(journal.Turn{Agent: agent, Role: role, At: t0.Add(time.Duration(n) * time.Minute),
		Message:  inbox.Message{ID: fmt.Sprintf("m%03d", n), From: "human", Body: body, CreatedAt: t0, Attempt: 1},
		Finished: protocol.TurnFinished{ThreadID: thread, Status: protocol.TurnCompleted, Reply: reply}})
}

func appendAll(t testing.TB, l project.Layout, rs ...journal.Record) {
	t.Helper()
	for _, r := range rs {
		if _, _, err := journal.Append(l, r); err != nil {
			t.Fatal(err)
		}
	}
}

func sync1(t testing.TB, l project.Layout) (*Writer, Stats) {
	t.Helper()
	w, err := Open(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return w, st
}

func search(t testing.TB, l project.Layout, q Query) Result {
	t.Helper()
	res, err := Search(context.Background(), l, q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func keys(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Key+"@"+h.Thread)
	}
	return out
}

// team is a small journal: two agents, three threads.
func team(t testing.TB, l project.Layout) {
	appendAll(t, l,
		rec("alice", "dev", "th-a1", 1, "add the parser for CSV files", "I wrote parser.go"),
		rec("alice", "dev", "th-a1", 2, "now the tests", "tests pass"),
		rec("alice", "dev", "th-a2", 3, "fix the flaky parser test", "the parser test no longer races"),
		rec("bob", "review", "th-b1", 4, "review the parser", "looks fine, one nit in parser.go"),
	)
}

func TestSearch(t *testing.T) {
	l := layout(t)
	team(t, l)
	w, st := sync1(t, l)
	defer w.Close()
	if st.Indexed != 4 {
		t.Fatalf("indexed %d", st.Indexed)
	}
	for _, tc := range []struct {
		name string
		q    Query
		want []string
	}{
		{"newest first", Query{Text: "parser"}, []string{"bob/m004/1@th-b1", "alice/m003/1@th-a2", "alice/m001/1@th-a1"}},
		{"every word", Query{Text: "Parser TEST"}, []string{"alice/m003/1@th-a2"}},
		{"an agent", Query{Text: "parser", Agents: []string{"bob"}}, []string{"bob/m004/1@th-b1"}},
		{"a role", Query{Text: "parser", Role: "dev"}, []string{"alice/m003/1@th-a2", "alice/m001/1@th-a1"}},
		{"since until", Query{Text: "parser", Since: t0.Add(2 * time.Minute), Until: t0.Add(4 * time.Minute)}, []string{"alice/m003/1@th-a2"}},
		{"limit", Query{Text: "parser", Limit: 1}, []string{"bob/m004/1@th-b1"}},
		{"no such word", Query{Text: "zebra"}, nil},
		{"a word of a word is not one", Query{Text: "pars"}, nil},
		{"quotes are words", Query{Text: `"parser" OR NEAR(`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := search(t, l, tc.q)
			if got := keys(res.Hits); !slices.Equal(got, tc.want) {
				t.Errorf("hits %v, want %v", got, tc.want)
			}
			if res.Direct != "" || res.Stale != 0 {
				t.Errorf("direct %q, stale %d", res.Direct, res.Stale)
			}
		})
	}
	h := search(t, l, Query{Text: "races"}).Hits[0]
	if h.Field != FieldReply || !strings.Contains(h.Snippet, "races") || h.From != "human" || h.Message != "m003" {
		t.Errorf("hit %+v", h)
	}
	if _, err := Search(context.Background(), l, Query{Text: " ,; "}); err == nil {
		t.Error("a query of no word searched")
	}
}

// What the daemon has not indexed yet is found in the journal directly.
func TestSearchSeesTheUnindexedEnd(t *testing.T) {
	l := layout(t)
	team(t, l)
	w, _ := sync1(t, l)
	defer w.Close()
	appendAll(t, l, rec("alice", "dev", "th-a2", 5, "the parser again", "done"))
	res := search(t, l, Query{Text: "parser", Agents: []string{"alice"}})
	if got := keys(res.Hits); !slices.Equal(got, []string{"alice/m005/1@th-a2", "alice/m003/1@th-a2", "alice/m001/1@th-a1"}) {
		t.Errorf("hits %v", got)
	}
	if !strings.Contains(res.Direct, "not indexed whole") {
		t.Errorf("direct %q", res.Direct)
	}
	if st, err := w.Sync(context.Background()); err != nil || st.Indexed != 1 || st.Reindexed != 0 {
		t.Errorf("sync %+v %v", st, err)
	}
	if res := search(t, l, Query{Text: "parser"}); res.Direct != "" || len(res.Hits) != 4 {
		t.Errorf("after the sync: direct %q, %d hits", res.Direct, len(res.Hits))
	}
}

// The index deleted: a search reads the journal, the writer makes it again.
func TestIndexDeleted(t *testing.T) {
	l := layout(t)
	team(t, l)
	w, _ := sync1(t, l)
	w.Close()
	if err := os.RemoveAll(filepath.Join(l.Dir, DirName)); err != nil {
		t.Fatal(err)
	}
	res := search(t, l, Query{Text: "parser"})
	if len(res.Hits) != 3 || !strings.Contains(res.Direct, "missing") {
		t.Fatalf("without the index: %v, direct %q", keys(res.Hits), res.Direct)
	}
	w, st := sync1(t, l)
	defer w.Close()
	if st.Indexed != 4 {
		t.Errorf("rebuilt with %d turns", st.Indexed)
	}
	if res := search(t, l, Query{Text: "parser"}); len(res.Hits) != 3 || res.Direct != "" {
		t.Errorf("rebuilt: %v, direct %q", keys(res.Hits), res.Direct)
	}
}

// The index corrupt: a search reads the journal, the writer starts it afresh.
func TestIndexCorrupt(t *testing.T) {
	for name, corrupt := range map[string]func(p string) error{
		"garbage": func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("not a database ", 500)), 0o600) },
		"pages overwritten": func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte(strings.Repeat("\xff", 8192)), 4096)
			return err
		},
		"other schema": func(p string) error {
			db, err := sql.Open("sqlite", p)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.Exec(`UPDATE meta SET v = '99' WHERE k = 'schema'`)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := layout(t)
			team(t, l)
			w, _ := sync1(t, l)
			w.Close()
			if err := corrupt(Path(l)); err != nil {
				t.Fatal(err)
			}
			res, err := Search(context.Background(), l, Query{Text: "parser"})
			if err != nil || len(res.Hits) != 3 {
				t.Fatalf("with a corrupt index: %v %v (direct %q)", keys(res.Hits), err, res.Direct)
			}
			w, err = Open(context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if w.Rebuilt == "" {
				t.Error("a corrupt index was not started afresh")
			}
			if st, err := w.Sync(context.Background()); err != nil || st.Indexed != 4 {
				t.Fatalf("sync %+v %v", st, err)
			}
			if res := search(t, l, Query{Text: "parser"}); len(res.Hits) != 3 || res.Direct != "" {
				t.Errorf("rebuilt: %v, direct %q", keys(res.Hits), res.Direct)
			}
		})
	}
}

// A row that points at another thread's record is never served: the
// journal is searched directly instead, and the right turn found.
func TestStaleRowNotServed(t *testing.T) {
	l := layout(t)
	team(t, l)
	w, _ := sync1(t, l)
	// alice's m003 row (thread th-a2) made to point at m001's line
	// (thread th-a1), which holds "parser" too.
	if _, err := w.db.Exec(`UPDATE turns SET off = (SELECT off FROM turns WHERE key = 'alice/m001/1'), len = (SELECT len FROM turns WHERE key = 'alice/m001/1') WHERE key = 'alice/m003/1'`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	res := search(t, l, Query{Text: "parser"})
	if got := keys(res.Hits); !slices.Equal(got, []string{"bob/m004/1@th-b1", "alice/m003/1@th-a2", "alice/m001/1@th-a1"}) {
		t.Errorf("hits %v", got)
	}
	if res.Stale != 1 || !strings.Contains(res.Direct, "stale") {
		t.Errorf("stale %d, direct %q", res.Stale, res.Direct)
	}
	// A row naming a key whose line now says something else.
	w, _ = sync1(t, l)
	if _, err := w.db.Exec(`UPDATE turns SET thread = 'th-other' WHERE key = 'bob/m004/1'`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	res = search(t, l, Query{Text: "nit"})
	if got := keys(res.Hits); !slices.Equal(got, []string{"bob/m004/1@th-b1"}) || res.Stale != 1 {
		t.Errorf("hits %v, stale %d", got, res.Stale)
	}
}

// Records moved: a journal rewritten (another file in its place, or the
// same file with its lines in another order) is searched directly until
// the writer indexes it again.
func TestRecordsMoved(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		t.Run(fmt.Sprint("in place ", inPlace), func(t *testing.T) {
			l := layout(t)
			team(t, l)
			w, _ := sync1(t, l)
			defer w.Close()
			p := filepath.Join(l.Dir, journal.DirName, "alice.jsonl")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			// The first line kept first (the head the index knows),
			// the others reversed: same size, lines moved.
			slices.Reverse(lines[1:])
			moved := strings.Join(lines, "\n") + "\n"
			if len(moved) != len(b) {
				t.Fatalf("moved %d bytes, had %d", len(moved), len(b))
			}
			if inPlace {
				err = os.WriteFile(p, []byte(moved), 0o600)
			} else {
				tmp := p + ".new"
				if err = os.WriteFile(tmp, []byte(moved), 0o600); err == nil {
					err = os.Rename(tmp, p)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			res := search(t, l, Query{Text: "parser"})
			if got := keys(res.Hits); !slices.Equal(got, []string{"bob/m004/1@th-b1", "alice/m003/1@th-a2", "alice/m001/1@th-a1"}) {
				t.Errorf("hits %v", got)
			}
			if res.Direct == "" {
				t.Error("moved records served from the index")
			}
			st, err := w.Sync(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !inPlace && st.Reindexed != 1 {
				t.Errorf("sync after a replaced journal: %+v", st)
			}
		})
	}
}

// Many readers and the writer at once: no "database is locked".
func TestReadersAndWriter(t *testing.T) {
	l := layout(t)
	team(t, l)
	w, _ := sync1(t, l)
	defer w.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				res, err := Search(ctx, l, Query{Text: "parser"})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Hits) < 3 {
					errs <- fmt.Errorf("%d hits", len(res.Hits))
					return
				}
			}
		}()
	}
	for i := 0; i < 40; i++ {
		appendAll(t, l, rec("carol", "dev", "th-c", 10+i, "parser number", "ok"))
		if _, err := w.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// With the daemon stopped the index is read as its last writer left it.
func TestReadAfterWriterClosed(t *testing.T) {
	l := layout(t)
	team(t, l)
	w, _ := sync1(t, l)
	w.Close()
	for _, n := range []string{FileName + "-wal", FileName + "-shm"} {
		if _, err := os.Stat(filepath.Join(l.Dir, DirName, n)); err == nil {
			t.Logf("%s left", n)
		}
	}
	res := search(t, l, Query{Text: "parser"})
	if len(res.Hits) != 3 || res.Direct != "" {
		t.Errorf("hits %v, direct %q", keys(res.Hits), res.Direct)
	}
	st, err := os.Stat(Path(l))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("database mode %v %v", st.Mode(), err)
	}
}

func TestIndexRefusesALink(t *testing.T) {
	l := layout(t)
	team(t, l)
	if err := os.MkdirAll(filepath.Join(l.Dir, DirName), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim.db")
	os.WriteFile(victim, nil, 0o600)
	os.Symlink(victim, Path(l))
	if _, err := Open(context.Background(), l); err == nil {
		t.Fatal("opened through a link")
	}
	if b, _ := os.ReadFile(victim); len(b) != 0 {
		t.Error("the link's target was written")
	}
	// A search does not use it, and still answers.
	if res := search(t, l, Query{Text: "parser"}); len(res.Hits) != 3 || res.Direct == "" {
		t.Errorf("hits %v, direct %q", keys(res.Hits), res.Direct)
	}
}
