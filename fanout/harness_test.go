package fanout

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/shim"
	"github.com/battyhq/batty/shim/shimconfig"
)

// TestMain lets this test binary also be a shim and a fake codex, selected
// by BATTY_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "shim":
		os.Exit(shim.Main(os.Args[1:]))
	case "fakecodex":
		os.Exit(codextest.FakeMain(os.Args[1:]))
	}
	code := m.Run()
	hoststest.RemoveBuilds()
	os.Exit(code)
}

// rig is a job on real shims with the fake codex as their worker.
type rig struct {
	t      testing.TB
	dir    string
	out    string
	log    string // $FAKE_CODEX_LOG: one line per codex run
	mark   string
	table  *Table
	shims  ShimWorkers
	opts   Options
	spawns atomic.Int32
}

// newRig makes a job over csv; cleanup asserts that no process it started
// is left.
func newRig(t testing.TB, csv, instruction string) *rig {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &rig{t: t, dir: dir, out: filepath.Join(dir, "out.csv"), log: filepath.Join(dir, "codex.log"),
		mark: fmt.Sprintf("fanout-%d-%d", os.Getpid(), time.Now().UnixNano())}
	r.table, err = ReadTable(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := ParseTemplate(instruction, r.table.Columns)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	r.shims = ShimWorkers{
		Path: self,
		Env:  append(os.Environ(), "BATTY_TEST_ROLE=shim", "BATTY_LOG_LEVEL=warn", codextest.MarkEnv+"="+r.mark),
		Config: shimconfig.Config{Agent: "fanout", CodexBin: self, StopGrace: 300 * time.Millisecond,
			Env: []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + state, "FAKE_CODEX_LOG=" + r.log}},
	}
	r.opts = Options{Template: tmpl, Concurrency: 4, Grace: 5 * time.Second, RetryBase: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		QuotaJitter: -1, Quota: retry.QuotaPolicy{BackoffMin: 200 * time.Millisecond, BackoffMax: time.Second, Cooldown: 200 * time.Millisecond, CooldownMax: time.Second}}
	t.Cleanup(func() { codextest.AssertNoMarked(t, r.mark) })
	return r
}

// run runs the job once to its end, or until ctx ends.
func (r *rig) run(ctx context.Context, kill <-chan struct{}) Summary {
	r.t.Helper()
	st, err := OpenStore(r.out, r.table)
	if err != nil {
		r.t.Fatal(err)
	}
	o := r.opts
	o.Table, o.Store = r.table, st
	o.NewWorker = func(n, acct int) (Worker, error) { r.spawns.Add(1); return r.shims.New(n, acct) }
	s, err := Run(ctx, kill, o)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// output reads OUT back: its records by row, and its header.
func (r *rig) output() []Record {
	r.t.Helper()
	b, err := os.ReadFile(r.out)
	if err != nil {
		r.t.Fatal(err)
	}
	recs, err := DecodeOutput(b, r.table.Columns)
	if err != nil {
		r.t.Fatal(err)
	}
	return recs
}

// codexRuns returns the lines of $FAKE_CODEX_LOG.
func (r *rig) codexRuns() []string {
	f, err := os.Open(r.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// rows returns a CSV of n rows with columns id and name.
func rows(n int, name func(i int) string) string {
	var b strings.Builder
	b.WriteString("id,name\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d,%s\n", i, name(i))
	}
	return b.String()
}
