package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// BenchmarkConcurrentTurns measures the cap on turns at once: 40 agents
// with 5 messages each, on a fake worker that works 200 ms and records
// how many workers run when it starts, under limits.concurrent_turns: 4.
// The messages are written while dispatch is paused, then dispatch
// resumes. It reports the most workers seen at once, the throughput (the
// turns over the time from the first worker's start to the last one's
// end) and its share of the ideal 4 / 0.2 s = 20 turns/s, and fairness:
// the most by which one agent's deliveries ran ahead of another's at any
// moment, and how many rounds (of 40 deliveries) apart the agents' last
// deliveries were. Run with -benchtime 1x.
func BenchmarkConcurrentTurns(b *testing.B) {
	const agents, each, limit, work = 40, 5, 4, 200 * time.Millisecond
	var most, rate, lead, spread float64
	for range b.N {
		b.StopTimer()
		p := newProjectWith(b, fmt.Sprintf("timeouts:\n  shutdown: 5s\nlimits:\n  concurrent_turns: %d\n", limit),
			fmt.Sprintf("  - name: w\n    instances: %d\n", agents))
		runDir := filepath.Join(b.TempDir(), "run")
		if err := os.Mkdir(runDir, 0o700); err != nil {
			b.Fatal(err)
		}
		r := p.start(nil)
		waitFor(b, "every agent idle", func() bool {
			for _, a := range r.d.status().Agents {
				if a.State != "idle" {
					return false
				}
			}
			return true
		})
		if _, err := control.Call(p.layout, control.Request{Op: control.OpPause, Reason: "loading"}, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		var ids []string
		for k := range each {
			for i := 1; i <= agents; i++ {
				ids = append(ids, p.send(fmt.Sprintf("w-%d", i), "human", fmt.Sprintf("turn %d scenario:running:%s=%d", k, runDir, work.Milliseconds())))
			}
		}
		b.StartTimer()
		if _, err := control.Call(p.layout, control.Request{Op: control.OpResume}, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			if st := r.finished(b, id); st != "completed" {
				b.Fatalf("message %s: %s", id, st)
			}
		}
		b.StopTimer()
		runs, err := codextest.RunningCounts(runDir)
		if err != nil {
			b.Fatal(err)
		}
		if len(runs) != agents*each {
			b.Fatalf("%d runs, want %d", len(runs), agents*each)
		}
		first, last, m := runs[0].Start, runs[0].End, 0
		for _, run := range runs {
			m = max(m, run.Running)
			if run.Start.Before(first) {
				first = run.Start
			}
			if run.End.After(last) {
				last = run.End
			}
		}
		most = max(most, float64(m))
		rate += float64(len(runs)) / last.Sub(first).Seconds()
		l, s := deliveryFairness(r, agents)
		lead, spread = max(lead, float64(l)), max(spread, s)
		r.stop(b)
	}
	n := float64(b.N)
	ideal := float64(limit) / work.Seconds()
	b.ReportMetric(most, "most-running")
	b.ReportMetric(rate/n, "turns/s")
	b.ReportMetric(100*rate/n/ideal, "of-ideal-%")
	b.ReportMetric(lead, "max-lead")
	b.ReportMetric(spread, "last-spread-rounds")
}

// deliveryFairness reads the deliveries r saw: the most by which one
// agent's count ran ahead of another's at any delivery, and how many
// rounds (of agents deliveries) the agents' last deliveries spread over.
func deliveryFairness(r *running, agents int) (lead int, spread float64) {
	r.mu.Lock()
	seen := slices.Clone(r.seen)
	r.mu.Unlock()
	got, lastAt := map[string]int{}, map[string]int{}
	pos := 0
	for _, e := range seen {
		if e.Type != eventlog.EvDelivered {
			continue
		}
		got[e.Agent]++
		lastAt[e.Agent] = pos
		pos++
		lo, hi := -1, 0
		for i := 1; i <= agents; i++ {
			n := got[fmt.Sprintf("w-%d", i)]
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		lead = max(lead, hi-lo)
	}
	lo, hi := pos, 0
	for _, at := range lastAt {
		lo, hi = min(lo, at), max(hi, at)
	}
	return lead, float64(hi-lo+1) / float64(agents)
}
