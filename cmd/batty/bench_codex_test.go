package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/procstat"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
)

// benchExec is the codex exec settings of the benchmark's team (see
// BenchmarkCodexMessage); ExecArgs of them is the argv batty runs.
var benchExec = codex.ExecOptions{Sandbox: codex.SandboxDangerFullAccess, SkipGitRepoCheck: true}

// BenchmarkCodexMessage measures one message with the real Codex CLI (the
// pinned install; skipped without it) against the mock Responses server,
// one message after another on one thread, three ways:
//
//   - npm-launcher: `codex exec --json` through the npm launcher (node,
//     which starts the native binary);
//   - native: the native binary behind it (codex.ResolveBinary), bare;
//   - batty-exec: through a running team of one agent (the real batty
//     binary) with `runtime: exec`, from `batty send` to the outcome
//     recorded in the agent's done/;
//   - batty-app-server: the same through a second team of one agent with
//     `runtime: app-server` (one long-lived `codex app-server` per shim).
//     After its messages the agent is left idle for 10 s and the benchmark
//     reports the resident memory of its shim and every process under it
//     (the app-server) at the end (idle-rss-MB) and the CPU they used in
//     the window as a percentage of one core (idle-cpu-%).
//   - batty-app-server-shared: the same with `app_server: per-account`
//     (the agent's turns on the daemon's shared app-server, reached
//     through its broker); its idle figures count the shim and the shared
//     process with what runs under each.
//
// Each reports the median (p50-ms) and 90th percentile (p90-ms) of its
// messages; the two batty rows send one untimed message first, so the
// thread (and the app-server) exist before timing starts. Run with
// -benchtime 20x.
func BenchmarkCodexMessage(b *testing.B) {
	launcher := codextest.Codex(b)
	native, err := codex.ResolveBinary(launcher)
	if err != nil {
		b.Fatalf("resolve the native codex behind %s: %v", launcher, err)
	}
	if native.Launcher == "" {
		b.Fatalf("%s is not the npm launcher: nothing to compare (unset BATTY_CODEX_BIN)", launcher)
	}
	srv := codextest.NewServer(b)
	home := srv.WriteHome(b)

	p, st := startSoloTeam(b, launcher, home, "exec")
	defer p.stop([]int{st.Daemon.PID, st.Agents[0].ShimPID})
	pa, sta := startSoloTeam(b, launcher, srv.WriteHome(b), "app-server")
	defer pa.stop([]int{sta.Daemon.PID, sta.Agents[0].ShimPID})
	ps, sts := startSoloTeam(b, launcher, srv.WriteHome(b), "app-server\n  app_server: per-account")
	defer ps.stop([]int{sts.Daemon.PID, sts.Agents[0].ShimPID})

	var launcherThread, nativeThread string
	work := b.TempDir()
	b.Run("npm-launcher", func(b *testing.B) {
		reportLatencies(b, func(i int) { bareMessage(b, launcher, nil, home, work, &launcherThread, i) })
	})
	b.Run("native", func(b *testing.B) {
		reportLatencies(b, func(i int) { bareMessage(b, native.Path, native.Env, home, work, &nativeThread, i) })
	})
	b.Run("batty-exec", func(b *testing.B) {
		warm := battyMessages(b, p)
		warm(-1)
		reportLatencies(b, warm)
	})
	b.Run("batty-app-server", func(b *testing.B) {
		send := battyMessages(b, pa)
		send(-1)
		reportLatencies(b, send)
		if b.N == 1 {
			return // the probe run before the timed one: no idle window
		}
		b.StopTimer() // ns/op stays the messages' time, not the idle window's
		shim := sta.Agents[0].ShimPID
		pids := descendants(b, shim)
		if len(pids) < 2 {
			b.Fatalf("shim %d has no app-server under it", shim)
		}
		reportIdle(b, pa, shim, pids)
	})
	b.Run("batty-app-server-shared", func(b *testing.B) {
		send := battyMessages(b, ps)
		send(-1)
		reportLatencies(b, send)
		if b.N == 1 {
			return
		}
		b.StopTimer()
		shim := sts.Agents[0].ShimPID
		server := 0
		for _, pid := range descendants(b, sts.Daemon.PID) {
			if strings.Contains(codextest.Cmdline(pid), "app-server") && pid != shim {
				server = pid
				break
			}
		}
		if server == 0 {
			b.Fatalf("daemon %d runs no shared app-server", sts.Daemon.PID)
		}
		reportIdle(b, ps, shim, append(descendants(b, shim), descendants(b, server)...))
	})
}

// reportIdle leaves p's agent solo (its shim shim) idle for 10 s and
// reports the resident memory of pids at the end (idle-rss-MB) and the
// CPU they used in the window as a percentage of one core (idle-cpu-%).
func reportIdle(b *testing.B, p *benchProject, shim int, pids []int) {
	const window = 10 * time.Second
	t0, c0 := time.Now(), cpuTicks(b, pids)
	time.Sleep(window) // the measurement window itself
	ticks := cpuTicks(b, pids) - c0
	elapsed := time.Since(t0)
	var rss int64
	for _, pid := range pids {
		rss += procKB(b, pid, "status", "VmRSS:")
	}
	if after := p.waitStatus("solo still idle", time.Minute, func(control.Status) bool { return true }); after.Agents[0].State != "idle" || after.Agents[0].ShimPID != shim {
		b.Fatalf("agent changed during the idle window: %s, shim %d", after.Agents[0].State, after.Agents[0].ShimPID)
	}
	b.ReportMetric(float64(rss)/1024, "idle-rss-MB")
	b.ReportMetric(float64(ticks)/procstat.ClockTicks/elapsed.Seconds()*100, "idle-cpu-%")
}

// startSoloTeam starts a team of one agent, solo, on the Codex CLI
// launcher with CODEX_HOME home and the given runtime, and waits until the
// agent is idle. The team is stopped by the caller (p.stop) or, if the
// benchmark fails first, by newBenchProject's cleanup.
func startSoloTeam(b *testing.B, launcher, home, runtime string) (*benchProject, control.Status) {
	b.Helper()
	p := newBenchProject(b, fmt.Sprintf(`name: msg
codex:
  bin: %s
  codex_home: %s
  sandbox: %s
  runtime: %s
timeouts:
  shutdown: 5s
roles:
  - name: solo
`, launcher, home, benchExec.Sandbox, runtime))
	p.batty("start", "--no-tmux")
	st := p.waitStatus("solo idle", 2*time.Minute, func(st control.Status) bool {
		return len(st.Agents) == 1 && st.Agents[0].State == "idle"
	})
	return p, st
}

// battyMessages watches the done/ directory of p's agent solo (the
// watcher closed when b ends) and returns a function that sends message i
// with `batty send` and waits for its completed outcome.
func battyMessages(b *testing.B, p *benchProject) func(i int) {
	done := filepath.Join(layoutOf(b, p.dir).Dir, "inboxes", "solo", "done")
	w, err := fsnotify.NewWatcher()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := w.Close(); err != nil {
			b.Errorf("close the watcher of %s: %v", done, err)
		}
	})
	if err := w.Add(done); err != nil {
		b.Fatalf("watch %s: %v", done, err)
	}
	return func(i int) {
		out := p.batty("send", "solo", fmt.Sprintf("benchmark message %d", i))
		f := strings.Fields(out) // queued <id> for solo
		if len(f) < 2 {
			b.Fatalf("batty send printed %q", out)
		}
		waitOutcome(b, w, filepath.Join(done, f[1]+".json"))
	}
}

// descendants returns pid and every process under it, from the parent
// fields of /proc/*/stat.
func descendants(b *testing.B, pid int) []int {
	b.Helper()
	ps, err := procstat.List()
	if err != nil {
		b.Fatal(err)
	}
	children := map[int][]int{}
	for _, p := range ps {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// reportLatencies runs message b.N times and reports the median and the
// 90th percentile of their durations.
func reportLatencies(b *testing.B, message func(i int)) {
	lat := make([]time.Duration, 0, b.N)
	for i := range b.N {
		t0 := time.Now()
		message(i)
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	ms := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1)+0.5)].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.9), "p90-ms")
}

// bareMessage runs one `codex exec --json` of bin (with the extra
// environment env) on *thread, starting it when empty, the way a shim
// does (the argv of benchExec, the prompt on stdin, its own process
// group), and reads its events to the end; the turn must complete.
func bareMessage(b *testing.B, bin string, env []string, home, dir string, thread *string, i int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, codex.ExecArgs(benchExec, *thread)...)
	cmd.Dir = dir
	cmd.Env = append(codex.Binary{Env: env}.Environ(os.Environ()), "CODEX_HOME="+home, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	cmd.Stdin = strings.NewReader(shim.FormatPrompt(protocol.SendMessage{ID: fmt.Sprint(i), From: "human", Body: fmt.Sprintf("benchmark message %d", i)}))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", bin, err, stderr.Bytes())
	}
	completed := false
	rd := codex.NewReader(&stdout, 0)
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		switch ev.Type {
		case codex.TypeThreadStarted:
			*thread = ev.ThreadID
		case codex.TypeTurnCompleted:
			completed = true
		}
	}
	if !completed || *thread == "" {
		b.Fatalf("%s: no completed turn (thread %q)\n%s\n%s", bin, *thread, stdout.Bytes(), stderr.Bytes())
	}
}

// waitOutcome waits, on the watcher of its directory, until the outcome
// file path exists (at most a minute) and checks that it is completed.
func waitOutcome(b *testing.B, w *fsnotify.Watcher, path string) {
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			m, err := inbox.Decode(data)
			if err != nil || m.Outcome == nil || m.Outcome.Status != inbox.StatusCompleted {
				b.Fatalf("outcome %s: %v %+v", path, err, m.Outcome)
			}
			return
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			b.Fatalf("watch outcomes: %v", err)
		case <-deadline.C:
			b.Fatalf("no outcome %s within a minute", path)
		}
	}
}
