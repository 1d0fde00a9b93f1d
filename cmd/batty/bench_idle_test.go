package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/procstat"
	"github.com/battyhq/batty/project/projecttest"
)

// benchProject drives the real batty binary in a project directory for a
// benchmark, every process it starts carrying BATTY_TEST_MARK=mark.
type benchProject struct {
	b       *testing.B
	bin     string
	dir     string
	mark    string
	stopped bool
}

// newBenchProject writes teamYAML into a new project directory. A team
// still running when the benchmark ends (it failed before stop) is
// stopped then, and nothing of it may be left.
func newBenchProject(b *testing.B, teamYAML string) *benchProject {
	b.Helper()
	p := &benchProject{b: b, bin: buildBatty(b), dir: b.TempDir(), mark: fmt.Sprintf("bench-%d", time.Now().UnixNano())}
	if err := os.WriteFile(filepath.Join(p.dir, "team.yaml"), []byte(teamYAML), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if p.stopped {
			return
		}
		cmd := exec.Command(p.bin, "stop", "--timeout", "5s")
		cmd.Dir = p.dir
		cmd.Env = append(os.Environ(), "BATTY_TEST_MARK="+p.mark)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Logf("batty stop: %v\n%s", err, out)
		}
		codextest.AssertNoMarked(b, p.mark)
	})
	return p
}

// batty runs the binary with args and returns stdout; a non-zero exit
// fails the benchmark.
func (p *benchProject) batty(args ...string) string {
	p.b.Helper()
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "BATTY_TEST_MARK="+p.mark, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	out, errOut, code := runCmd(p.b, cmd)
	if code != 0 {
		p.b.Fatalf("batty %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// waitStatus reads `batty status --json` again (the daemon is another
// process) until ok holds, up to limit.
func (p *benchProject) waitStatus(what string, limit time.Duration, ok func(control.Status) bool) control.Status {
	p.b.Helper()
	deadline := time.Now().Add(limit)
	for {
		var st control.Status
		if err := json.Unmarshal([]byte(p.batty("status", "--json")), &st); err != nil {
			p.b.Fatalf("status --json: %v", err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(layoutOf(p.b, p.dir).Dir, "daemon.log"))
			p.b.Fatalf("no %s within %s\ndaemon log:\n%s", what, limit, log)
		}
		time.Sleep(200 * time.Millisecond) // another process owns the state
	}
}

// idleTeam waits until the team's agents, all of them, are idle with a
// shim, and returns the status then and the pids of the daemon and the
// shims.
func (p *benchProject) idleTeam(agents int) (control.Status, []int) {
	p.b.Helper()
	st := p.waitStatus("idle agents", 5*time.Minute, func(st control.Status) bool {
		idle := 0
		for _, a := range st.Agents {
			if a.State == "idle" && a.ShimPID > 0 {
				idle++
			}
		}
		return idle == agents
	})
	pids := []int{st.Daemon.PID}
	for _, a := range st.Agents {
		pids = append(pids, a.ShimPID)
	}
	return st, pids
}

// stop runs `batty stop` and checks that the given processes and every
// process carrying the mark are gone.
func (p *benchProject) stop(pids []int) {
	p.b.Helper()
	p.batty("stop", "--timeout", "5s")
	p.stopped = true
	for _, pid := range pids {
		if !codextest.WaitExit(pid, codextest.ExitGrace) {
			p.b.Errorf("process %d (%s) still runs after batty stop", pid, codextest.Cmdline(pid))
		}
	}
	codextest.AssertNoMarked(p.b, p.mark)
}

// BenchmarkIdleTeam100 measures an idle 100-agent team run by the real
// batty binary (built by the benchmark): its codex is this test binary as
// the fake codex, which passes the preflight checks. Once `batty status`
// shows every agent idle it samples /proc of the daemon and of every shim
// over a 15-second window and reports the CPU they used as a percentage of
// one core (cpu-%), the daemon's resident memory (daemon-rss-MB), the
// median of the shims' (shim-rss-MB), the total (total-rss-MB) and the
// total proportional set size (total-pss-MB: shared pages, such as the
// binary's code, divided among the processes that map them). Then
// `batty stop` must leave no process behind. Run with -benchtime 1x.
func BenchmarkIdleTeam100(b *testing.B) {
	const agents = 100
	const window = 15 * time.Second
	self := projecttest.Executable(b) // outside /tmp, where the agents may write
	for range b.N {
		home := b.TempDir()
		if err := os.WriteFile(filepath.Join(home, "auth.json"), []byte("{}"), 0o600); err != nil {
			b.Fatal(err)
		}
		p := newBenchProject(b, fmt.Sprintf(`name: idle
codex:
  bin: %s
  codex_home: %s
  env:
    BATTY_TEST_ROLE: fakecodex
    FAKE_CODEX_STATE: %s
timeouts:
  shutdown: 5s
roles:
  - name: eng
    instances: %d
`, self, home, b.TempDir(), agents))
		p.batty("start", "--no-tmux")
		_, pids := p.idleTeam(agents)

		t0, c0 := time.Now(), cpuTicks(b, pids)
		time.Sleep(window) // the measurement window itself
		ticks := cpuTicks(b, pids) - c0
		elapsed := time.Since(t0)
		daemonRSS := procKB(b, pids[0], "status", "VmRSS:")
		var shimRSS []float64
		total := daemonRSS
		for _, pid := range pids[1:] {
			kb := procKB(b, pid, "status", "VmRSS:")
			shimRSS = append(shimRSS, float64(kb))
			total += kb
		}
		var pss int64
		for _, pid := range pids {
			pss += procKB(b, pid, "smaps_rollup", "Pss:")
		}
		after := p.waitStatus("the same shims", time.Minute, func(control.Status) bool { return true })
		for _, a := range after.Agents {
			if a.State != "idle" || !slices.Contains(pids[1:], a.ShimPID) {
				b.Fatalf("agent %s changed during the window: %s, shim %d", a.Name, a.State, a.ShimPID)
			}
		}
		p.stop(pids)

		b.ReportMetric(float64(ticks)/procstat.ClockTicks/elapsed.Seconds()*100, "cpu-%")
		b.ReportMetric(float64(daemonRSS)/1024, "daemon-rss-MB")
		b.ReportMetric(medianOf(shimRSS)/1024, "shim-rss-MB")
		b.ReportMetric(float64(total)/1024, "total-rss-MB")
		b.ReportMetric(float64(pss)/1024, "total-pss-MB")
		b.ReportMetric(elapsed.Seconds(), "window-s")
	}
}

// cpuTicks sums the user and system clock ticks of pids; a process that
// is gone fails the benchmark.
func cpuTicks(b *testing.B, pids []int) int64 {
	b.Helper()
	var total int64
	for _, pid := range pids {
		n, err := procstat.CPUTicks(pid)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total
}

// procKB reads the kB figure of the line starting with field in
// /proc/<pid>/<file> (procstat.KB); a process that is gone fails the
// benchmark.
func procKB(b *testing.B, pid int, file, field string) int64 {
	b.Helper()
	n, err := procstat.KB(pid, file, field)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// medianOf returns the median of xs (0 for none).
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
