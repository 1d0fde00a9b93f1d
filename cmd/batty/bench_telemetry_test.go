package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/procstat"
	"github.com/battyhq/batty/project/projecttest"
	"github.com/battyhq/batty/telemetry/telemetrytest"
)

// BenchmarkTelemetry100 measures what telemetry costs an idle 100-agent
// team run by the real batty binary (its codex the fake): two such teams
// run side by side, one with telemetry off and one with metrics and traces
// on — /metrics scraped every second, spans exported over OTLP HTTP to a
// collector on this machine that takes every export (a stand-in that
// answers at once) — so that both see the same load of the machine. It
// reports each daemon's CPU over the same 20-second window while both
// teams are idle, as a percentage of one core (off-cpu-%, on-cpu-%; the
// difference cpu-extra-%), and the dispatch latency of 30 messages to one
// agent of each team, sent in pairs one after another (off first in one
// pair, on first in the next) — from the time in the message's id (its
// creation by `batty send`) to its delivered event — their medians
// (off-dispatch-p50-ms, on-dispatch-p50-ms; on ÷ off as
// dispatch-ratio-%). The collector must have received spans and
// /metrics most scrapes. Run with -benchtime 1x.
func BenchmarkTelemetry100(b *testing.B) {
	const agents, messages = 100, 30
	const window = 20 * time.Second
	self := projecttest.Executable(b) // outside /tmp, where the agents may write
	var exports atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" {
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	for range b.N {
		exports.Store(0)
		metrics := "127.0.0.1:" + strconv.Itoa(telemetrytest.FreePort(b))
		off := newBenchProject(b, fakeTeamYAML("telemetry-off", self, b.TempDir(), agents))
		on := newBenchProject(b, fakeTeamYAML("telemetry-on", self, b.TempDir(), agents)+
			fmt.Sprintf("telemetry:\n  metrics: %q\n  otlp: {endpoint: %q}\n", metrics, collector.URL))
		off.batty("start", "--no-tmux")
		on.batty("start", "--no-tmux")
		_, offPIDs := off.idleTeam(agents)
		_, onPIDs := on.idleTeam(agents)

		var scrapes atomic.Int64
		stopScrape := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stopScrape:
					return
				case <-tick.C:
				}
				resp, err := http.Get("http://" + metrics + "/metrics")
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					scrapes.Add(1)
				}
			}
		}()
		daemons := []int{offPIDs[0], onPIDs[0]}
		t0 := time.Now()
		c0 := []int64{cpuTicks(b, daemons[:1]), cpuTicks(b, daemons[1:])}
		time.Sleep(window) // the measurement window itself
		elapsed := time.Since(t0).Seconds()
		offCPU := float64(cpuTicks(b, daemons[:1])-c0[0]) / procstat.ClockTicks / elapsed * 100
		onCPU := float64(cpuTicks(b, daemons[1:])-c0[1]) / procstat.ClockTicks / elapsed * 100

		var offIDs, onIDs []string
		for k := 1; k <= messages; k++ {
			pair := []*benchProject{off, on}
			if k%2 == 0 {
				pair = []*benchProject{on, off}
			}
			for _, p := range pair {
				id := sendAndWait(b, p, "eng-1", k)
				if p == off {
					offIDs = append(offIDs, id)
				} else {
					onIDs = append(onIDs, id)
				}
			}
		}
		close(stopScrape)
		wg.Wait()
		offLat := dispatchLatencies(b, off.dir, offIDs)
		onLat := dispatchLatencies(b, on.dir, onIDs)
		off.stop(offPIDs)
		on.stop(onPIDs)
		if exports.Load() == 0 || scrapes.Load() < int64(window/time.Second)/2 {
			b.Fatalf("telemetry on: %d exports, %d scrapes", exports.Load(), scrapes.Load())
		}
		b.ReportMetric(offCPU, "off-cpu-%")
		b.ReportMetric(onCPU, "on-cpu-%")
		b.ReportMetric(onCPU-offCPU, "cpu-extra-%")
		b.ReportMetric(medianOf(offLat), "off-dispatch-p50-ms")
		b.ReportMetric(medianOf(onLat), "on-dispatch-p50-ms")
		b.ReportMetric(medianOf(onLat)/medianOf(offLat)*100, "dispatch-ratio-%")
	}
}

// sendAndWait sends the k-th message to agent of p's team and waits until
// the agent has completed k turns and is idle; it returns the message's
// id.
func sendAndWait(b *testing.B, p *benchProject, agent string, k int) string {
	b.Helper()
	out := p.batty("send", agent, fmt.Sprintf("message %d", k))
	id := messageID.FindString(out)
	if id == "" {
		b.Fatalf("no message id in %q", out)
	}
	p.waitStatus("the turn", time.Minute, func(st control.Status) bool {
		for _, a := range st.Agents {
			if a.Name == agent {
				return a.TurnsCompleted >= k && a.State == "idle"
			}
		}
		return false
	})
	return id
}

// dispatchLatencies returns, for each message of ids, the time from its
// creation (the time in its id) to its first delivered event, in
// milliseconds.
func dispatchLatencies(b *testing.B, dir string, ids []string) []float64 {
	b.Helper()
	f, err := os.Open(filepath.Join(layoutOf(b, dir).Dir, "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	delivered := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		e, err := eventlog.Decode(sc.Bytes())
		if err == nil && e.Type == eventlog.EvDelivered {
			if _, seen := delivered[e.Message]; !seen {
				delivered[e.Message] = e.Time
			}
		}
	}
	var out []float64
	for _, id := range ids {
		sent, ok := inbox.GeneratedIDTime(id)
		at, seen := delivered[id]
		if !ok || !seen {
			b.Fatalf("message %s: no creation time or no delivery", id)
		}
		out = append(out, float64(at.Sub(sent).Microseconds())/1000)
	}
	return out
}
