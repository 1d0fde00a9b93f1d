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
// team run by the real batty binary (its codex the fake), in the same run:
// once with telemetry off and once with metrics and traces on — /metrics
// scraped every second, spans exported over OTLP HTTP to a collector on
// this machine that takes every export (a stand-in that answers at once);
// off first in one run, on first in the next.
// For each it reports the daemon's CPU over a 20-second window while the
// team is idle, as a percentage of one core (off-cpu-%, on-cpu-%; the
// difference cpu-extra-%), and the dispatch latency of 20 messages to one
// agent sent one after another — from the time in the message's id (its
// creation by `batty send`) to its delivered event — their median
// (off-dispatch-p50-ms, on-dispatch-p50-ms; on ÷ off as
// dispatch-ratio-%). With telemetry on the collector must have received
// spans, and /metrics every scrape. Run with -benchtime 1x.
func BenchmarkTelemetry100(b *testing.B) {
	const agents, messages = 100, 20
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
		figures := map[string]float64{}
		// Off first in one run, on first in the next: neither gets the
		// machine's quieter half every time.
		order := []bool{false, true}
		if telemetryRuns.Add(1)%2 == 0 {
			order = []bool{true, false}
		}
		exports.Store(0)
		for _, on := range order {
			mode := "off"
			yaml := fakeTeamYAML("telemetry", self, b.TempDir(), agents)
			metrics := ""
			if on {
				mode = "on"
				metrics = "127.0.0.1:" + strconv.Itoa(telemetrytest.FreePort(b))
				yaml += fmt.Sprintf("telemetry:\n  metrics: %q\n  otlp: {endpoint: %q}\n", metrics, collector.URL)
			}
			before := exports.Load()
			p := newBenchProject(b, yaml)
			p.batty("start", "--no-tmux")
			_, pids := p.idleTeam(agents)

			var scrapes atomic.Int64
			stopScrape := make(chan struct{})
			var wg sync.WaitGroup
			if on {
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
			}
			t0, c0 := time.Now(), cpuTicks(b, pids[:1])
			time.Sleep(window) // the measurement window itself
			cpu := float64(cpuTicks(b, pids[:1])-c0) / procstat.ClockTicks / time.Since(t0).Seconds() * 100

			var ids []string
			for k := 1; k <= messages; k++ {
				out := p.batty("send", "eng-1", fmt.Sprintf("message %d", k))
				id := messageID.FindString(out)
				if id == "" {
					b.Fatalf("no message id in %q", out)
				}
				ids = append(ids, id)
				p.waitStatus("the turn", time.Minute, func(st control.Status) bool {
					for _, a := range st.Agents {
						if a.Name == "eng-1" {
							return a.TurnsCompleted >= k && a.State == "idle"
						}
					}
					return false
				})
			}
			close(stopScrape)
			wg.Wait()
			lat := dispatchLatencies(b, p.dir, ids)
			p.stop(pids)
			if on && (exports.Load() == before || scrapes.Load() < int64(window/time.Second)/2) {
				b.Fatalf("telemetry on: %d exports, %d scrapes", exports.Load(), scrapes.Load())
			}
			if !on && exports.Load() != before {
				b.Fatalf("telemetry off exported %d times", exports.Load()-before)
			}
			figures[mode+"-cpu-%"] = cpu
			figures[mode+"-dispatch-p50-ms"] = medianOf(lat)
		}
		for k, v := range figures {
			b.ReportMetric(v, k)
		}
		b.ReportMetric(figures["on-cpu-%"]-figures["off-cpu-%"], "cpu-extra-%")
		b.ReportMetric(figures["on-dispatch-p50-ms"]/figures["off-dispatch-p50-ms"]*100, "dispatch-ratio-%")
	}
}

// telemetryRuns counts BenchmarkTelemetry100's runs in this process (-count).
var telemetryRuns atomic.Int64

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
