package orchestrator

import (
	"bufio"
	"fmt"
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

// BenchmarkIdleTeam100 starts a 100-agent team (fake worker) and measures,
// once every shim is idle, the CPU the daemon and its shims use over a
// 15-second idle window and their resident memory. There is no polling loop
// to pay for: idle costs only the 30-second health pings.
func BenchmarkIdleTeam100(b *testing.B) {
	const agents = 100
	const window = 15 * time.Second
	for i := 0; i < b.N; i++ {
		p := newProject(b, fmt.Sprintf("  - name: eng\n    instances: %d\n", agents))
		r := p.start(nil)
		for _, a := range r.d.agents {
			name := a.def.Name
			r.waitEvent(b, "idle "+name, func(e Event) bool {
				return e.Type == EvStateChanged && e.Agent == name && strings.HasPrefix(e.Detail, "starting→idle")
			})
		}
		pids := []int{os.Getpid()}
		for _, a := range r.d.agents {
			pids = append(pids, a.snapshot().shimPID)
		}
		t0, c0 := time.Now(), cpuTicks(pids)
		time.Sleep(window) // the measurement window itself
		ticks := cpuTicks(pids) - c0
		elapsed := time.Since(t0)
		const clkTck = 100 // USER_HZ on Linux
		cpuPct := float64(ticks) / clkTck / elapsed.Seconds() * 100
		daemonRSS := rssKB(os.Getpid())
		var shimRSS int64
		for _, pid := range pids[1:] {
			shimRSS += rssKB(pid)
		}
		b.ReportMetric(cpuPct, "idle-cpu-%")
		b.ReportMetric(float64(daemonRSS)/1024, "daemon-rss-MB")
		b.ReportMetric(float64(shimRSS)/1024/agents, "shim-rss-MB/agent")
		b.ReportMetric(float64(daemonRSS+shimRSS)/1024, "total-rss-MB")
		r.stop(b)
	}
}

// cpuTicks sums user+system clock ticks of pids from /proc/<pid>/stat.
func cpuTicks(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		// fields after ")": state(0) ... utime(11) stime(12)
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += u + st
	}
	return total
}

// rssKB reads VmRSS of pid in KiB.
func rssKB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	return 0
}
