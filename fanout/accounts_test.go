package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/retry"
)

// TestPick: rows start on the first account that is open or whose pause
// has run out with no probe in flight; otherwise none, waking when the
// earliest pause runs out.
func TestPick(t *testing.T) {
	now := time.Now()
	open := accountState{probe: -1}
	paused := func(d time.Duration) accountState { return accountState{pausedUntil: now.Add(d), probe: -1} }
	probing := func(d time.Duration) accountState { return accountState{pausedUntil: now.Add(d), probe: 7} }
	cases := []struct {
		name  string
		accts []accountState
		want  int
		wake  time.Duration // from now; -1: zero
	}{
		{"one open", []accountState{open}, 0, -1},
		{"one paused", []accountState{paused(time.Minute)}, -1, time.Minute},
		{"one pause ran out: its probe", []accountState{paused(-time.Second)}, 0, -1},
		{"one pause ends now: its probe", []accountState{paused(0)}, 0, -1},
		{"one probing", []accountState{probing(-time.Second)}, -1, -1},
		{"preferred open", []accountState{open, open}, 0, -1},
		{"preferred paused: the next", []accountState{paused(time.Minute), open}, 1, -1},
		{"preferred probing: the next", []accountState{probing(-time.Second), open}, 1, -1},
		{"preferred's pause ran out: back to it", []accountState{paused(-time.Second), open}, 0, -1},
		{"first two paused: the third", []accountState{paused(time.Minute), paused(time.Hour), open}, 2, -1},
		{"every account paused: the earliest", []accountState{paused(time.Hour), paused(time.Minute)}, -1, time.Minute},
		{"every account paused, the earliest probing", []accountState{probing(-time.Second), paused(time.Hour)}, -1, time.Hour},
		{"every account probing", []accountState{probing(-time.Second), probing(-time.Second)}, -1, -1},
		{"second's pause ran out, first paused", []accountState{paused(time.Hour), paused(-time.Second)}, 1, -1},
	}
	for _, c := range cases {
		got, wake := pick(c.accts, now)
		want := time.Time{}
		if c.wake >= 0 {
			want = now.Add(c.wake)
		}
		if got != c.want || !wake.Equal(want) {
			t.Errorf("%s: pick = %d, %v; want %d, %v", c.name, got, wake, c.want, want)
		}
	}
}

// accountRig is a rig whose workers run on two accounts, work and spare,
// each a CODEX_HOME of its own; the fake codex's account scenario hits
// a usage limit on a home holding a file named exhausted.
func accountRig(t *testing.T, n int, instruction string) (r *rig, work, spare string) {
	r = newRig(t, rows(n, func(int) string { return "x" }), instruction)
	work, spare = filepath.Join(r.dir, "work"), filepath.Join(r.dir, "spare")
	for _, d := range []string{work, spare} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "exhausted"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.opts.Accounts = []string{"work", "spare"}
	r.shims.Homes = []string{work, spare}
	return r, work, spare
}

// homeOf is the CODEX_HOME a done row of the account scenario ran with.
func homeOf(t *testing.T, rec Record) string {
	t.Helper()
	var res map[string]string
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		t.Fatalf("row %d: result %q: %v", rec.Row+1, rec.Result, err)
	}
	home, ok := strings.CutPrefix(res["reply"], "HOME:")
	if !ok {
		t.Fatalf("row %d: reply %q names no home", rec.Row+1, res["reply"])
	}
	return home
}

// TestAccountsGoOnOnTheNextAccount: with the preferred account exhausted
// the rows go on on the next one, without a pause: every row is done once,
// on the second account's CODEX_HOME; the rows that hit the limit ran
// again there, their attempts not counted.
func TestAccountsGoOnOnTheNextAccount(t *testing.T) {
	r, _, spare := accountRig(t, 12, "{id} scenario:account replyjson")
	r.opts.Concurrency = 2
	r.opts.MaxAttempts = 1 // a limit counted as an attempt would fail the row
	w := watch(nil)
	r.opts.Progress = w.update
	s := r.run(bounded(t), nil)
	if !s.Complete() || s.Done != 12 || s.Failed != 0 {
		t.Fatalf("summary %+v, want 12 rows done, each recorded once", s)
	}
	recs := r.output()
	if len(recs) != 12 {
		t.Fatalf("%d rows in the output, want 12", len(recs))
	}
	for _, rec := range recs {
		if rec.Status != StatusDone {
			t.Fatalf("row %d: %+v", rec.Row+1, rec)
		}
		if home := homeOf(t, rec); home != spare {
			t.Errorf("row %d ran on %s, want the spare account's home %s", rec.Row+1, home, spare)
		}
	}
	if runs := r.codexRuns(); runsOf(runs, "row-1") < 2 {
		t.Errorf("codex runs %q: want row 1 on the exhausted account, then on the spare one", runs)
	}
	if w.any(func(s Snapshot) bool { return !s.PausedUntil.IsZero() || s.Probing }) {
		t.Error("the job paused, with an account left that had quota")
	}
	if !w.any(func(s Snapshot) bool { return s.Account == "work" }) || !w.any(func(s Snapshot) bool { return s.Account == "spare" }) || s.Account != "spare" {
		t.Errorf("the progress did not show the move from account work to spare (last: %q)", s.Account)
	}
}

// TestAccountsReturnToThePreferredAccount: once the preferred account's
// limit lifts, a probe row gets through there and the rows go back to it;
// its probes that hit the limit before kept the rows on the next account,
// without a pause.
func TestAccountsReturnToThePreferredAccount(t *testing.T) {
	r, work, spare := accountRig(t, 30, "{id} scenario:account:150 replyjson")
	r.opts.Concurrency = 2
	w := watch(func(s Snapshot) bool { return s.Done >= 3 })
	r.opts.Progress = w.update
	lifted := make(chan error, 1)
	go func() {
		select {
		case <-w.hit:
			lifted <- os.Remove(filepath.Join(work, "exhausted"))
		case <-time.After(60 * time.Second):
			lifted <- errors.New("3 rows were not done within 60 s")
		}
	}()
	s := r.run(bounded(t), nil)
	if err := <-lifted; err != nil {
		t.Fatal(err)
	}
	if !s.Complete() || s.Done != 30 {
		t.Fatalf("summary %+v, want 30 rows done", s)
	}
	recs := r.output()
	onSpare := 0
	for _, rec := range recs[:3] {
		if homeOf(t, rec) != spare {
			t.Errorf("row %d ran on %s before the limit lifted, want %s", rec.Row+1, homeOf(t, rec), spare)
		}
	}
	for _, rec := range recs {
		if homeOf(t, rec) == spare {
			onSpare++
		}
	}
	if last := recs[len(recs)-1]; homeOf(t, last) != work {
		t.Errorf("the last row ran on %s, want the preferred account's home %s", homeOf(t, last), work)
	}
	if onSpare == 0 || onSpare == 30 {
		t.Errorf("%d rows on the spare account, want some but not all", onSpare)
	}
	if w.any(func(s Snapshot) bool { return !s.PausedUntil.IsZero() || s.Probing }) {
		t.Error("the job paused, with an account left that had quota")
	}
	if s.Account != "work" {
		t.Errorf("last snapshot's account %q, want work", s.Account)
	}
}

// attempt is one turn an accountWorker ran.
type attempt struct {
	row     string
	account int
	start   time.Time
	quota   bool
	note    string
}

// accountWorkers are in-process workers: an account is exhausted until its
// instant in until, naming that instant as its reset; a turn that gets
// through takes work.
type accountWorkers struct {
	until []time.Time
	work  time.Duration
	mu    sync.Mutex
	log   []attempt
}

type accountWorker struct {
	ws      *accountWorkers
	account int
}

func (w accountWorker) Run(t Turn, _, _ <-chan struct{}, _ time.Duration) (Outcome, error) {
	start := time.Now()
	var o Outcome
	o.MessageID = t.ID
	quota := start.Before(w.ws.until[w.account])
	if quota {
		o.Status, o.Failure, o.Error, o.RetryAt = protocol.TurnFailed, protocol.FailQuota, "usage limit", w.ws.until[w.account]
	} else {
		time.Sleep(w.ws.work)
		o.Status, o.Reply = protocol.TurnCompleted, fmt.Sprintf(`{"account":%d}`, w.account)
	}
	w.ws.mu.Lock()
	w.ws.log = append(w.ws.log, attempt{row: t.ID, account: w.account, start: start, quota: quota, note: t.RetryNote})
	w.ws.mu.Unlock()
	return o, nil
}

func (accountWorker) Close(<-chan struct{}) {}

// TestAccountsAllExhaustedPauseUntilTheEarliestReset: with every account
// at its usage limit nothing starts until the earliest reset (the second
// account's); a probe there gets through and rows go on on it, then back
// on the preferred account once its own reset has come.
func TestAccountsAllExhaustedPauseUntilTheEarliestReset(t *testing.T) {
	tb := table(t, rows(20, func(int) string { return "x" }))
	tmpl, _ := ParseTemplate("{id}", tb.Columns)
	st, err := OpenStore(filepath.Join(t.TempDir(), "out.csv"), tb)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Now()
	ws := &accountWorkers{until: []time.Time{t0.Add(700 * time.Millisecond), t0.Add(300 * time.Millisecond)}, work: 100 * time.Millisecond}
	w := watch(nil)
	s, err := Run(bounded(t), nil, Options{Table: tb, Template: tmpl, Store: st, Concurrency: 2, MaxAttempts: 1,
		Accounts: []string{"a", "b"}, QuotaJitter: -1, Progress: w.update,
		Quota:     retry.QuotaPolicy{BackoffMin: 50 * time.Millisecond, BackoffMax: time.Second, Cooldown: time.Second, CooldownMax: time.Second},
		NewWorker: func(_, acct int) (Worker, error) { return accountWorker{ws, acct}, nil }})
	if err != nil || !s.Complete() || s.Done != 20 || s.Failed != 0 {
		t.Fatalf("summary %+v, %v; want 20 rows done, each recorded once", s, err)
	}
	if !w.any(func(s Snapshot) bool { return s.PausedUntil.Equal(ws.until[1]) && !s.Probing && s.Account == "b" }) {
		t.Error("the progress never showed the pause until account b's reset")
	}
	var firstOK *attempt
	for i, a := range ws.log {
		if a.start.Before(ws.until[1]) && !a.quota {
			t.Errorf("%s started on account %d during the pause and got through", a.row, a.account)
		}
		if !a.quota && firstOK == nil {
			firstOK = &ws.log[i]
		}
	}
	if firstOK == nil || firstOK.account != 1 || firstOK.start.Before(ws.until[1]) || firstOK.note == "" {
		t.Fatalf("first attempt through: %+v; want a retried row on account b at its reset (%v)", firstOK, ws.until[1].Sub(t0))
	}
	if n := len(ws.log) - 20; n > 4 {
		t.Errorf("%d attempts hit a limit, want at most 2 per account", n)
	}
	last := ws.log[len(ws.log)-1]
	if last.account != 0 || last.start.Before(ws.until[0]) {
		t.Errorf("last attempt %+v, want on account a after its reset (%v)", last, ws.until[0].Sub(t0))
	}
	if s.Account != "a" {
		t.Errorf("last snapshot's account %q, want a", s.Account)
	}
}

// bounded is a context that ends a job gone wrong (rows never getting
// through) after a minute, so that the test fails instead of hanging.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
