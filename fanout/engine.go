package fanout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/textclip"
)

// Limits of Options.Concurrency.
const (
	DefaultConcurrency = 8
	MaxConcurrency     = 256
)

// DefaultMaxAttempts is how often a row whose attempts fail in a way that
// may pass is tried, as for team messages (a team file's max_attempts).
const DefaultMaxAttempts = 3

// DefaultGrace is how long running turns may finish after an interrupt.
const DefaultGrace = 30 * time.Second

// Options describe one run of a job.
type Options struct {
	Table    *Table
	Template *Template
	// Schema says that the workers' codex has an output schema (the
	// prompt then says to match it).
	Schema bool
	// Store holds what earlier runs recorded; rows done there are skipped.
	Store *Store
	// Concurrency is the most rows running at once (1..MaxConcurrency).
	Concurrency int
	// MaxTokens, when > 0, stops starting rows once the job's recorded
	// usage reaches it: the tokens the output records for the input's
	// rows (earlier runs) plus every attempt of this run.
	MaxTokens int64
	// MaxAttempts bounds the attempts of a row (default
	// DefaultMaxAttempts).
	MaxAttempts int
	// Accounts name the Codex accounts rows may run on, in order of
	// preference (for messages and progress). With several, rows run on
	// the first with quota left: a usage limit pauses only the account
	// that hit it, rows go on on the next, and return to a preferred one
	// once its pause has run out and a probe row got through. Zero or one
	// name: one account, paused as a whole.
	Accounts []string
	// NewWorker starts worker n (1-based) on account (an index of
	// Accounts; 0 with one account); called when a row needs one.
	NewWorker func(n, account int) (Worker, error)
	// Grace is how long running turns may finish once the job is
	// interrupted (default DefaultGrace).
	Grace time.Duration
	// RetryBase and RetryMax bound the back-off between attempts (the
	// daemon's defaults when zero).
	RetryBase, RetryMax time.Duration
	// Quota is the policy after a usage limit (the daemon's default when
	// zero); QuotaJitter the most jitter added to a planned try (default
	// retry.DefaultQuotaJitter; negative: none).
	Quota       retry.QuotaPolicy
	QuotaJitter time.Duration
	// Rand returns a number in [0, 1) for jitter (default math/rand/v2).
	Rand func() float64
	// Cwd, when set, gives every row a working directory of its own: the
	// template rendered for the row, relative to CwdBase unless absolute
	// (RowDir). A row whose directory is not there fails without a turn.
	// Nil: the workers' own.
	Cwd     *Template
	CwdBase string
	// KeepGoing runs every row even when the first SameErrorRows rows
	// this run finishes all fail with the same error (by default no more
	// rows start then).
	KeepGoing bool
	// Progress, if set, is told every change.
	Progress func(Snapshot)
	Log      hclog.Logger
}

// Snapshot is a job's progress.
type Snapshot struct {
	Total, Skipped, Done, Failed, Running int
	Tokens                                int64 // used by this run
	// PriorTokens are the tokens earlier runs recorded for the input's
	// rows; Budget is set when the token budget stopped the job.
	PriorTokens int64
	Budget      bool
	Started     time.Time
	// PausedUntil is set while a usage limit holds new rows back (with
	// several accounts: while every account is paused, the earliest end of
	// their pauses); Probing while one row tries whether it has lifted.
	PausedUntil time.Time
	Probing     bool
	// Account is the name of the account rows start on now, or, while
	// every one is paused, of the one paused the shortest ("" unless
	// Options.Accounts names several).
	Account string
	// Stopping says why no more rows start ("" while they do).
	Stopping string
	// SameError is set when the job stopped early because its first rows
	// all failed with it (SameErrorRows).
	SameError string
}

// Summary is how a run ended: the last Snapshot (this run's counts) and
// the state of every row of the input after it.
type Summary struct {
	Snapshot
	// AllDone, AllFailed and Pending count the input's rows by their
	// status in the output now (earlier runs included).
	AllDone, AllFailed, Pending int
	// CommonError is the most common error of the failed rows (one of
	// them as written; see errorKey) and CommonErrorRows how many have it.
	CommonError     string
	CommonErrorRows int
	// Runtime names how the rows ran (Job.Run sets it; "": not said).
	Runtime string
}

// Complete reports whether every row of the input is done.
func (s Summary) Complete() bool { return s.Stopping == "" && s.AllDone == s.Total }

func (o *Options) defaults() error {
	if o.Concurrency < 1 || o.Concurrency > MaxConcurrency {
		return fmt.Errorf("concurrency %d: want 1 to %d", o.Concurrency, MaxConcurrency)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.RetryBase <= 0 {
		o.RetryBase = retry.DefaultBase
	}
	if o.RetryMax <= 0 {
		o.RetryMax = retry.DefaultMax
	}
	if o.Quota == (retry.QuotaPolicy{}) {
		o.Quota = retry.DefaultQuotaPolicy()
	}
	if o.QuotaJitter == 0 {
		o.QuotaJitter = retry.DefaultQuotaJitter
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if o.Progress == nil {
		o.Progress = func(Snapshot) {}
	}
	return nil
}

// pendingRow is a row still to run.
type pendingRow struct {
	i         int
	failures  int       // failed attempts that count against MaxAttempts
	tokens    int64     // used by every attempt, earlier runs' included
	notBefore time.Time // its back-off
	note      string    // the retry note of its next attempt
	// serverRetried says that an attempt cut off by the death of the
	// shared app-server has been retried (once, at once, not counted).
	serverRetried bool
}

type job struct {
	row     *pendingRow
	account int // the index of the account it runs on
	turn    Turn
}

type result struct {
	job
	out     Outcome
	err     error // the worker broke
	spawn   bool  // the worker could not start
	elapsed time.Duration
}

// Run runs every row of o.Table not done in o.Store, recording each as it
// finishes. It blocks until no row runs any more: every row ran, or the job
// stopped — ctx was cancelled (running turns get o.Grace to finish; kill
// closed ends them at once), the token budget was reached, or codex cannot
// run (no login, no binary). Rows not run stay pending for a rerun. Every
// worker it started has exited when it returns. The error is about the job
// itself (a row that could not be recorded); the rows' failures are in the
// store and the Summary.
func Run(ctx context.Context, kill <-chan struct{}, o Options) (Summary, error) {
	if err := o.defaults(); err != nil {
		return Summary{}, err
	}
	e := &engine{o: o, jobs: make(chan job), results: make(chan result), stop: make(chan struct{}), recordErr: make(chan error, 1)}
	e.snap = Snapshot{Total: len(o.Table.Rows), Started: time.Now()}
	e.accts = make([]accountState, max(len(o.Accounts), 1))
	for i := range e.accts {
		e.accts[i].probe = -1
	}
	e.syncAccounts()
	for i := range o.Table.Rows {
		prior, _ := o.Store.Prior(i)
		e.snap.PriorTokens += prior.Tokens
		if o.Store.Done(i) {
			e.snap.Skipped++
			continue
		}
		e.fresh = append(e.fresh, &pendingRow{i: i, tokens: prior.Tokens})
	}
	err := e.loop(ctx, kill)
	close(e.jobs)
	e.wg.Wait()
	e.recording.Wait()
	select {
	case rerr := <-e.recordErr:
		err = errors.Join(err, rerr)
	default:
	}
	s := Summary{Snapshot: e.snap}
	var errs []string
	for i := range o.Table.Rows {
		r, ok := o.Store.Prior(i)
		switch {
		case !ok:
		case r.Status == StatusDone:
			s.AllDone++
		case r.Status == StatusFailed:
			s.AllFailed++
			errs = append(errs, r.Error)
		}
	}
	s.CommonError, s.CommonErrorRows = commonError(errs)
	s.Pending = s.Total - s.AllDone - s.AllFailed
	o.Progress(s.Snapshot)
	return s, err
}

type engine struct {
	o       Options
	jobs    chan job
	results chan result
	stop    chan struct{} // closed when the job is interrupted
	wg      sync.WaitGroup

	snap Snapshot
	// The rows still to run: fresh[head:] were never started, retry were
	// started and put back (both in input order). Starting the next fresh
	// row costs O(1), however long the input.
	fresh   []*pendingRow
	head    int
	retry   []*pendingRow
	running int
	started int // worker goroutines
	// accts are the accounts' usage-limit states, in order of preference
	// (one when Options.Accounts names at most one).
	accts []accountState

	// recording counts rows being made durable: each by a goroutine of its
	// own, so that the loop goes on meanwhile and concurrent rows share an
	// fsync; recordErr holds the first failure.
	recording sync.WaitGroup
	recordErr chan error

	// firstKeys are the error keys of the first rows this run finished
	// ("" for a row done), up to SameErrorRows; firstError is the first
	// of their errors as written.
	firstKeys  []string
	firstError string
}

// loop dispatches rows and takes results until nothing runs and nothing can
// start.
func (e *engine) loop(ctx context.Context, kill <-chan struct{}) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var fatal error
	done := ctx.Done()
	for {
		now := time.Now()
		next, acct, wake := e.next(now)
		if next == nil && e.running == 0 && (e.left() == 0 || e.snap.Stopping != "") {
			return fatal
		}
		var jobs chan job
		var j job
		if next != nil {
			prompt := Prompt(e.o.Template.Render(e.o.Table.Rows[next.i]), e.o.Schema)
			if err := codex.CheckBodyLen(prompt); err != nil {
				// Codex would refuse it every time: failed without a
				// turn (and without a frame too large for the shim).
				e.unqueue(next)
				e.record(Record{Row: next.i, Values: e.o.Table.Rows[next.i], Status: StatusFailed, Tokens: next.tokens,
					Error: "not run: the instruction for this row is too long: " + err.Error()})
				continue
			}
			var cwd string
			if e.o.Cwd != nil {
				var err error
				if cwd, err = RowDir(e.o.Cwd, e.o.CwdBase, e.o.Table.Rows[next.i]); err != nil {
					e.unqueue(next)
					e.record(Record{Row: next.i, Values: e.o.Table.Rows[next.i], Status: StatusFailed, Tokens: next.tokens,
						Error: "not run: " + err.Error()})
					continue
				}
			}
			jobs = e.jobs
			j = job{row: next, account: acct, turn: Turn{ID: "row-" + strconv.Itoa(next.i+1), RetryNote: next.note, Prompt: prompt, Cwd: cwd}}
			if e.started-e.running == 0 {
				e.startWorker(kill)
			}
		}
		timer.Reset(wakeIn(now, wake))
		e.o.Progress(e.snap)
		select {
		case jobs <- j:
			e.take(next, acct)
		case r := <-e.results:
			e.running--
			e.snap.Running = e.running
			e.finish(r)
		case err := <-e.recordErr:
			fatal = err
			e.halt("a row could not be recorded")
		case <-timer.C:
		case <-done:
			done = nil
			e.halt("interrupted")
			close(e.stop)
		}
	}
}

// wakeIn is the timer's delay: until wake, or long when there is none.
func wakeIn(now, wake time.Time) time.Duration {
	if wake.IsZero() {
		return time.Hour
	}
	return max(wake.Sub(now), time.Millisecond)
}

// halt stops the start of rows, saying why (the first reason stays).
func (e *engine) halt(why string) {
	if e.snap.Stopping == "" {
		e.snap.Stopping = why
		e.o.Log.Info("No more rows start", "why", why)
	}
}

// next returns the row to start now (nil: none) and the account it runs
// on, and when to look again.
func (e *engine) next(now time.Time) (*pendingRow, int, time.Time) {
	if e.snap.Stopping != "" || e.running >= e.o.Concurrency || e.left() == 0 {
		return nil, -1, time.Time{}
	}
	if used := e.snap.PriorTokens + e.snap.Tokens; e.o.MaxTokens > 0 && used >= e.o.MaxTokens {
		e.halt(fmt.Sprintf("the token budget (--max-tokens %d) is reached: %d tokens recorded for this job (%d by earlier runs)", e.o.MaxTokens, used, e.snap.PriorTokens))
		e.snap.Budget = true
		return nil, -1, time.Time{}
	}
	acct, pauseEnd := pick(e.accts, now)
	if acct < 0 {
		return nil, -1, pauseEnd // a probe decides, or a pause runs out
	}
	// The first row in input order whose back-off is over: the first
	// such retry, or the next fresh row when it comes before.
	var wake time.Time
	var first *pendingRow
	for _, r := range e.retry {
		if !r.notBefore.After(now) {
			first = r
			break
		}
		if wake.IsZero() || r.notBefore.Before(wake) {
			wake = r.notBefore
		}
	}
	if e.head < len(e.fresh) && (first == nil || e.fresh[e.head].i < first.i) {
		return e.fresh[e.head], acct, time.Time{}
	}
	if first != nil {
		return first, acct, time.Time{}
	}
	return nil, -1, wake
}

// left is the number of rows still to run.
func (e *engine) left() int { return len(e.fresh) - e.head + len(e.retry) }

// take marks r as started on account acct; on an account whose pause has
// run out, r is its probe.
func (e *engine) take(r *pendingRow, acct int) {
	e.unqueue(r)
	e.running++
	e.snap.Running = e.running
	if a := &e.accts[acct]; !a.open() {
		a.probe = r.i
		if len(e.accts) > 1 {
			e.o.Log.Info("Trying whether the usage limit of an account has lifted", "account", e.accountName(acct), "row", r.i+1)
		}
		e.syncAccounts()
	}
}

// unqueue removes r from the rows still to run.
func (e *engine) unqueue(r *pendingRow) {
	if e.head < len(e.fresh) && e.fresh[e.head] == r {
		e.fresh[e.head] = nil
		e.head++
	} else {
		e.retry = slices.DeleteFunc(e.retry, func(p *pendingRow) bool { return p == r })
	}
}

// requeue puts r back among the pending rows, in input order.
func (e *engine) requeue(r *pendingRow) {
	i, _ := slices.BinarySearchFunc(e.retry, r.i, func(p *pendingRow, i int) int { return p.i - i })
	e.retry = slices.Insert(e.retry, i, r)
}

// startWorker starts one more worker goroutine, up to Concurrency. Its
// worker (a shim) starts with its first row, on that row's account; a row
// on another account closes it and starts one on the row's.
func (e *engine) startWorker(kill <-chan struct{}) {
	if e.started >= e.o.Concurrency {
		return
	}
	e.started++
	n := e.started
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		var w Worker
		var wAcct int
		defer func() {
			if w != nil {
				w.Close(kill)
			}
		}()
		for j := range e.jobs {
			r := result{job: j}
			if w != nil && wAcct != j.account {
				w.Close(kill)
				w = nil
			}
			if w == nil {
				var err error
				wAcct = j.account
				if w, err = e.o.NewWorker(n, j.account); err != nil {
					r.err, r.spawn = err, true
					e.results <- r
					continue
				}
			}
			t0 := time.Now()
			r.out, r.err = w.Run(j.turn, e.stop, kill, e.o.Grace)
			r.elapsed = time.Since(t0)
			var se *SpawnError
			r.spawn = errors.As(r.err, &se)
			if r.err != nil {
				w.Close(kill)
				w = nil
			}
			e.results <- r
		}
	}()
}

// finish applies a row's result; a row that finished is recorded in the
// background.
func (e *engine) finish(r result) {
	row := r.row
	acct := &e.accts[r.account]
	wasProbe := acct.probe == row.i
	if wasProbe {
		acct.probe = -1
		defer e.syncAccounts()
	}
	if r.spawn {
		e.requeue(row)
		e.halt("a worker could not start: " + r.err.Error())
		return
	}
	f := r.out.TurnFinished
	tokens := f.Usage.Input + f.Usage.Output
	e.snap.Tokens += tokens
	row.tokens += tokens
	if r.err == nil && f.Status == protocol.TurnFailed && f.Failure == protocol.FailQuota {
		e.quotaHit(row, r.account, r.out.RetryAt, wasProbe)
		return
	}
	if wasProbe {
		e.quotaLifted(r.account)
	}
	rec := Record{Row: row.i, Values: e.o.Table.Rows[row.i], ThreadID: f.ThreadID, Tokens: row.tokens, Duration: r.elapsed.Seconds()}
	if f.Duration > 0 {
		rec.Duration = f.Duration.Seconds()
	}
	switch cause := retryCause(r); {
	case r.err == nil && r.out.ServerDied && !row.serverRetried:
		// Not the row's doing: it runs again as soon as a worker is free
		// (the broker is starting the process again), without counting.
		row.serverRetried = true
		row.note = "retry after the shared app-server died during the earlier attempt; this is a fresh thread, the earlier attempt's work is not in it"
		e.o.Log.Warn("The shared app-server died during a row; retrying it", "row", row.i+1)
		e.requeue(row)
		return
	case r.err == nil && f.Status == protocol.TurnInterrupted:
		e.requeue(row) // cut off by the interrupt: a rerun runs it
		return
	case r.err == nil && f.Status == protocol.TurnFailed && (f.Failure == protocol.FailAuth || f.Failure == protocol.FailSpawn):
		e.requeue(row)
		e.halt("codex cannot run: " + f.Error)
		return
	case cause != "":
		row.failures++
		msg := errorOf(r)
		if row.failures < e.o.MaxAttempts {
			delay := retry.Backoff(row.failures, e.o.RetryBase, e.o.RetryMax, e.o.Rand())
			row.notBefore = time.Now().Add(delay)
			row.note = fmt.Sprintf("retry %d of %d after %s: %s; this is a fresh thread, the earlier attempt's work is not in it", row.failures+1, e.o.MaxAttempts, cause, textclip.Bytes(msg, 200+len(textclip.Ellipsis), textclip.Ellipsis))
			e.o.Log.Warn("Row failed, retrying", "row", row.i+1, "cause", cause, "in", delay, "error", msg)
			e.requeue(row)
			return
		}
		rec.Status, rec.Error = StatusFailed, fmt.Sprintf("%s (after %d attempts)", msg, row.failures)
	case r.err == nil && f.Status == protocol.TurnCompleted:
		res, err := ParseReply(f.Reply)
		if err != nil {
			rec.Status, rec.Error = StatusFailed, err.Error()
		} else {
			rec.Status, rec.Result = StatusDone, res
		}
	default:
		rec.Status, rec.Error = StatusFailed, errorOf(r)
	}
	e.record(rec)
}

// record counts a finished row and makes it durable in the background.
func (e *engine) record(rec Record) {
	if rec.Status == StatusDone {
		e.snap.Done++
	} else {
		e.snap.Failed++
	}
	e.checkSameError(rec)
	e.recording.Add(1)
	go func() {
		defer e.recording.Done()
		if err := e.o.Store.Record(rec); err != nil {
			select {
			case e.recordErr <- err:
			default:
			}
		}
	}()
}
