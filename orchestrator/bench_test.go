package orchestrator

import (
	"bufio"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSendToWorkerStart measures the latency from a message being in
// the inbox (what `batty send` does before it returns) to the worker process
// starting for it: fsnotify wake-up, claim (fsync), frame to the shim, codex
// spawn. Messages go one at a time; p50 and p99 are reported. Run with
// -benchtime=200x or more.
func BenchmarkSendToWorkerStart(b *testing.B) {
	p := newProject(b, "  - name: solo\n")
	r := p.start(nil)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sent := time.Now()
		id := p.send("solo", "human", "ping "+strconv.Itoa(i))
		r.finished(b, id)
		start, ok := workerStart(p.fakeLog, id)
		if !ok {
			b.Fatalf("no worker start logged for %s", id)
		}
		lat = append(lat, start.Sub(sent))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// workerStart finds when the fake worker started for message id.
func workerStart(logPath, id string) (time.Time, bool) {
	f, err := os.Open(logPath)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	needle := "batty message " + id + " "
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, needle) {
			continue
		}
		ns, err := strconv.ParseInt(strings.Fields(line)[0], 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		return time.Unix(0, ns), true
	}
	return time.Time{}, false
}
