package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/textclip"
)

// TestHundredRowsAtConcurrency64 runs 100 rows on 64 real shims: every row
// is done, on a thread of its own, and the output keeps the input order.
func TestHundredRowsAtConcurrency64(t *testing.T) {
	r := newRig(t, rows(100, func(i int) string { return fmt.Sprintf("n%03d", i) }), "row {id} {name} replyjson")
	r.opts.Concurrency = 64
	s := r.run(context.Background(), nil)
	if !s.Complete() || s.AllDone != 100 || s.Done != 100 {
		t.Fatalf("summary %+v, want 100 done", s)
	}
	if r.spawns.Load() > 64 {
		t.Errorf("%d workers started, want at most 64", r.spawns.Load())
	}
	recs := r.output()
	threads := map[string]bool{}
	for i, rec := range recs {
		if rec.Row != i || rec.Values[0] != fmt.Sprint(i+1) || rec.Status != StatusDone {
			t.Fatalf("output line %d: %+v", i+2, rec)
		}
		var res map[string]string
		if err := json.Unmarshal([]byte(rec.Result), &res); err != nil || res["row"] != fmt.Sprintf("row %d n%03d replyjson", i+1, i+1) {
			t.Errorf("row %d: result %s (%v)", i+1, rec.Result, err)
		}
		if threads[rec.ThreadID] || rec.ThreadID == "" {
			t.Errorf("row %d: thread %q is not a fresh one", i+1, rec.ThreadID)
		}
		threads[rec.ThreadID] = true
		if rec.Tokens != 1010 {
			t.Errorf("row %d: %d tokens, want 1010", i+1, rec.Tokens)
		}
	}
	if len(recs) != 100 {
		t.Fatalf("%d rows in the output, want 100", len(recs))
	}
	runs := r.codexRuns()
	if len(runs) != 100 {
		t.Errorf("%d codex runs, want 100", len(runs))
	}
	for _, l := range runs {
		if f := strings.Fields(l); len(f) < 2 || f[1] != "new" {
			t.Errorf("codex run %q resumed a thread: every row needs a fresh one", l)
		}
	}
	// A rerun of a finished job runs nothing.
	s = r.run(context.Background(), nil)
	if !s.Complete() || s.Skipped != 100 || len(r.codexRuns()) != 100 {
		t.Errorf("rerun: summary %+v, %d codex runs; want everything skipped", s, len(r.codexRuns()))
	}
}

// runsOf counts the codex runs of message id (row-N).
func runsOf(runs []string, id string) int {
	n := 0
	for _, l := range runs {
		if strings.Contains(l, "--- batty message "+id+" ") {
			n++
		}
	}
	return n
}

// TestTransientFailuresAreRetried: a server error is retried with a
// fresh thread up to the attempts allowed; a row failing every time is
// recorded failed with its error.
func TestTransientFailuresAreRetried(t *testing.T) {
	r := newRig(t, "id,sc\n1,flaky:1\n2,flaky:9\n", "{id} scenario:{sc} replyjson")
	s := r.run(context.Background(), nil)
	recs := r.output()
	if recs[0].Status != StatusDone || !strings.Contains(recs[0].Result, "RECOVERED") {
		t.Errorf("row 1: %+v, want done after a retry", recs[0])
	}
	if recs[1].Status != StatusFailed || !strings.Contains(recs[1].Error, "after 3 attempts") || !strings.Contains(recs[1].Error, "high demand") {
		t.Errorf("row 2: %+v, want failed after 3 attempts", recs[1])
	}
	runs := r.codexRuns()
	if n := runsOf(runs, "row-1"); n != 2 {
		t.Errorf("row 1 ran %d times, want 2", n)
	}
	if n := runsOf(runs, "row-2"); n != 3 {
		t.Errorf("row 2 ran %d times, want 3", n)
	}
	if s.Complete() || s.AllFailed != 1 {
		t.Errorf("summary %+v", s)
	}
}

// TestReplyThatIsNotJSONFailsTheRow: the row is failed with the reason,
// not retried.
func TestReplyThatIsNotJSONFailsTheRow(t *testing.T) {
	r := newRig(t, "id\n1\n", "{id} scenario:text")
	s := r.run(context.Background(), nil)
	recs := r.output()
	if recs[0].Status != StatusFailed || !strings.Contains(recs[0].Error, "reply is not a JSON object") {
		t.Errorf("row 1: %+v", recs[0])
	}
	if s.Complete() || len(r.codexRuns()) != 1 {
		t.Errorf("summary %+v, %d runs", s, len(r.codexRuns()))
	}
}

// snapshots records every Snapshot a job reports and closes a channel the
// first time cond holds.
type snapshots struct {
	mu   sync.Mutex
	all  []Snapshot
	cond func(Snapshot) bool
	hit  chan struct{}
	once sync.Once
}

func watch(cond func(Snapshot) bool) *snapshots {
	return &snapshots{cond: cond, hit: make(chan struct{})}
}

func (w *snapshots) update(s Snapshot) {
	w.mu.Lock()
	w.all = append(w.all, s)
	w.mu.Unlock()
	if w.cond != nil && w.cond(s) {
		w.once.Do(func() { close(w.hit) })
	}
}

func (w *snapshots) any(f func(Snapshot) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.all {
		if f(s) {
			return true
		}
	}
	return false
}

// TestQuotaPausesNewRowsAndResumes: a usage limit sends the row back to
// pending and holds new rows until the reset; one row then probes, and
// the job goes on by itself.
func TestQuotaPausesNewRowsAndResumes(t *testing.T) {
	past := time.Now().Add(-2 * time.Minute).Unix()
	r := newRig(t, fmt.Sprintf("id,sc\n1,quota:%d\n2,text\n3,text\n", past), "{id} scenario:{sc} replyjson")
	r.opts.Concurrency = 1
	w := watch(nil)
	r.opts.Progress = w.update
	s := r.run(context.Background(), nil)
	if !s.Complete() {
		t.Fatalf("summary %+v, want every row done", s)
	}
	if !w.any(func(s Snapshot) bool { return !s.PausedUntil.IsZero() && !s.Probing }) || !w.any(func(s Snapshot) bool { return s.Probing }) {
		t.Error("the progress never showed the pause and the probe")
	}
	runs := r.codexRuns()
	if runsOf(runs, "row-1") != 2 || runsOf(runs, "row-2") != 1 || runsOf(runs, "row-3") != 1 {
		t.Errorf("codex runs %q: want row 1 twice (the limit, then the probe), the others once", runs)
	}
	// Nothing started during the pause: the probe (row 1 again) ran
	// before rows 2 and 3.
	if !strings.Contains(runs[1], "row-1") {
		t.Errorf("second codex run %q, want the probe of row 1", runs[1])
	}
	if rec := r.output()[0]; rec.Status != StatusDone || !strings.Contains(rec.Result, "AFTER_QUOTA") {
		t.Errorf("row 1: %+v", rec)
	}
}

// TestBudgetStopsStartingRows: once the recorded tokens reach
// --max-tokens no row starts; a rerun continues with the rest.
func TestBudgetStopsStartingRows(t *testing.T) {
	r := newRig(t, rows(6, func(int) string { return "x" }), "{id} scenario:usage:500 replyjson")
	r.opts.Concurrency = 1
	r.opts.MaxTokens = 1000
	s := r.run(context.Background(), nil)
	if s.Complete() || s.AllDone != 2 || s.Pending != 4 || !strings.Contains(s.Stopping, "--max-tokens 1000") || s.Tokens != 1200 {
		t.Fatalf("summary %+v, want 2 done (600 tokens each), then stopped by the budget", s)
	}
	r.opts.MaxTokens = 0
	s = r.run(context.Background(), nil)
	if !s.Complete() || s.Skipped != 2 || len(r.codexRuns()) != 6 {
		t.Errorf("rerun: summary %+v, %d codex runs; want the 4 left run", s, len(r.codexRuns()))
	}
}

// TestInterruptKeepsFinishedRows: cancelling the job stops starting rows,
// running turns past the grace are interrupted and stay pending, finished
// rows are kept, nothing is left running; a rerun runs only the rest.
func TestInterruptKeepsFinishedRows(t *testing.T) {
	r := newRig(t, "id,sc\n1,text\n2,text\n3,sleepms:60000\n4,sleepms:60000\n5,text\n6,text\n", "{id} scenario:{sc} replyjson")
	r.opts.Concurrency = 4
	r.opts.Grace = 100 * time.Millisecond
	w := watch(func(s Snapshot) bool { return s.Done >= 3 })
	r.opts.Progress = w.update
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-w.hit:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	s := r.run(ctx, nil)
	if s.Stopping != "interrupted" || s.AllDone < 3 || s.AllDone > 4 {
		t.Fatalf("summary %+v, want interrupted with 3 or 4 rows done", s)
	}
	for _, rec := range r.output() {
		if rec.Row == 2 || rec.Row == 3 {
			t.Errorf("row %d: %+v, want pending (interrupted)", rec.Row+1, rec)
		}
	}
	before := len(r.codexRuns())
	// The rerun: the slow rows are quick now (same input values).
	r.shims.Config.Env = append(r.shims.Config.Env, "X=1")
	r.opts.Template, _ = ParseTemplate("{id} scenario:text replyjson", r.table.Columns)
	s = r.run(context.Background(), nil)
	if !s.Complete() || s.Done != 6-s.Skipped {
		t.Errorf("rerun: %+v", s)
	}
	if got := len(r.codexRuns()) - before; got != 6-s.Skipped || s.Skipped < 3 {
		t.Errorf("rerun ran codex %d times with %d rows skipped", got, s.Skipped)
	}
}

// TestRowTooLongForCodexFailsWithoutATurn: a row whose instruction is
// longer than codex takes is failed at once, naming the limit, with no
// codex run and no retry; the other rows run.
func TestRowTooLongForCodexFailsWithoutATurn(t *testing.T) {
	long := strings.Repeat("é", codex.MaxBodyChars)
	r := newRig(t, "id,text\n1,short\n2,"+long+"\n3,short\n", "{id} {text} replyjson")
	s := r.run(context.Background(), nil)
	recs := r.output()
	if len(recs) != 3 || recs[0].Status != StatusDone || recs[2].Status != StatusDone {
		t.Fatalf("records %+v", recs)
	}
	if recs[1].Status != StatusFailed || !strings.Contains(recs[1].Error, "maximum length of") || !strings.Contains(recs[1].Error, "too long") {
		t.Errorf("row 2: %s %q", recs[1].Status, textclip.Bytes(recs[1].Error, 300+len(textclip.Ellipsis), textclip.Ellipsis))
	}
	if n := len(r.codexRuns()); n != 2 || s.Done != 2 || s.Failed != 1 {
		t.Errorf("%d codex runs, summary %+v; want 2 runs, 2 done, 1 failed", n, s.Snapshot)
	}
}

// TestBudgetCountsTheJobsRecordedUsage: --max-tokens bounds the job, not
// one run of it: a rerun with the same budget starts nothing once the
// output records that many tokens, and one with a higher budget goes on
// until the job's total reaches it.
func TestBudgetCountsTheJobsRecordedUsage(t *testing.T) {
	r := newRig(t, rows(6, func(int) string { return "x" }), "{id} scenario:usage:500 replyjson")
	r.opts.Concurrency = 1
	r.opts.MaxTokens = 1000
	if s := r.run(context.Background(), nil); s.AllDone != 2 || !s.Budget {
		t.Fatalf("first run: summary %+v, want 2 done (600 tokens each), then stopped by the budget", s)
	}
	s := r.run(context.Background(), nil)
	if s.AllDone != 2 || s.Done != 0 || !s.Budget || s.PriorTokens != 1200 || !strings.Contains(s.Stopping, "1200 tokens recorded for this job") {
		t.Errorf("rerun with the same budget: summary %+v, want nothing started", s)
	}
	if !strings.Contains(SummaryLine(s, "out.csv"), "higher --max-tokens") {
		t.Errorf("summary line %q does not say how to go on", SummaryLine(s, "out.csv"))
	}
	r.opts.MaxTokens = 2500
	if s := r.run(context.Background(), nil); s.AllDone != 5 || s.Done != 3 || !s.Budget {
		t.Errorf("rerun with 2500: summary %+v, want 3 more rows (1200 + 3·600 ≥ 2500)", s)
	}
	if n := len(r.codexRuns()); n != 5 {
		t.Errorf("%d codex runs, want 5", n)
	}
}

// usageWorker is an in-process worker whose turns of a row use tokens and
// fail in a way that is retried until the row's last attempt.
type usageWorker struct{ attempts map[string]int }

func (w usageWorker) Run(t Turn, _, _ <-chan struct{}, _ time.Duration) (Outcome, error) {
	w.attempts[t.ID]++
	var o Outcome
	o.MessageID, o.Usage = t.ID, protocol.Usage{Input: 100, Output: 10}
	if w.attempts[t.ID] < 3 {
		o.Status = protocol.TurnTimedOut
		return o, nil
	}
	o.Status, o.Reply = protocol.TurnCompleted, `{"ok":true}`
	return o, nil
}

func (usageWorker) Close(<-chan struct{}) {}

// TestRowRecordsTheTokensOfEveryAttempt: a row that took three attempts
// records the tokens of all three, so the output's tokens column adds up
// to what the job used.
func TestRowRecordsTheTokensOfEveryAttempt(t *testing.T) {
	tb := table(t, "id\n1\n")
	tmpl, _ := ParseTemplate("{id}", tb.Columns)
	st, err := OpenStore(filepath.Join(t.TempDir(), "out.csv"), tb)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := usageWorker{attempts: map[string]int{}}
	s, err := Run(context.Background(), nil, Options{Table: tb, Template: tmpl, Store: st, Concurrency: 1,
		RetryBase: time.Millisecond, RetryMax: time.Millisecond, NewWorker: func(int, int) (Worker, error) { return w, nil }})
	if err != nil || !s.Complete() || s.Tokens != 330 {
		t.Fatalf("summary %+v, %v", s, err)
	}
	if r, _ := st.Prior(0); r.Tokens != 330 {
		t.Errorf("row 1 records %d tokens, want 330 (3 attempts of 110)", r.Tokens)
	}
}

// TestQuotaPauseAtConcurrency64ProbesWithOneRow: 64 rows hit a usage limit
// at once; while it holds, one row at a time tries whether it has lifted
// (no storm of 64 retries per probe), and once it has every row is done.
func TestQuotaPauseAtConcurrency64ProbesWithOneRow(t *testing.T) {
	until := time.Now().Add(1500 * time.Millisecond).UnixNano()
	r := newRig(t, rows(100, func(int) string { return "x" }), fmt.Sprintf("{id} scenario:quotauntil:%d replyjson", until))
	r.opts.Concurrency = 64
	s := r.run(context.Background(), nil)
	if !s.Complete() {
		t.Fatalf("summary %+v, want every row done", s)
	}
	// Rows started before the first limit came back hit it too (at most
	// the first 64); after that one row per probe.
	runs := r.codexRuns()
	if len(runs) > 100+64+8 {
		t.Errorf("%d codex runs for 100 rows: a retry storm", len(runs))
	}
}
