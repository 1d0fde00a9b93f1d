package fanout

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkFanout100Rows64 runs 100 rows at concurrency 64 on real shims
// whose fake codex takes 1 s per row, and reports the wall time and its
// ratio to the ideal: ceil(100/64) rounds of 1 s.
func BenchmarkFanout100Rows64(b *testing.B) {
	const rowsN, conc, perRow = 100, 64, time.Second
	ideal := time.Duration(math.Ceil(float64(rowsN)/conc)) * perRow
	var wall time.Duration
	for range b.N {
		b.StopTimer()
		r := newRig(b, rows(rowsN, func(int) string { return "x" }), "{id} scenario:slow:1 replyjson")
		r.opts.Concurrency = conc
		os.Remove(r.out)
		b.StartTimer()
		t0 := time.Now()
		s := r.run(context.Background(), nil)
		wall += time.Since(t0)
		if !s.Complete() {
			b.Fatalf("summary %+v", s)
		}
	}
	w := wall / time.Duration(b.N)
	b.ReportMetric(w.Seconds(), "wall-s")
	b.ReportMetric(float64(w)/float64(ideal), "x-ideal")
}

// sleepWorker is an in-process worker whose every turn takes d and answers
// a JSON object: no processes, so only the scheduling and the recording
// are measured.
type sleepWorker struct{ d time.Duration }

func (w sleepWorker) Run(t Turn, stop, kill <-chan struct{}, _ time.Duration) (Outcome, error) {
	select {
	case <-time.After(w.d):
	case <-kill:
	}
	var o Outcome
	o.MessageID, o.Status, o.Reply = t.ID, "completed", `{"ok":true}`
	return o, nil
}

func (sleepWorker) Close(<-chan struct{}) {}

// BenchmarkFanout100Rows64Engine is BenchmarkFanout100Rows64 with an
// in-process worker instead of shims and codex processes: the engine's own
// overhead (scheduling, the journal's fsyncs, the output file).
func BenchmarkFanout100Rows64Engine(b *testing.B) {
	const rowsN, conc, perRow = 100, 64, time.Second
	ideal := time.Duration(math.Ceil(float64(rowsN)/conc)) * perRow
	var wall time.Duration
	for range b.N {
		b.StopTimer()
		tb, err := ReadTable(strings.NewReader(rows(rowsN, func(int) string { return "x" })))
		if err != nil {
			b.Fatal(err)
		}
		tmpl, _ := ParseTemplate("{id}", tb.Columns)
		st, err := OpenStore(filepath.Join(b.TempDir(), "out.csv"), tb)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		s, err := Run(context.Background(), nil, Options{Table: tb, Template: tmpl, Store: st, Concurrency: conc,
			NewWorker: func(int, int) (Worker, error) { return sleepWorker{perRow}, nil }})
		if err == nil {
			err = st.Close()
		}
		wall += time.Since(t0)
		if err != nil || !s.Complete() {
			b.Fatalf("summary %+v, %v", s, err)
		}
	}
	w := wall / time.Duration(b.N)
	b.ReportMetric(w.Seconds(), "wall-s")
	b.ReportMetric(float64(w)/float64(ideal), "x-ideal")
}

// BenchmarkFanoutEngineLongInput runs an input of 100,000 rows on in-process
// workers that answer at once, and reports the engine's cost per row: it
// must not grow with the length of the input (no pass over the rows still
// to run per started row).
func BenchmarkFanoutEngineLongInput(b *testing.B) {
	const rowsN = 100_000
	tb, err := ReadTable(strings.NewReader(rows(rowsN, func(int) string { return "x" })))
	if err != nil {
		b.Fatal(err)
	}
	tmpl, _ := ParseTemplate("{id}", tb.Columns)
	var wall time.Duration
	for range b.N {
		b.StopTimer()
		st, err := OpenStore(filepath.Join(b.TempDir(), "out.csv"), tb)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		s, err := Run(context.Background(), nil, Options{Table: tb, Template: tmpl, Store: st, Concurrency: 64,
			NewWorker: func(int, int) (Worker, error) { return sleepWorker{0}, nil }})
		if err == nil {
			err = st.Close()
		}
		wall += time.Since(t0)
		if err != nil || !s.Complete() {
			b.Fatalf("summary %+v, %v", s, err)
		}
	}
	b.ReportMetric(float64(wall.Microseconds())/float64(b.N*rowsN), "µs/row")
}
