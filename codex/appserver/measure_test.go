package appserver

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
)

// TestMeasureTurnLatency compares the wall time of a trivial turn through
// one long-lived app-server with a `codex exec --json` process per turn,
// both against the mock. It runs only with BATTY_APPSERVER_MEASURE=1 (it
// takes a while and asserts nothing about speed); the numbers are logged
// (go test -v) and recorded in docs/codex-app-server.md.
func TestMeasureTurnLatency(t *testing.T) {
	if os.Getenv("BATTY_APPSERVER_MEASURE") != "1" {
		t.Skip("set BATTY_APPSERVER_MEASURE=1 to measure")
	}
	const runs = 20
	bin := codextest.CodexNative(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// App-server: cold start to the first answer, then turns on one thread.
	t0 := time.Now()
	c := startReal(t, ctx, bin, e2eEnv(home, randomMark(t)), dir)
	th, err := c.StartThread(ctx, ThreadOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunTurn(ctx, th.ID, "warm up", nil); err != nil {
		t.Fatal(err)
	}
	cold := time.Since(t0)
	var app []time.Duration
	for i := range runs {
		start := time.Now()
		res, err := c.RunTurn(ctx, th.ID, "trivial turn "+string(rune('a'+i)), nil)
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("turn %d: %+v, %v", i, res, err)
		}
		app = append(app, time.Since(start))
	}
	_ = c.Close()

	// codex exec --json: a new thread per run, then resuming one thread
	// (what batty's shim does for every message after the first).
	execRun := func(resume string) (time.Duration, string) {
		p := codextest.Start(t, codextest.Invocation{Bin: bin, Home: home, Dir: dir, Resume: resume, Prompt: "trivial turn"})
		ev, err := p.WaitEvent(ctx, "thread.started", "")
		if err != nil {
			t.Fatal(err)
		}
		code, err := p.Wait(ctx)
		if err != nil || code != 0 {
			t.Fatalf("codex exec: exit %d, %v: %s", code, err, p.Stderr())
		}
		return time.Since(p.Started), ev.ThreadID
	}
	var fresh, resumed []time.Duration
	var thread string
	for range runs {
		d, id := execRun("")
		fresh = append(fresh, d)
		thread = id
	}
	for range runs {
		d, _ := execRun(thread)
		resumed = append(resumed, d)
	}
	t.Logf("app-server cold start to first answer: %v", cold.Round(time.Millisecond))
	t.Logf("app-server turn on a loaded thread: %s", summary(app))
	t.Logf("codex exec --json, new thread:       %s", summary(fresh))
	t.Logf("codex exec --json resume:            %s", summary(resumed))
}

// summary gives the p50, p90 and extremes of ds.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)].Round(time.Millisecond) }
	return "p50 " + q(0.5).String() + "  p90 " + q(0.9).String() + "  min " + q(0).String() + "  max " + q(1).String() +
		"  (n=" + strconv.Itoa(len(s)) + ")"
}
