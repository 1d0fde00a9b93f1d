package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/fanout"
	"github.com/battyhq/batty/procstat"
)

// fanoutBenchRows is the input size of BenchmarkFanoutCodex.
const fanoutBenchRows = 200

// BenchmarkFanoutCodex runs `batty fanout` (the real batty binary, as a
// child of the benchmark) over fanoutBenchRows rows with the real Codex
// CLI (the pinned install; skipped without it) against the mock
// Responses server, which answers each row at once with a small JSON
// object: at concurrency 8 and 64, on `--runtime exec` (a `codex exec`
// per row) and `--runtime app-server` (every row a thread of one shared
// app-server), in one run. It reports rows per second (wall, from the
// command's start to its exit), the CPU time per row of every process
// of the job (batty, its shims, codex: the benchmark's children's rusage,
// each process reaped by its parent) and the peak resident memory of the
// whole job (the sums of VmRSS and of PSS over batty and every process
// under it, sampled every 50 ms: see peakMemory). Run with -benchtime 1x.
func BenchmarkFanoutCodex(b *testing.B) {
	launcher := codextest.Codex(b)
	srv := codextest.NewServer(b)
	var csv strings.Builder
	csv.WriteString("id\n")
	for i := 1; i <= fanoutBenchRows; i++ {
		fmt.Fprintf(&csv, "%d\n", i)
	}
	for _, conc := range []int{8, 64} {
		for _, rt := range []string{"exec", "app-server"} {
			b.Run(fmt.Sprintf("c%d/%s", conc, rt), func(b *testing.B) {
				for range b.N {
					fanoutBenchRun(b, launcher, srv.WriteHome(b), csv.String(), rt, conc)
				}
			})
		}
	}
}

// fanoutBenchRun runs one job and reports its figures.
func fanoutBenchRun(b *testing.B, launcher, home, csv, runtime string, conc int) {
	b.Helper()
	dir := b.TempDir()
	in, out := filepath.Join(dir, "in.csv"), filepath.Join(dir, "out.csv")
	if err := os.WriteFile(in, []byte(csv), 0o600); err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self, "fanout", "--csv", in, "--output", out,
		"--codex-bin", launcher, "--cwd", dir, "--runtime", runtime, "-c", fmt.Sprint(conc),
		"--instruction", `Answer. [[mock:reply {{"row": {id}}}]]`)
	cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=batty", "CODEX_HOME="+home, "BATTY_LOG_LEVEL=error")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	peak := make(chan [2]int64, 1)
	go func() { peak <- peakMemory(ctx, cmd.Process.Pid) }()
	err = cmd.Wait()
	wall := time.Since(t0)
	stop()
	peakKB := <-peak
	b.StopTimer()
	if err != nil {
		b.Fatalf("batty fanout: %v\n%s", err, stderr.String())
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after); err != nil {
		b.Fatal(err)
	}
	cpu := tv(after.Utime) - tv(before.Utime) + tv(after.Stime) - tv(before.Stime)
	b.ReportMetric(fanoutBenchRows/wall.Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Milliseconds())/fanoutBenchRows, "cpu-per-row-ms")
	b.ReportMetric(float64(peakKB[0])/1024, "peak-rss-MB")
	b.ReportMetric(float64(peakKB[1])/1024, "peak-pss-MB")
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	recs, err := fanout.DecodeOutput(raw, []string{"id"})
	if err != nil {
		b.Fatal(err)
	}
	for i, r := range recs {
		if r.Status != fanout.StatusDone || r.Result != fmt.Sprintf(`{"row":%d}`, i+1) {
			b.Fatalf("row %d: %+v\n%s", i+1, r, stderr.String())
		}
	}
	if want := "runtime " + map[string]string{"exec": fanout.RuntimeExec, "app-server": fanout.RuntimeShared}[runtime]; !strings.Contains(stderr.String(), want) {
		b.Fatalf("the summary does not say %q:\n%s", want, stderr.String())
	}
}

// tv is a rusage time as a duration.
func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// peakMemory samples the resident memory of pid and every process under
// it every 50 ms until ctx ends, and returns the largest sums (kB) of
// their VmRSS (shared pages, such as the batty binary's code that every
// shim maps, counted once per process) and of their PSS (a shared page
// divided among the processes that map it: what the job holds).
func peakMemory(ctx context.Context, pid int) [2]int64 {
	var peak [2]int64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ps, err := procstat.List()
		if err == nil {
			children := map[int][]int{}
			for _, p := range ps {
				children[p.PPID] = append(children[p.PPID], p.PID)
			}
			var rss, pss int64
			tree := []int{pid}
			for i := 0; i < len(tree); i++ {
				tree = append(tree, children[tree[i]]...)
				if kb, err := procstat.RSSKB(tree[i]); err == nil {
					rss += kb
				}
				if kb, err := procstat.KB(tree[i], "smaps_rollup", "Pss:"); err == nil {
					pss += kb
				}
			}
			peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
		}
		select {
		case <-ctx.Done():
			return peak
		case <-tick.C:
		}
	}
}
