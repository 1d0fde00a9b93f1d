package searchindex

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

// vocabulary is a synthetic vocabulary of n words drawn by a Zipf law, as
// words of text are: a few very common, most rare.
type vocabulary struct {
	words []string
	zipf  *rand.Zipf
}

func newVocabulary(r *rand.Rand, n int) *vocabulary {
	v := &vocabulary{zipf: rand.NewZipf(r, 1.1, 1, uint64(n-1))}
	syll := []string{"ka", "lo", "mi", "ne", "ru", "ta", "vo", "se", "di", "po", "gu", "fe", "ba", "xi", "zo", "he"}
	for i := range n {
		var b strings.Builder
		for k := i; ; k /= len(syll) {
			b.WriteString(syll[k%len(syll)])
			if k < len(syll) {
				break
			}
		}
		b.WriteString(fmt.Sprint(i % 7))
		v.words = append(v.words, b.String())
	}
	return v
}

func (v *vocabulary) text(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = v.words[v.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// synthetic writes a journal of agents × threads × turns turns (each a
// 20-word message, a 60-word reply and a command with 15 words of output)
// straight into the journal files, as Append would but without an fsync
// per line, and returns the vocabulary.
func synthetic(tb testing.TB, l project.Layout, agents, threads, turns int) *vocabulary {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	v := newVocabulary(r, 50_000)
	dir := filepath.Join(l.Dir, journal.DirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	exit := 0
	for a := range agents {
		agent := fmt.Sprintf("agent-%03d", a)
		f, err := os.OpenFile(filepath.Join(dir, journal.FileName(agent)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			tb.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		n := 0
		for th := range threads {
			thread := fmt.Sprintf("0199%04x-%04x-7000-8000-%012x", a, th, a*threads+th)
			for k := range turns {
				at := t0.Add(time.Duration(n)*time.Minute + time.Duration(a)*time.Second)
				rec := journal.Build(journal.Turn{Agent: agent, Role: fmt.Sprintf("role-%d", a%5), At: at,
					Message:  inbox.Message{ID: fmt.Sprintf("m%07d-%d", n, k), From: "human", Body: v.text(20), CreatedAt: at, Attempt: 1},
					Finished: protocol.TurnFinished{ThreadID: thread, Status: protocol.TurnCompleted, Reply: v.text(60), Duration: 30 * time.Second},
					Commands: []journal.Command{{Command: "go test ./" + v.words[r.IntN(1000)], Output: v.text(15), ExitCode: &exit}}})
				line, err := journal.Encode(rec)
				if err != nil {
					tb.Fatal(err)
				}
				w.Write(line)
				w.WriteByte('\n')
				n++
			}
		}
		if err := w.Flush(); err != nil {
			tb.Fatal(err)
		}
		f.Close()
	}
	return v
}

// dirSize is the bytes of the regular files in dir.
func dirSize(tb testing.TB, dir string) int64 {
	var n int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// searchQueries is how many queries a run of BenchmarkSearch times.
const searchQueries = 300

// indexTurns is how many turns a run of BenchmarkIndexTurn appends.
const indexTurns = 500

// BenchmarkSearch searches a synthetic team's journal through the index:
// 10,000 turns (10 agents × 100 threads × 10 turns) and 1,000,000 (100 ×
// 1,000 × 10). The journal is written and indexed once (build-s: the index
// built from the journal, as the daemon rebuilds a missing one), then a mix
// of queries — a rare word, a word of about one turn in a thousand, a
// common word, two words, each alone and with an agent, a role or a time
// filter — is timed one query at a time; p50 and p95 per query.
func BenchmarkSearch(b *testing.B) {
	for _, size := range []struct {
		name                   string
		agents, threads, turns int
	}{{"10k-turns", 10, 100, 10}, {"1M-turns", 100, 1000, 10}} {
		b.Run(size.name, func(b *testing.B) {
			l := project.Layout{Dir: filepath.Join(b.TempDir(), "state")}
			v := synthetic(b, l, size.agents, size.threads, size.turns)
			start := time.Now()
			w, err := Open(context.Background(), l)
			if err != nil {
				b.Fatal(err)
			}
			st, err := w.Sync(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			build := time.Since(start)
			total := size.agents * size.threads * size.turns
			if st.Indexed != total {
				b.Fatalf("indexed %d of %d", st.Indexed, total)
			}
			r := rand.New(rand.NewPCG(3, 4))
			since := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(total/size.agents/2) * time.Minute)
			queries := func(i int) Query {
				// Rank 5,000 and beyond: rare; about 100: one turn in a
				// thousand; below 10: common.
				word := []string{v.words[5000+r.IntN(40_000)], v.words[80+r.IntN(40)], v.words[2+r.IntN(8)]}[i%3]
				q := Query{Text: word}
				switch i / 3 % 5 {
				case 1:
					q.Text += " " + v.words[10+r.IntN(20)]
				case 2:
					q.Agents = []string{fmt.Sprintf("agent-%03d", r.IntN(size.agents))}
				case 3:
					q.Role = fmt.Sprintf("role-%d", r.IntN(5))
				case 4:
					q.Since = since
				}
				return q
			}
			// A fixed number of queries, whatever b.N (run it with
			// -benchtime 1x: the build is what takes the time).
			var lat []time.Duration
			b.ResetTimer()
			for i := range searchQueries {
				q := queries(i % 30)
				t := time.Now()
				if _, err := Search(context.Background(), l, q); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(float64(len(lat)), "queries")
			b.ReportMetric(build.Seconds(), "build-s")
			b.ReportMetric(float64(total), "turns")
			b.ReportMetric(float64(dirSize(b, filepath.Join(l.Dir, DirName)))/float64(total)*1000/(1<<20), "index-MB-per-1000-turns")
			b.ReportMetric(float64(dirSize(b, filepath.Join(l.Dir, journal.DirName)))/float64(total)*1000/(1<<20), "journal-MB-per-1000-turns")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkIndexTurn is what a turn costs the daemon: its journal line
// appended (fsynced) and the index brought up to it (SyncAgent), on an
// index of 10,000 turns of 10 agents: with a sync after every turn, and
// with one after every 10 turns (the writer's loop syncs at most once a
// second, so under load a sync takes several turns at once); the figures
// are per turn.
func BenchmarkIndexTurn(b *testing.B) {
	for _, every := range []int{1, 10} {
		b.Run(fmt.Sprintf("sync-every-%d", every), func(b *testing.B) {
			l := project.Layout{Dir: filepath.Join(b.TempDir(), "state")}
			v := synthetic(b, l, 10, 100, 10)
			w, err := Open(context.Background(), l)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if _, err := w.Sync(context.Background()); err != nil {
				b.Fatal(err)
			}
			t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
			var appendT, syncT time.Duration
			b.ResetTimer()
			// A fixed number of turns, whatever b.N.
			const n = indexTurns
			for i := range n {
				rec := journal.Build(journal.Turn{Agent: "agent-000", Role: "dev", At: t0.Add(time.Duration(i) * time.Second),
					Message:  inbox.Message{ID: fmt.Sprintf("bench-%d", i), From: "human", Body: v.text(20), CreatedAt: t0, Attempt: 1},
					Finished: protocol.TurnFinished{ThreadID: "0199-bench", Status: protocol.TurnCompleted, Reply: v.text(60)}})
				t := time.Now()
				if _, _, err := journal.Append(l, rec); err != nil {
					b.Fatal(err)
				}
				appendT += time.Since(t)
				if (i+1)%every != 0 && i != n-1 {
					continue
				}
				u := time.Now()
				if _, err := w.SyncAgent(context.Background(), "agent-000"); err != nil {
					b.Fatal(err)
				}
				syncT += time.Since(u)
			}
			b.ReportMetric(float64(appendT.Microseconds())/n/1000, "append-ms/turn")
			b.ReportMetric(float64(syncT.Microseconds())/n/1000, "index-ms/turn")
			b.ReportMetric(n, "turns")
			b.ReportMetric(0, "ns/op")
		})
	}
}
