package fanout

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/syncbuf"
	"github.com/battyhq/batty/team"
)

// TestJobRunStopsOnItsInterrupts: the first interrupt stops starting rows
// and says how long the running ones get, the second stops them at once
// (well within their grace); Run closes the store, so OUT holds the row
// done and the others pending, and the progress ends with the summary.
func TestJobRunStopsOnItsInterrupts(t *testing.T) {
	r := newRig(t, "id,sc\n1,text\n2,sleepms:120000\n3,sleepms:120000\n4,text\n5,text\n", "{id} scenario:{sc} replyjson")
	st, err := OpenStore(r.out, r.table)
	if err != nil {
		t.Fatal(err)
	}
	o := r.opts
	o.Table, o.Store, o.Concurrency, o.Grace = r.table, st, 2, 10*time.Minute
	w := watch(func(s Snapshot) bool { return s.Done == 1 && s.Running == 2 })
	o.Progress = w.update
	sigs := make(chan os.Signal, 2)
	var notes, progress syncbuf.Buffer
	job := Job{Engine: o, Output: r.out, Workers: r.shims, Progress: NewProgress(&progress, false),
		Interrupts: sigs, Notes: &notes}
	go func() {
		select {
		case <-w.hit:
		case <-time.After(60 * time.Second):
		}
		sigs <- syscall.SIGINT
		sigs <- syscall.SIGTERM
	}()
	start := time.Now()
	sum, err := job.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("Run took %s: the second interrupt did not stop the running rows", took)
	}
	if sum.Complete() || sum.Stopping != "interrupted" || sum.AllDone != 1 || sum.Pending != 4 {
		t.Errorf("summary %+v, want interrupted with 1 row done and 4 pending", sum)
	}
	for _, want := range []string{"interrupt: no more rows start; running rows get 10m0s to finish", "terminated: stopping the running rows now"} {
		if !strings.Contains(notes.String(), want) {
			t.Errorf("notes %q lack %q", notes.String(), want)
		}
	}
	if !strings.Contains(progress.String(), SummaryLine(sum, r.out)) {
		t.Errorf("progress %q lacks the summary line", progress.String())
	}
	// OUT is written (DecodeOutput leaves the pending rows out).
	if recs := r.output(); len(recs) != 1 || recs[0].Row != 0 || recs[0].Status != StatusDone {
		t.Fatalf("output %+v, want row 1 done and the others pending", recs)
	}
}

// TestJobRunWithNoHostReadyRunsNoRow: when no host of the job can run
// workers, Run fails naming each host's problem, starts no row and closes
// the store.
func TestJobRunWithNoHostReadyRunsNoRow(t *testing.T) {
	r := newRig(t, "id\n1\n2\n", "{id} replyjson")
	st, err := OpenStore(r.out, r.table)
	if err != nil {
		t.Fatal(err)
	}
	o := r.opts
	o.Table, o.Store = r.table, st
	down := team.Host{Name: "down", Command: []string{filepath.Join(t.TempDir(), "absent")}}
	var notes, progress syncbuf.Buffer
	job := Job{Engine: o, Output: r.out, Workers: r.shims, Progress: NewProgress(&progress, false), Notes: &notes,
		Hosts:     []team.Host{down},
		HostSetup: HostSetup{Transport: &hosts.Transport{}, Root: r.dir, Cwd: r.dir, Home: "/nonexistent-home", Config: r.shims.Config}}
	_, err = job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no host can run the rows:\nhost down: ") || !strings.Contains(err.Error(), "\n  fix: ") {
		t.Fatalf("Run: %v, want no host can run the rows, naming host down and its fix", err)
	}
	if n := len(r.codexRuns()); n != 0 || progress.String() != "" {
		t.Errorf("%d codex runs, progress %q: want none", n, progress.String())
	}
	// The store was closed: the job's lock is free for a rerun.
	st2, err := OpenStore(r.out, r.table)
	if err != nil {
		t.Fatalf("reopen the store: %v", err)
	}
	st2.Close()
}
