package fanout

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/shim/shimconfig"
)

// TestSharedServersRecycle runs 12 rows at concurrency 2 with the real
// Codex CLI on shared app-servers that take 4 rows each: fresh processes
// take over as the rows go (the workers move with their next row), every
// row is done once on a thread of its own, and every process has ended
// with the job.
func TestSharedServersRecycle(t *testing.T) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mark := fmt.Sprintf("fanout-shared-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { codextest.AssertNoMarked(t, mark) })
	env := append(os.Environ(), codextest.MarkEnv+"="+mark)
	cfg := shimconfig.Config{Agent: "fanout", CodexBin: bin, Cwd: dir, StopGrace: 300 * time.Millisecond, Env: []string{"CODEX_HOME=" + srv.WriteHome(t)}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sv, err := StartShared(ctx, SharedSetup{Config: cfg, Env: env, RecycleRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	first := sv.Pids()[0]
	tb, err := ReadTable(strings.NewReader(rows(12, func(int) string { return "x" })))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := ParseTemplate(`Row {id}. [[mock:reply {{"row": {id}}}]]`, tb.Columns)
	st, err := OpenStore(filepath.Join(dir, "out.csv"), tb)
	if err != nil {
		t.Fatal(err)
	}
	w := ShimWorkers{Path: self, Env: append(env, "BATTY_TEST_ROLE=shim", "BATTY_LOG_LEVEL=warn"), Config: cfg, Shared: sv}
	s, err := Run(ctx, nil, Options{Table: tb, Template: tmpl, Store: st, Concurrency: 2, NewWorker: w.New})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil || !s.Complete() {
		t.Fatalf("summary %+v, %v", s, err)
	}
	threads := map[string]bool{}
	for i := range tb.Rows {
		r, _ := st.Prior(i)
		if r.Status != StatusDone || r.Result != fmt.Sprintf(`{"row":%d}`, i+1) || threads[r.ThreadID] {
			t.Errorf("row %d: %+v", i+1, r)
		}
		threads[r.ThreadID] = true
	}
	sv.mu.Lock()
	started := sv.seq
	sv.mu.Unlock()
	if started < 3 || sv.Pids()[0] == first {
		t.Errorf("%d processes started, the current one %d (the first %d); want fresh ones every 4 rows", started, sv.Pids()[0], first)
	}
	if n := len(srv.Requests()); n != 12 {
		t.Errorf("%d model requests, want 12", n)
	}
}
