package fanout

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// diedWorker is an in-process worker whose row's first `dies` attempts
// are cut off by the death of the shared app-server; the others answer.
type diedWorker struct {
	mu       *sync.Mutex
	dies     int
	attempts map[string]int
	notes    map[string][]string
}

func (w diedWorker) Run(t Turn, _, _ <-chan struct{}, _ time.Duration) (Outcome, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attempts[t.ID]++
	w.notes[t.ID] = append(w.notes[t.ID], t.RetryNote)
	var o Outcome
	o.MessageID = t.ID
	if w.attempts[t.ID] <= w.dies {
		o.Status, o.Failure, o.Error, o.ServerDied = protocol.TurnFailed, protocol.FailKilled, "the app-server was killed", true
		return o, nil
	}
	o.Status, o.Reply = protocol.TurnCompleted, `{"ok":true}`
	return o, nil
}

func (diedWorker) Close(<-chan struct{}) {}

// TestRowCutByTheSharedServerRetriedOnce: a row whose attempt the death of
// the shared app-server cut off runs again at once, the attempt not
// counted, saying why; cut off a second time, it is retried as any killed
// attempt is (counted, after the back-off).
func TestRowCutByTheSharedServerRetriedOnce(t *testing.T) {
	for _, c := range []struct {
		dies, attempts int
		done           bool
	}{
		{dies: 1, attempts: 2, done: true}, // once: retried at once, not counted
		{dies: 2, attempts: 3, done: true}, // twice: the second counts (1 of 2 attempts)
		{dies: 3, attempts: 3, done: false},
	} {
		tb := table(t, "id\n1\n")
		tmpl, _ := ParseTemplate("{id}", tb.Columns)
		st, err := OpenStore(filepath.Join(t.TempDir(), "out.csv"), tb)
		if err != nil {
			t.Fatal(err)
		}
		w := diedWorker{mu: &sync.Mutex{}, dies: c.dies, attempts: map[string]int{}, notes: map[string][]string{}}
		s, err := Run(context.Background(), nil, Options{Table: tb, Template: tmpl, Store: st, Concurrency: 1, MaxAttempts: 2,
			RetryBase: time.Millisecond, RetryMax: time.Millisecond, NewWorker: func(int, int) (Worker, error) { return w, nil }})
		st.Close()
		if err != nil || s.Complete() != c.done {
			t.Fatalf("dies %d: summary %+v, %v", c.dies, s, err)
		}
		if got := w.attempts["row-1"]; got != c.attempts {
			t.Errorf("dies %d: %d attempts, want %d", c.dies, got, c.attempts)
		}
		if n := w.notes["row-1"]; len(n) < 2 || !strings.Contains(n[1], "shared app-server died") {
			t.Errorf("dies %d: retry notes %q", c.dies, n)
		}
	}
}

// TestRuntimeOf names the runtime of a job's workers for its summary.
func TestRuntimeOf(t *testing.T) {
	here := WorkerHost{Host: host.Local{}}
	app := shimconfig.Config{Runtime: shimconfig.RuntimeAppServer}
	for _, c := range []struct {
		w     ShimWorkers
		want  string
		local bool
	}{
		{ShimWorkers{}, RuntimeExec, true},
		{ShimWorkers{Config: app}, RuntimeOwn, true},
		{ShimWorkers{Hosts: []WorkerHost{here, {Host: host.Local{}, Config: app}}}, RuntimeMixed, true},
		{ShimWorkers{Config: app, Hosts: []WorkerHost{here}}, RuntimeExec, true},
	} {
		if got := runtimeOf(c.w); got != c.want {
			t.Errorf("runtimeOf(%+v) = %q, want %q", c.w, got, c.want)
		}
		if got := local(c.w); got != c.local {
			t.Errorf("local(%+v) = %v", c.w, got)
		}
	}
	w := withExec(ShimWorkers{Config: app, Hosts: []WorkerHost{{Host: host.Local{}, Config: app}}})
	if w.Config.Runtime != shimconfig.RuntimeExec || w.Hosts[0].Config.Runtime != shimconfig.RuntimeExec || runtimeOf(w) != RuntimeExec {
		t.Errorf("withExec: %+v", w)
	}
}

// TestSummaryLineNamesTheRuntime: the summary's first line ends with the
// runtime the rows ran on, when the job says.
func TestSummaryLineNamesTheRuntime(t *testing.T) {
	s := Summary{Snapshot: Snapshot{Total: 2}, AllDone: 2, Runtime: RuntimeShared}
	if line := SummaryLine(s, "out.csv"); line != "fanout: 2 of 2 rows done, 0 failed, 0 pending (this run: 0 done, 0 failed, 0 tokens); output out.csv; runtime "+RuntimeShared {
		t.Errorf("summary line %q", line)
	}
	s.Runtime = ""
	if line := SummaryLine(s, "out.csv"); strings.Contains(line, "runtime") {
		t.Errorf("summary line %q names a runtime", line)
	}
}
