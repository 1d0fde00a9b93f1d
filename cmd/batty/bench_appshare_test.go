package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/procstat"
)

// The team sizes of BenchmarkAppServerCrew: 100 agents on one shared
// process against 40 with a process each — each Codex app-server holds
// two inotify instances, and 100 of them use up the user's
// fs.inotify.max_user_instances (128 by default): nothing else of the
// user's, batty's own watchers included, gets one then — and 20 of them
// answering at once.
const (
	crewShared   = 100
	crewPerAgent = 40
	crewBurst    = 20
)

// BenchmarkAppServerCrew measures a crew of app-server agents with the
// real Codex CLI (the pinned install; skipped without it) against the
// mock Responses server, run by the real batty binary, two ways in one
// run: per-account (crewShared agents on the daemon's one shared
// app-server) and per-agent (crewPerAgent agents, a process each). Each
// team is started, every agent answers one message (its thread and, per
// agent, its app-server exist), then the team is left idle for 10 s and
// the resident memory of the daemon and every process under it — shims,
// app-servers — is summed from /proc at the end (total-rss-MB, and
// rss-per-agent-MB; total-pss-MB divides shared pages among the processes
// that map them), with their CPU in the window (idle-cpu-%). Then dispatch
// is paused, one message written for each of crewBurst agents, and the
// time from `batty resume` to the last of their outcomes is burst-wall-s:
// crewBurst agents answering at once on one shared process against
// crewBurst processes. Run with -benchtime 1x.
func BenchmarkAppServerCrew(b *testing.B) {
	launcher := codextest.Codex(b)
	srv := codextest.NewServer(b)
	for _, c := range []struct {
		name   string
		mode   string
		agents int
	}{
		{"per-account", "per-account", crewShared},
		{"per-agent", "per-agent", crewPerAgent},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				crewRun(b, launcher, srv.WriteHome(b), c.mode, c.agents)
			}
		})
	}
}

// crewRun is one run of BenchmarkAppServerCrew with mode (app_server) and
// agents agents.
func crewRun(b *testing.B, launcher, home, mode string, agents int) {
	p := newBenchProject(b, fmt.Sprintf(`name: crew
codex:
  bin: %s
  codex_home: %s
  sandbox: %s
  runtime: app-server
  app_server: %s
timeouts:
  shutdown: 10s
roles:
  - name: eng
    instances: %d
`, launcher, home, benchExec.Sandbox, mode, agents))
	p.batty("start", "--no-tmux")
	p.waitStatus("idle agents", 5*time.Minute, func(st control.Status) bool { return countAgents(st, "idle", 0) == agents })
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("eng-%d", i+1)
	}
	// One message each, all at once: every thread (and process) made.
	p.batty("pause")
	for _, n := range names {
		p.batty("send", n, "warm-up")
	}
	p.batty("resume")
	st := p.waitStatus("a turn of every agent", 10*time.Minute, func(st control.Status) bool { return countAgents(st, "idle", 1) == agents })
	pids := descendants(b, st.Daemon.PID)

	const window = 10 * time.Second
	t0, c0 := time.Now(), cpuTicks(b, pids)
	time.Sleep(window) // the measurement window itself
	ticks := cpuTicks(b, pids) - c0
	elapsed := time.Since(t0)
	var rss, pss int64
	servers := 0
	for _, pid := range pids {
		rss += procKB(b, pid, "status", "VmRSS:")
		pss += procKB(b, pid, "smaps_rollup", "Pss:")
		if strings.Contains(codextest.Cmdline(pid), "app-server") && !strings.Contains(codextest.Cmdline(pid), "shim") {
			servers++
		}
	}
	want := agents
	if mode == "per-account" {
		want = 1
	}
	if servers != want {
		b.Fatalf("%d app-server processes under the daemon, want %d", servers, want)
	}

	// crewBurst agents answering at once.
	burst := names[:crewBurst]
	w, err := fsnotify.NewWatcher()
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	dir := layoutOf(b, p.dir).Dir
	for _, n := range burst {
		if err := w.Add(filepath.Join(dir, "inboxes", n, "done")); err != nil {
			b.Fatal(err)
		}
	}
	p.batty("pause")
	var outcomes []string
	for _, n := range burst {
		f := strings.Fields(p.batty("send", n, "burst")) // queued <id> for <agent>
		if len(f) < 2 {
			b.Fatalf("batty send printed %q", f)
		}
		outcomes = append(outcomes, filepath.Join(dir, "inboxes", n, "done", f[1]+".json"))
	}
	t1 := time.Now()
	p.batty("resume")
	for _, o := range outcomes {
		waitOutcome(b, w, o)
	}
	wall := time.Since(t1)

	p.stop(pids[:1])
	b.ReportMetric(float64(agents), "agents")
	b.ReportMetric(float64(rss)/1024, "total-rss-MB")
	b.ReportMetric(float64(rss)/1024/float64(agents), "rss-per-agent-MB")
	b.ReportMetric(float64(pss)/1024, "total-pss-MB")
	b.ReportMetric(float64(ticks)/procstat.ClockTicks/elapsed.Seconds()*100, "idle-cpu-%")
	b.ReportMetric(wall.Seconds(), "burst-wall-s")
}

// countAgents counts the agents of st in state with at least turns
// completed turns.
func countAgents(st control.Status, state string, turns int) int {
	n := 0
	for _, a := range st.Agents {
		if a.State == state && a.TurnsCompleted >= turns && a.ShimPID > 0 {
			n++
		}
	}
	return n
}
